import type { VmiSpec, Volume } from "@kubevirt-ts/kubevirt-api";

// Volumes whose files the kubelet provides: a ConfigMap's or a Secret's
// keys, a ServiceAccount's token, fields of the pod (downwardAPI). As in
// KubeVirt, the controller adds each to the launcher pod as a pod volume of
// the same kind, the kubelet mounts it with the pod's rights in the VMI's
// namespace, and the launcher makes an ISO 9660 disk of the files for the
// guest. This is where the controller mounts them and where the launcher
// looks.

/** Where the launcher pod mounts them: <dir>/<volume>/. */
export const CONFIG_VOLUMES_DIR = "/var/run/kubevirt-ts/config-volumes";

export type ConfigVolumeKind = "configMap" | "secret" | "serviceAccount" | "downwardAPI";

export interface ConfigVolume {
  /** The VMI volume. */
  volume: string;
  kind: ConfigVolumeKind;
  /** The pod volume's name: a DNS label, whatever the VMI volume is called. */
  podVolume: string;
  /** The folder, relative to CONFIG_VOLUMES_DIR, that holds the files. */
  relativeDir: string;
  /** The ISO's volume label: the volume's own, or none. */
  label: string | undefined;
}

function kindOf(volume: Volume): ConfigVolumeKind | undefined {
  if (volume.configMap) return "configMap";
  if (volume.secret) return "secret";
  if (volume.serviceAccount) return "serviceAccount";
  if (volume.downwardAPI) return "downwardAPI";
  return undefined;
}

/** The VMI's volumes whose files the kubelet provides, one mount each. */
export function configVolumes(spec: Pick<VmiSpec, "volumes">): ConfigVolume[] {
  return (spec.volumes ?? []).flatMap((volume, i) => {
    const kind = kindOf(volume);
    if (!kind) return [];
    const label = volume.configMap?.volumeLabel ?? volume.secret?.volumeLabel ?? volume.downwardAPI?.volumeLabel;
    return [
      {
        volume: volume.name,
        kind,
        podVolume: `config-${String(i)}-${kind.toLowerCase()}`,
        relativeDir: volume.name,
        label,
      },
    ];
  });
}

/** The ServiceAccount the launcher pod runs as, if a serviceAccount volume names one. */
export function launcherServiceAccount(spec: Pick<VmiSpec, "volumes">): string | undefined {
  return (spec.volumes ?? []).find((v) => v.serviceAccount)?.serviceAccount?.serviceAccountName;
}
