import { createHash } from "node:crypto";
import { join } from "node:path";
import type { VirtualMachineInstance } from "@kubevirt-ts/kubevirt-api";
import { accessCredentialMounts } from "@kubevirt-ts/node-contract";
import type { Logger } from "@kubevirt-ts/runtime";
import { keysIn, mountedSecret } from "../storage/cloud-init.ts";

// Access credentials through the QEMU guest agent, as KubeVirt's launcher
// gives them: the SSH public keys of a Secret into the authorized_keys of
// each user named (guest-ssh-add-authorized-keys; keys it added before that
// are no longer in the Secret are taken out again, keys the guest had of its
// own are left alone), and the passwords of a Secret (its keys are user
// names) set with guest-set-user-password. The kubelet keeps the mounted
// Secrets current, so the launcher looks again every few seconds and gives
// the guest what changed; the outcome is the VMI's AccessCredentialsSynchronized
// condition. Nothing is said until the guest's agent first answers.

type Agent = (command: string, args?: Record<string, unknown>) => Promise<unknown>;

/** The outcome of the last sync, for the VMI's AccessCredentialsSynchronized condition. */
export interface CredentialsStatus {
  synchronized: boolean;
  message: string;
}

interface Wanted {
  /** Per user, the keys the Secrets give. */
  keys: Map<string, string[]>;
  /** Per user, the password. */
  passwords: Map<string, string>;
}

/** What the VMI's Secrets give through the agent now, read from their mounts under `dir`. */
export async function wantedCredentials(vmi: VirtualMachineInstance, dir: string): Promise<Wanted> {
  const wanted: Wanted = { keys: new Map(), passwords: new Map() };
  for (const mount of accessCredentialMounts(vmi.spec).filter((m) => m.propagation === "qemuGuestAgent")) {
    const values = await mountedSecret(join(dir, mount.relativeDir), mount.secretName);
    if (mount.kind === "userPassword") {
      for (const [user, password] of values) wanted.passwords.set(user, password.replace(/\r?\n$/, ""));
      continue;
    }
    const keys = values.flatMap(([, text]) => keysIn(text));
    for (const user of mount.users ?? [])
      wanted.keys.set(user, [...new Set([...(wanted.keys.get(user) ?? []), ...keys])]);
  }
  return wanted;
}

export class AgentCredentials {
  /** Per user, the keys this launcher added, so that those gone from the Secret can be taken out. */
  private readonly added = new Map<string, string[]>();
  private applied: string | undefined;
  private current: CredentialsStatus | undefined;

  private readonly o: { dir: string; agent: Agent; log: Logger };

  constructor(o: { dir: string; agent: Agent; log: Logger }) {
    this.o = o;
  }

  /** The last sync's outcome; undefined for a VMI without agent credentials, or before its guest's agent answered. */
  status(): CredentialsStatus | undefined {
    return this.current;
  }

  /** Gives the guest what changed in the VMI's Secrets since the last sync that succeeded. */
  async sync(vmi: VirtualMachineInstance): Promise<void> {
    if (!accessCredentialMounts(vmi.spec).some((m) => m.propagation === "qemuGuestAgent")) return;
    let wanted: Wanted;
    try {
      wanted = await wantedCredentials(vmi, this.o.dir);
    } catch (error) {
      this.current = { synchronized: false, message: (error as Error).message };
      return;
    }
    const digest = createHash("sha256")
      .update(JSON.stringify([[...wanted.keys], [...wanted.passwords]]))
      .digest("hex");
    if (digest === this.applied) return;
    // Until the guest's agent answers there is nothing to tell: the guest is still booting.
    if (
      !(await this.o.agent("guest-ping").then(
        () => true,
        () => false,
      ))
    )
      return;
    try {
      for (const user of new Set([...this.added.keys(), ...wanted.keys.keys()])) {
        const keys = wanted.keys.get(user) ?? [];
        const stale = (this.added.get(user) ?? []).filter((k) => !keys.includes(k));
        if (stale.length > 0) await this.o.agent("guest-ssh-remove-authorized-keys", { username: user, keys: stale });
        if (keys.length > 0) await this.o.agent("guest-ssh-add-authorized-keys", { username: user, keys });
        this.added.set(user, keys);
      }
      for (const [user, password] of wanted.passwords) {
        await this.o.agent("guest-set-user-password", {
          username: user,
          password: Buffer.from(password).toString("base64"),
          crypted: false,
        });
      }
      this.applied = digest;
      this.current = { synchronized: true, message: "" };
      this.o.log.info("gave the guest its access credentials through its agent", {
        users: [...new Set([...wanted.keys.keys(), ...wanted.passwords.keys()])],
      });
    } catch (error) {
      this.current = {
        synchronized: false,
        message: `the guest agent refused the access credentials: ${(error as Error).message}`,
      };
      this.o.log.warn("could not give the guest its access credentials", { error });
    }
  }
}
