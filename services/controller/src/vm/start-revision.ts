import { isDeepStrictEqual } from "node:util";
import type { KubeObject } from "@kubevirt-ts/kube";
import {
  API_VERSION,
  Annotation,
  Kind,
  Label,
  type VirtualMachine,
  type VirtualMachineInstance,
  controllerRef,
  controllerRevisions,
} from "@kubevirt-ts/kubevirt-api";

// The VM as its VMI was started from, as KubeVirt keeps it: a ControllerRevision
// revision-start-vm-<VM uid>-<generation> holding the VM's spec, owned by the
// VM, one per VM (the one of the last start), and the generation on the VMI
// (kubevirt.io/vm-generation). A running VM whose template has changed since
// needs a restart for the change to take effect: kubevirt-ts stages every
// change (vmRolloutStrategy Stage, no hotplug), so any change to the template,
// or to the instancetype or preference it names, sets RestartRequired.

/** KubeVirt's message on the RestartRequired condition, word for word. */
export const RESTART_REQUIRED_MESSAGE = "a non-live-updatable field was changed in the template spec";

/** A start revision: the VM's spec as of a start, and the generation it had. */
export interface StartRevision extends KubeObject {
  data?: { spec?: VirtualMachine["spec"] };
  revision?: number;
}

/** What the names of the VM's start revisions begin with. */
export function startRevisionPrefix(vmUid: string): string {
  return `revision-start-vm-${vmUid}-`;
}

/** KubeVirt's name of the revision that holds the VM's spec as of its start at `generation`. */
export function startRevisionName(vmUid: string, generation: number): string {
  return `${startRevisionPrefix(vmUid)}${String(generation)}`;
}

/** The ControllerRevision of the VM as it is now, for the VMI about to be made from it. */
export function startRevisionFor(vm: VirtualMachine): StartRevision {
  const generation = vm.metadata.generation ?? 0;
  return {
    apiVersion: `${controllerRevisions.group}/${controllerRevisions.version}`,
    kind: "ControllerRevision",
    metadata: {
      name: startRevisionName(vm.metadata.uid ?? "", generation),
      namespace: vm.metadata.namespace,
      // The VM's uid, not its name: a label's value holds 63 characters, a VM's name up to 253.
      labels: { [Label.CreatedBy]: vm.metadata.uid ?? "" },
      ownerReferences: [controllerRef({ apiVersion: API_VERSION, kind: Kind.VirtualMachine, metadata: vm.metadata })],
    },
    data: { spec: vm.spec },
    revision: generation,
  };
}

/** The start revision a VMI of the VM came from; undefined for a VMI made before kubevirt-ts kept them. */
export function startRevisionOf(vm: VirtualMachine, vmi: VirtualMachineInstance): string | undefined {
  const generation = Number(vmi.metadata.annotations?.[Annotation.VmGeneration]);
  if (!Number.isSafeInteger(generation) || generation < 0) return undefined;
  return startRevisionName(vm.metadata.uid ?? "", generation);
}

/** The parts of a VM's spec its VMI is made from: the template's spec, and the instancetype and preference named. */
function started(spec: VirtualMachine["spec"] | undefined) {
  const ref = (r: { name?: string; kind?: string } | undefined) =>
    r === undefined ? undefined : { name: r.name, kind: r.kind?.toLowerCase() };
  return {
    template: spec?.template.spec,
    instancetype: ref(spec?.instancetype),
    preference: ref(spec?.preference),
  };
}

/** Whether the VM's template (or its instancetype or preference) differs from the spec its VMI was started from. */
export function templateChanged(startSpec: VirtualMachine["spec"] | undefined, vm: VirtualMachine): boolean {
  return !isDeepStrictEqual(
    JSON.parse(JSON.stringify(started(startSpec))),
    JSON.parse(JSON.stringify(started(vm.spec))),
  );
}
