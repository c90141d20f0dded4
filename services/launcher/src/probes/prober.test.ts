import { type VirtualMachineInstance, defaultVmiSpec } from "@kubevirt-ts/kubevirt-api";
import type { DomainStatus } from "@kubevirt-ts/launcher-protocol";
import { createLogger } from "@kubevirt-ts/runtime";
import { once } from "node:events";
import { type AddressInfo, createServer } from "node:net";
import { describe, expect, it } from "vitest";
import { Prober, checkInterval } from "./prober.ts";

const log = createLogger({ component: "test", level: "error" });

/**
 * A running guest whose exec probe (period 10 s) exits with the code the test sets; it counts the commands the guest
 * ran.
 */
function guestWithExecProbe() {
  const vmi: VirtualMachineInstance = {
    apiVersion: "kubevirt.io/v1",
    kind: "VirtualMachineInstance",
    metadata: { name: "vm", namespace: "ns" },
    spec: defaultVmiSpec({
      domain: { devices: {} },
      readinessProbe: { exec: { command: ["cat", "/tmp/ready"] }, periodSeconds: 10, timeoutSeconds: 5 },
      livenessProbe: { exec: { command: ["true"] }, periodSeconds: 10, timeoutSeconds: 5 },
    }),
  };
  const state = { now: 0, exitcode: 0, commands: [] as string[] };
  const prober = new Prober(
    {
      vmi: () => vmi,
      state: () => Promise.resolve({ state: "Running" } as DomainStatus),
      guestAddress: () => {
        throw new Error("no network in this test");
      },
      agent: (command, args) => {
        if (command === "guest-exec") {
          state.commands.push((args as { path: string }).path);
          return Promise.resolve({ pid: state.commands.length });
        }
        return Promise.resolve({ exited: true, exitcode: state.exitcode });
      },
    },
    log,
    { now: () => state.now },
  );
  return { state, prober };
}

describe("Prober", () => {
  it("runs the guest's command at most once per the probe's period, whoever asks", async () => {
    const { state, prober } = guestWithExecProbe();
    expect(await prober.check("readiness")).toBeUndefined();
    state.exitcode = 1;
    // A hundred asks within the period: the guest runs nothing more, and every ask gets the last answer.
    for (let i = 0; i < 100; i++) {
      state.now = i * 80;
      expect(await prober.check("readiness")).toBeUndefined();
    }
    expect(state.commands).toEqual(["cat"]);
    // The kubelet's next ask, a little early as its timer may be, is checked.
    state.now = 9_500;
    expect(checkInterval(10)).toBeLessThan(state.now);
    expect(await prober.check("readiness")).toBe('exec ["cat","/tmp/ready"]: exited 1');
    expect(state.commands).toEqual(["cat", "cat"]);
  });

  it("checks each kind on its own schedule", async () => {
    const { state, prober } = guestWithExecProbe();
    await prober.check("readiness");
    await prober.check("liveness");
    await prober.check("liveness");
    expect(state.commands).toEqual(["cat", "true"]);
  });

  it("counts a liveness failure once per check, however often it is asked for", async () => {
    const { state, prober } = guestWithExecProbe();
    state.exitcode = 1;
    for (let i = 0; i < 10; i++) await prober.check("liveness");
    // failureThreshold is 3: one check in the period is one failure, not ten.
    expect(prober.livenessFailure()).toBeUndefined();
    state.now = checkInterval(10);
    await prober.check("liveness");
    state.now = 2 * checkInterval(10);
    await prober.check("liveness");
    expect(prober.livenessFailure()).toBe('exec ["true"]: exited 1');
  });

  it("passes a TCP probe when the guest's port accepts, and says so when it refuses", async () => {
    const server = createServer((socket) => socket.end());
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    const { port } = server.address() as AddressInfo;
    const vmi: VirtualMachineInstance = {
      apiVersion: "kubevirt.io/v1",
      kind: "VirtualMachineInstance",
      metadata: { name: "vm", namespace: "ns" },
      spec: defaultVmiSpec({
        domain: { devices: {} },
        readinessProbe: { tcpSocket: { port }, periodSeconds: 10, timeoutSeconds: 2 },
      }),
    };
    const clock = { now: 0 };
    const prober = new Prober(
      {
        vmi: () => vmi,
        state: () => Promise.resolve({ state: "Running" } as DomainStatus),
        guestAddress: () => "127.0.0.1",
        agent: () => Promise.reject(new Error("no agent in this test")),
      },
      log,
      { now: () => clock.now },
    );
    try {
      expect(await prober.check("readiness")).toBeUndefined();
    } finally {
      server.close();
      await once(server, "close");
    }
    clock.now = checkInterval(10);
    expect(await prober.check("readiness")).toBe(`tcp port ${String(port)}: the guest refused the connection`);
  });
});
