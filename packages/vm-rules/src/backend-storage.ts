import type { VirtualMachineInstance, VmiSpec } from "@kubevirt-ts/kubevirt-api";

// KubeVirt's backend storage: a small claim per VM that keeps what QEMU's helpers write outside the guest's disks and
// that must outlive the launcher pod: the EFI variables (OVMF's VARS file) when firmware.bootloader.efi.persistent,
// the emulated TPM's state (swtpm's) when devices.tpm.persistent. The controller makes the claim before the VMI's
// first launcher pod, owned by the VM (or by the VMI when no VM owns it, as KubeVirt's: it then goes with the VMI),
// and mounts it in every launcher pod of that VM at LauncherDir.vmState; the launcher keeps each state in a folder of
// it (VmStateDir).

export const BACKEND_STORAGE_CLAIM_PREFIX = "persistent-state-for-";
/** KubeVirt's size for the claim: the VARS file is 528 KiB, swtpm's state a few KiB. */
export const BACKEND_STORAGE_SIZE = "10Mi";

/** The folders the launcher keeps in the claim. */
export const VmStateDir = {
  nvram: "nvram",
  swtpm: "swtpm",
} as const;

export function hasPersistentTpm(spec: VmiSpec): boolean {
  const tpm = spec.domain.devices.tpm;
  return tpm !== undefined && tpm.enabled !== false && tpm.persistent === true;
}

export function hasPersistentEfi(spec: VmiSpec): boolean {
  return spec.domain.firmware?.bootloader?.efi?.persistent === true;
}

export function needsBackendStorage(spec: VmiSpec): boolean {
  return hasPersistentTpm(spec) || hasPersistentEfi(spec);
}

/** The VMI's backend-storage claim, named after it (and so after its VM), as KubeVirt names it. */
export function backendStorageClaimName(vmi: VirtualMachineInstance): string {
  return `${BACKEND_STORAGE_CLAIM_PREFIX}${vmi.metadata.name ?? ""}`;
}
