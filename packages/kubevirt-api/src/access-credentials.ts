import type { VmiSpec } from "./schema/vmi.ts";

// KubeVirt's access credentials: SSH public keys held in Secrets. As with
// cloud-init's own Secrets, no component reads them with its account: the
// controller adds each Secret to the launcher pod as a volume, the kubelet
// mounts it, and the launcher adds the keys to the metadata of the VMI's
// cloud-init disk (NoCloud's public-keys, a config drive's public_keys), from
// which cloud-init gives them to the guest's default user.

/** Where the launcher pod mounts them: <dir>/<index>/<key>. */
export const ACCESS_CREDENTIALS_DIR = "/var/run/kubevirt-ts/access-credentials";

export interface AccessCredentialMount {
  secretName: string;
  /** Which cloud-init disk carries the keys. */
  propagation: "noCloud" | "configDrive";
  /** The pod volume's name. */
  podVolume: string;
  /** The folder, relative to ACCESS_CREDENTIALS_DIR, that holds the Secret's keys. */
  relativeDir: string;
}

/** The VMI's SSH public key Secrets that cloud-init carries, one mount each (other kinds are refused at admission). */
export function accessCredentialMounts(spec: Pick<VmiSpec, "accessCredentials">): AccessCredentialMount[] {
  return (spec.accessCredentials ?? []).flatMap((credential, i) => {
    const key = credential.sshPublicKey;
    const propagation = key?.propagationMethod.noCloud ? "noCloud" : key?.propagationMethod.configDrive ? "configDrive" : undefined;
    if (!key || !propagation) return [];
    return [{ secretName: key.source.secret.secretName, propagation, podVolume: `access-credential-${String(i)}`, relativeDir: String(i) }];
  });
}
