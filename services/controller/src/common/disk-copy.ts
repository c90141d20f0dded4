import type { PodSpec } from "@kubevirt-ts/kube";
import { DISK_COPY_NAME, DISK_COPY_PATH } from "@kubevirt-ts/node-contract";

// The init containers that copy disks out of images that hold nothing else
// (containerDisks, kernel boot images, a DataVolume's registry source): the
// copier is first handed from our own image into a shared volume, then each
// image runs it to copy its files into a volume of the pod.

type InitContainer = NonNullable<PodSpec["initContainers"]>[number];

/** What the copier's containers may do: nothing but read and write their volumes. */
export const restrictedContainer = {
  allowPrivilegeEscalation: false,
  runAsNonRoot: true,
  capabilities: { drop: ["ALL"] },
};
export const smallResources = { requests: { cpu: "10m", memory: "16Mi" }, limits: { memory: "64Mi" } };

export interface DiskCopy {
  /** The init container's name. */
  name: string;
  image: string;
  imagePullPolicy: string;
  /** The file, or the folder whose regular files, to copy out of the image. */
  from: string;
  /** The pod volume and the folder in it the files land in. */
  volume: string;
  mountPath: string;
  /** Where in that volume they land, when not at its root. */
  to?: string;
}

/**
 * The init containers copying each disk out of its image, after one handing the copier over from `copier` (an image of
 * ours) through the `tools` volume; none when there is nothing to copy.
 */
export function diskCopyInitContainers(
  copier: { image: string; imagePullPolicy: string },
  tools: { volume: string; mountPath: string },
  copies: readonly DiskCopy[],
): InitContainer[] {
  if (copies.length === 0) return [];
  const copierInTools = `${tools.mountPath}/${DISK_COPY_NAME}`;
  return [
    {
      name: "container-disk-binary",
      image: copier.image,
      imagePullPolicy: copier.imagePullPolicy,
      command: ["cp", DISK_COPY_PATH, copierInTools],
      resources: smallResources,
      securityContext: restrictedContainer,
      volumeMounts: [{ name: tools.volume, mountPath: tools.mountPath }],
    },
    ...copies.map((copy) => ({
      name: copy.name,
      image: copy.image,
      imagePullPolicy: copy.imagePullPolicy,
      command: [copierInTools, copy.from, copy.to ?? copy.mountPath],
      resources: smallResources,
      securityContext: restrictedContainer,
      volumeMounts: [
        { name: tools.volume, mountPath: tools.mountPath, readOnly: true },
        { name: copy.volume, mountPath: copy.mountPath },
      ],
    })),
  ];
}
