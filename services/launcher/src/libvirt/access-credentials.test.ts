import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type VirtualMachineInstance, defaultVmiSpec } from "@kubevirt-ts/kubevirt-api";
import { createLogger } from "@kubevirt-ts/runtime";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { AgentCredentials } from "./access-credentials.ts";

// The guest agent stands in as a recorder of the commands it is sent (pure logic: what the launcher asks of it).
let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "credentials-"));
});
afterEach(() => rm(dir, { recursive: true, force: true }));

const vmi: VirtualMachineInstance = {
  apiVersion: "kubevirt.io/v1",
  kind: "VirtualMachineInstance",
  metadata: { name: "vm", namespace: "ns" },
  spec: defaultVmiSpec({
    domain: { devices: {} },
    accessCredentials: [
      {
        sshPublicKey: {
          source: { secret: { secretName: "keys" } },
          propagationMethod: { qemuGuestAgent: { users: ["tester"] } },
        },
      },
      { userPassword: { source: { secret: { secretName: "passwords" } }, propagationMethod: { qemuGuestAgent: {} } } },
    ],
  }),
};

async function secret(index: number, values: Record<string, string>) {
  const folder = join(dir, String(index));
  await rm(folder, { recursive: true, force: true });
  await mkdir(folder, { recursive: true });
  // The kubelet's own entry, which is no key of the Secret.
  await mkdir(join(folder, "..data"));
  for (const [key, value] of Object.entries(values)) await writeFile(join(folder, key), value);
}

function recordingAgent(answering = true) {
  const sent: [string, Record<string, unknown> | undefined][] = [];
  return {
    sent,
    agent: (command: string, args?: Record<string, unknown>) => {
      if (!answering) return Promise.reject(new Error("the guest agent is not connected"));
      if (command !== "guest-ping") sent.push([command, args]);
      return Promise.resolve({});
    },
  };
}

const log = createLogger({ component: "test", level: "error" });

describe("access credentials through the guest agent", () => {
  it("says nothing until the agent answers, then adds the keys to each user and sets the passwords", async () => {
    await secret(0, { a: "ssh-ed25519 AAAA first\n# a comment\n", b: "ssh-ed25519 BBBB second" });
    await secret(1, { tester: "s3cret\n" });
    const silent = new AgentCredentials({ dir, agent: recordingAgent(false).agent, log });
    await silent.sync(vmi);
    expect(silent.status()).toBeUndefined();

    const { sent, agent } = recordingAgent();
    const credentials = new AgentCredentials({ dir, agent, log });
    await credentials.sync(vmi);
    expect(sent).toEqual([
      [
        "guest-ssh-add-authorized-keys",
        { username: "tester", keys: ["ssh-ed25519 AAAA first", "ssh-ed25519 BBBB second"] },
      ],
      [
        "guest-set-user-password",
        { username: "tester", password: Buffer.from("s3cret").toString("base64"), crypted: false },
      ],
    ]);
    expect(credentials.status()).toEqual({ synchronized: true, message: "" });

    // Nothing changed: nothing is sent again.
    await credentials.sync(vmi);
    expect(sent).toHaveLength(2);
  });

  it("takes out a key gone from the Secret, and leaves the guest's own keys alone", async () => {
    await secret(0, { a: "ssh-ed25519 AAAA first\nssh-ed25519 BBBB second" });
    await secret(1, {});
    const { sent, agent } = recordingAgent();
    const credentials = new AgentCredentials({ dir, agent, log });
    await credentials.sync(vmi);
    await secret(0, { a: "ssh-ed25519 BBBB second" });
    await credentials.sync(vmi);
    expect(sent.slice(1)).toEqual([
      ["guest-ssh-remove-authorized-keys", { username: "tester", keys: ["ssh-ed25519 AAAA first"] }],
      ["guest-ssh-add-authorized-keys", { username: "tester", keys: ["ssh-ed25519 BBBB second"] }],
    ]);
  });

  it("reports the agent's refusal, and tries again on the next sync", async () => {
    await secret(0, { a: "ssh-ed25519 AAAA first" });
    await secret(1, {});
    let refuse = true;
    const sent: string[] = [];
    const credentials = new AgentCredentials({
      dir,
      agent: (command) => {
        if (command !== "guest-ping") sent.push(command);
        return refuse && command !== "guest-ping"
          ? Promise.reject(new Error("user 'tester' does not exist"))
          : Promise.resolve({});
      },
      log,
    });
    await credentials.sync(vmi);
    expect(credentials.status()).toEqual({
      synchronized: false,
      message: "the guest agent refused the access credentials: user 'tester' does not exist",
    });
    refuse = false;
    await credentials.sync(vmi);
    expect(credentials.status()).toEqual({ synchronized: true, message: "" });
    expect(sent).toEqual(["guest-ssh-add-authorized-keys", "guest-ssh-add-authorized-keys"]);
  });
});
