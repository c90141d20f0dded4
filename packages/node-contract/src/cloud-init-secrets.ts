import type { VmiSpec, Volume } from "@kubevirt-ts/kubevirt-api";

// cloud-init data held in Secrets (cloudInitNoCloud's or cloudInitConfigDrive's secretRef and
// networkDataSecretRef). No component reads them with its own account: the
// controller adds each Secret to the launcher pod as a volume, the kubelet
// mounts it with the pod's rights in the VMI's namespace, and the launcher
// reads the files. This is where the controller mounts them and where the
// launcher looks, and the keys KubeVirt reads in them.

/** Where the launcher pod mounts the cloud-init Secrets: <dir>/<volume>/<kind>/<key>. */
export const CLOUD_INIT_SECRETS_DIR = "/var/run/kubevirt-ts/cloud-init-secrets";

/** The keys KubeVirt accepts in such a Secret, in the order it tries them. */
export const CloudInitSecretKeys = {
  userdata: ["userdata", "userData"],
  networkdata: ["networkdata", "networkData"],
} as const;
export type CloudInitSecretKind = keyof typeof CloudInitSecretKeys;

export interface CloudInitSecretMount {
  /** The VMI volume the Secret belongs to. */
  volume: string;
  kind: CloudInitSecretKind;
  secretName: string;
  /** The pod volume's name: a DNS label, whatever the VMI volume is called. */
  podVolume: string;
  /** The folder, relative to CLOUD_INIT_SECRETS_DIR, that holds the Secret's keys. */
  relativeDir: string;
}

/** A volume's cloud-init data, whichever way it reaches the guest (a NoCloud disk or a config drive). */
export function cloudInitSourceOf(volume: Volume): Volume["cloudInitNoCloud"] {
  return volume.cloudInitNoCloud ?? volume.cloudInitConfigDrive;
}

/** The Secrets a VMI's cloud-init volumes reference, one mount each. */
export function cloudInitSecretMounts(spec: Pick<VmiSpec, "volumes">): CloudInitSecretMount[] {
  return (spec.volumes ?? []).flatMap((volume, i) => {
    const source = cloudInitSourceOf(volume);
    const refs: [CloudInitSecretKind, string | undefined][] = [
      ["userdata", source?.secretRef?.name],
      ["networkdata", source?.networkDataSecretRef?.name],
    ];
    return refs.flatMap(([kind, secretName]) =>
      secretName === undefined
        ? []
        : [
            {
              volume: volume.name,
              kind,
              secretName,
              podVolume: `cloud-init-${String(i)}-${kind}`,
              relativeDir: `${volume.name}/${kind}`,
            },
          ],
    );
  });
}
