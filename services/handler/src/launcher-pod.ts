import type { Pod } from "@kubevirt-ts/kube";
import type { VirtualMachineInstance } from "@kubevirt-ts/kubevirt-api";
import { isLauncherPodOf } from "@kubevirt-ts/node-contract";

// Which pod the handler drives (sync, state, console, VNC) for a VMI: only
// one the VMI owns (kubevirt-api's rule: same namespace, the VMI as its
// controller) that the VMI's status.activePods, written by the controller,
// names on this node, and that runs. Any other pod carrying the launcher
// labels, wherever it is, never gets the VMI's spec nor its keystrokes.

export function launcherPodFor(
  vmi: VirtualMachineInstance,
  candidates: readonly Pod[],
  nodeName: string,
  evenTerminating = false,
): Pod | undefined {
  const active = vmi.status?.activePods ?? {};
  return candidates.find((pod) => {
    const uid = pod.metadata.uid;
    return (
      uid !== undefined &&
      isLauncherPodOf(pod, vmi) &&
      active[uid] === nodeName &&
      pod.spec?.nodeName === nodeName &&
      (evenTerminating || !pod.metadata.deletionTimestamp) &&
      pod.status?.phase === "Running"
    );
  });
}
