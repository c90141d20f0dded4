import { type EventRecorder, type Informer, type KubeClient, isAlreadyExists } from "@kubevirt-ts/kube";
import { type DataVolume, EventReason, type VirtualMachine, kubevirtResources } from "@kubevirt-ts/kubevirt-api";
import { dataVolumeFromTemplate } from "@kubevirt-ts/vm-rules";

// A VM's DataVolumes, as KubeVirt's VM controller keeps them: each of its
// dataVolumeTemplates is created (named as the template, owned by the VM) on
// every sync while it is missing, whether or not the VM runs, so its disk is
// filled before it is first started; the VM's VMI waits until they are in.

/** Creates the VM's DataVolumes that are not there; a failure is returned as the VM's sync error. */
export async function ensureDataVolumes(
  client: KubeClient,
  dataVolumes: Informer<DataVolume> | undefined,
  recorder: EventRecorder,
  vm: VirtualMachine,
): Promise<{ reason: string; message: string } | undefined> {
  const templates = vm.spec.dataVolumeTemplates ?? [];
  if (templates.length === 0) return undefined;
  if (!dataVolumes) {
    return {
      reason: EventReason.FailedCreate,
      message:
        "the VM has dataVolumeTemplates, but the cluster serves no DataVolume kind: install CDI, or " +
        "kubevirt-ts's chart with dataVolumes.serve enabled",
    };
  }
  for (const template of templates) {
    if (dataVolumes.get(`${vm.metadata.namespace ?? ""}/${template.metadata.name}`)) continue;
    try {
      await client.create(kubevirtResources.dataVolumes, vm.metadata.namespace, dataVolumeFromTemplate(vm, template));
      recorder.record(
        vm,
        "Normal",
        EventReason.SuccessfulDataVolumeCreate,
        `Created DataVolume ${template.metadata.name}`,
      );
    } catch (error) {
      if (isAlreadyExists(error)) continue;
      recorder.record(
        vm,
        "Warning",
        EventReason.FailedDataVolumeCreate,
        `Error creating DataVolume ${template.metadata.name}: ${String(error)}`,
      );
      return {
        reason: EventReason.FailedDataVolumeCreate,
        message: `Error creating DataVolume ${template.metadata.name}: ${String(error)}`,
      };
    }
  }
  return undefined;
}
