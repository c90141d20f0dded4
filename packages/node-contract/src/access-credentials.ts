import type { VmiSpec } from "@kubevirt-ts/kubevirt-api";

// KubeVirt's access credentials: SSH public keys and passwords held in
// Secrets. As with cloud-init's own Secrets, no component reads them with its
// account: the controller adds each Secret to the launcher pod as a volume,
// and the kubelet mounts it (and keeps it current). The launcher adds keys
// propagated by cloud-init to the metadata of the VMI's cloud-init disk
// (NoCloud's public-keys, a config drive's public_keys), from which cloud-init
// gives them to the guest's default user; it gives keys and passwords
// propagated by the QEMU guest agent to the named users of the running guest,
// again whenever the Secret changes.

/** Where the launcher pod mounts them: <dir>/<index>/<key>. */
export const ACCESS_CREDENTIALS_DIR = "/var/run/kubevirt-ts/access-credentials";

export interface AccessCredentialMount {
  secretName: string;
  /** SSH public keys (each value of the Secret, a key per line), or passwords (the Secret's keys are user names). */
  kind: "sshPublicKey" | "userPassword";
  /** Which cloud-init disk carries the keys, or the guest agent. */
  propagation: "noCloud" | "configDrive" | "qemuGuestAgent";
  /** The guest's users whose authorized_keys the guest agent keeps (SSH keys through the agent). */
  users?: string[];
  /** The pod volume's name. */
  podVolume: string;
  /** The folder, relative to ACCESS_CREDENTIALS_DIR, that holds the Secret's keys. */
  relativeDir: string;
}

/** The VMI's access credential Secrets, one mount each. */
export function accessCredentialMounts(spec: Pick<VmiSpec, "accessCredentials">): AccessCredentialMount[] {
  return (spec.accessCredentials ?? []).flatMap((credential, i): AccessCredentialMount[] => {
    const where = { podVolume: `access-credential-${String(i)}`, relativeDir: String(i) };
    const key = credential.sshPublicKey;
    if (key) {
      const { noCloud, configDrive, qemuGuestAgent } = key.propagationMethod;
      const propagation = noCloud
        ? "noCloud"
        : configDrive
          ? "configDrive"
          : qemuGuestAgent
            ? "qemuGuestAgent"
            : undefined;
      if (!propagation) return [];
      return [
        {
          secretName: key.source.secret.secretName,
          kind: "sshPublicKey",
          propagation,
          ...(qemuGuestAgent ? { users: qemuGuestAgent.users } : {}),
          ...where,
        },
      ];
    }
    const password = credential.userPassword;
    if (password?.propagationMethod.qemuGuestAgent)
      return [
        {
          secretName: password.source.secret.secretName,
          kind: "userPassword",
          propagation: "qemuGuestAgent",
          ...where,
        },
      ];
    return [];
  });
}
