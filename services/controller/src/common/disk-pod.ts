import type { PodSpec } from "@kubevirt-ts/kube";
import { LAUNCHER_UID } from "@kubevirt-ts/kubevirt-api";

// What every pod that reads or writes a VM's disk in a claim has in common (the importer, a snapshot's copy, an
// export server): it runs as the launcher's user, so the disk stays the launcher's to use, and, for a local claim,
// on the claim's node.

/** The pod's security context: the launcher's user and group, the claim's files given to that group. */
export const diskPodSecurityContext: NonNullable<PodSpec["securityContext"]> = {
  runAsUser: LAUNCHER_UID,
  runAsGroup: LAUNCHER_UID,
  fsGroup: LAUNCHER_UID,
  runAsNonRoot: true,
  seccompProfile: { type: "RuntimeDefault" },
};

/** The affinity that holds a pod to one node (a local claim's), or nothing when no node is named. */
export function onNode(node: string | undefined): Pick<PodSpec, "affinity"> {
  if (node === undefined) return {};
  return {
    affinity: {
      nodeAffinity: {
        requiredDuringSchedulingIgnoredDuringExecution: {
          nodeSelectorTerms: [{ matchFields: [{ key: "metadata.name", operator: "In", values: [node] }] }],
        },
      },
    },
  };
}
