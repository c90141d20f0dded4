import { lstat, mkdir, readlink, rmdir, symlink } from "node:fs/promises";
import { dirname, join } from "node:path";
import type { VirtualMachineInstance } from "@kubevirt-ts/kubevirt-api";
import { VmStateDir, hasPersistentEfi, hasPersistentTpm } from "@kubevirt-ts/vm-rules";
import { domainName } from "../domain/converter.ts";

// The VM's state outside its disks, on its backend-storage claim (vm-rules' backend-storage.ts), which the pod
// mounts at the layout's vmStateDir: OVMF's variables as <claim>/nvram/<domain>_VARS.fd, named in the domain's
// <nvram>, which libvirt copies from the firmware's template only when it is absent; and swtpm's state in
// <claim>/swtpm, where libvirt's folder for this domain's TPM (<its swtpm folder>/<domain UUID>, the UUID stable for a
// VM) leads.

export interface VmState {
  /** The EFI variables' file, when the VMI keeps them. */
  nvram?: string;
}

/**
 * Makes the folders the VMI's persistent state needs on the claim, and leads libvirt's TPM folder for the domain there.
 */
export async function prepareVmState(
  vmi: VirtualMachineInstance,
  vmStateDir: string,
  swtpmStorageDir: string,
  domainUuid: string,
): Promise<VmState> {
  const efi = hasPersistentEfi(vmi.spec);
  const tpm = hasPersistentTpm(vmi.spec);
  if (!efi && !tpm) return {};
  if (
    !(await lstat(vmStateDir).then(
      (s) => s.isDirectory(),
      () => false,
    ))
  ) {
    throw new Error(
      `the VMI keeps its ${[efi && "EFI variables", tpm && "TPM state"].filter(Boolean).join(" and ")} on ` +
        `its backend-storage claim, but ${vmStateDir}, where the pod mounts it, is not there`,
    );
  }
  const state: VmState = {};
  if (efi) {
    await mkdir(join(vmStateDir, VmStateDir.nvram), { recursive: true });
    state.nvram = join(vmStateDir, VmStateDir.nvram, `${domainName(vmi)}_VARS.fd`);
  }
  if (tpm) {
    const target = join(vmStateDir, VmStateDir.swtpm);
    await mkdir(target, { recursive: true });
    await linkFolder(join(swtpmStorageDir, domainUuid), target);
  }
  return state;
}

/** `path` becomes a link to `target`; an empty folder there gives way (a folder with anything in it is an error). */
async function linkFolder(path: string, target: string): Promise<void> {
  const existing = await lstat(path).catch(() => undefined);
  if (existing?.isSymbolicLink()) {
    if ((await readlink(path)) === target) return;
    throw new Error(`${path} already leads to ${await readlink(path)}, not to ${target}`);
  }
  if (existing) await rmdir(path);
  await mkdir(dirname(path), { recursive: true });
  await symlink(target, path);
}
