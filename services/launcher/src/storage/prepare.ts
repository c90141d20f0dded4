import { execFile } from "node:child_process";
import { mkdir, readdir, rm } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { type VirtualMachineInstance, parseQuantity } from "@kubevirt-ts/kubevirt-api";
import { claimVolumes } from "@kubevirt-ts/vm-rules";
import { configVolumes } from "@kubevirt-ts/node-contract";
import { probeImage } from "@kubevirt-ts/runtime";
import type { PreparedDisk } from "../domain/converter.ts";
import { claimDisk } from "./claim-disk.ts";
import { cloudInitData, cloudInitIso, configDriveIso, sshPublicKeys } from "./cloud-init.ts";
import { configVolumeIso } from "./config-disk.ts";

// The files behind a VMI's volumes, made in the launcher's own folder:
// containerDisks as copy-on-write overlays over the read-only copy their
// init container made, emptyDisks as sparse qcow2 files, cloud-init as a
// NoCloud seed ISO, its data inline or from the Secrets the kubelet mounted,
// the files of ConfigMaps, Secrets, a ServiceAccount and the downward API
// as ISO disks, claims as their disk.img or their device (claim-disk.ts), and
// ephemeral claims as overlays over that.

const exec = promisify(execFile);

export interface StorageLayout {
  /** Where init containers put each containerDisk: <dir>/<volume>/<file>. */
  containerDisksDir: string;
  /** Where the launcher writes overlays, blank disks and seed ISOs. */
  disksDir: string;
  /** Where the pod mounts the cloud-init Secrets (CLOUD_INIT_SECRETS_DIR). */
  cloudInitSecretsDir: string;
  /** Where the pod mounts configMap, secret, serviceAccount and downwardAPI volumes (CONFIG_VOLUMES_DIR). */
  configVolumesDir: string;
  /** Where the pod mounts the access credentials' Secrets (ACCESS_CREDENTIALS_DIR). */
  accessCredentialsDir: string;
  /**
   * Where the pod mounts Filesystem-mode claims (CLAIM_DISKS_DIR) and puts Block-mode claims' devices
   * (CLAIM_DEVICES_DIR).
   */
  claimDisksDir: string;
  claimDevicesDir: string;
}

/** A containerDisk's format, as KubeVirt verifies its images: qcow2 or raw, one self-contained file (probeImage). */
async function imageFormat(path: string): Promise<"qcow2" | "raw"> {
  const { format } = await probeImage(path, { formats: ["qcow2", "raw"] });
  return format === "qcow2" ? "qcow2" : "raw";
}

async function containerDiskFile(layout: StorageLayout, volume: string): Promise<string> {
  const dir = join(layout.containerDisksDir, volume);
  const files = (await readdir(dir).catch(() => [])).filter((f) => !f.startsWith("."));
  if (files.length !== 1 || files[0] === undefined) {
    throw new Error(
      `containerDisk ${volume}: expected exactly one disk file in ${dir}, ` +
        `found ${files.length === 0 ? "none" : files.join(", ")}; set the volume's path to pick one`,
    );
  }
  return join(dir, files[0]);
}

/** A new copy-on-write overlay (`<target>.qcow2`) over the backing disk, which is only ever read; its path. */
async function overlayOn(backing: string, format: "qcow2" | "raw", target: string): Promise<string> {
  const overlay = `${target}.qcow2`;
  await rm(overlay, { force: true });
  await exec("qemu-img", ["create", "-q", "-f", "qcow2", "-F", format, "-b", backing, overlay]);
  return overlay;
}

export async function prepareDisks(
  vmi: VirtualMachineInstance,
  layout: StorageLayout,
): Promise<Record<string, PreparedDisk>> {
  await mkdir(layout.disksDir, { recursive: true });
  const cloudInit = await cloudInitData(vmi, layout.cloudInitSecretsDir);
  const disks: Record<string, PreparedDisk> = {};
  for (const config of configVolumes(vmi.spec)) {
    const iso = join(layout.disksDir, `${config.volume}.iso`);
    await configVolumeIso(iso, join(layout.configVolumesDir, config.relativeDir), config.label);
    disks[config.volume] = { path: iso, format: "raw", readonly: "unlessSata" };
  }
  const claimInfo = new Map((vmi.status?.volumeStatus ?? []).map((s) => [s.name, s.persistentVolumeClaimInfo]));
  for (const claim of claimVolumes(vmi.spec)) {
    const disk = await claimDisk(
      claim.volume,
      claimInfo.get(claim.volume),
      { disks: layout.claimDisksDir, devices: layout.claimDevicesDir },
      claim.readOnly,
    );
    if (claim.ephemeral) {
      // The guest writes to an overlay in the launcher's folder, gone with the pod; the claim's disk is only read.
      disks[claim.volume] = {
        path: await overlayOn(disk.path, "raw", join(layout.disksDir, claim.volume)),
        format: "qcow2",
      };
      continue;
    }
    // Always raw, as KubeVirt's: a format read from the image would let a guest that writes a qcow2 header reach other
    // files.
    disks[claim.volume] = {
      path: disk.path,
      format: "raw",
      type: disk.type,
      ...(claim.readOnly ? { readonly: true } : {}),
    };
  }
  for (const volume of vmi.spec.volumes ?? []) {
    const target = join(layout.disksDir, volume.name);
    if (volume.containerDisk) {
      const backing = await containerDiskFile(layout, volume.name);
      disks[volume.name] = { path: await overlayOn(backing, await imageFormat(backing), target), format: "qcow2" };
    } else if (volume.emptyDisk) {
      const bytes = parseQuantity(volume.emptyDisk.capacity) ?? 0;
      await exec("qemu-img", ["create", "-q", "-f", "qcow2", `${target}.qcow2`, String(Math.ceil(bytes))]);
      disks[volume.name] = { path: `${target}.qcow2`, format: "qcow2" };
    } else if (volume.cloudInitNoCloud || volume.cloudInitConfigDrive) {
      const data = cloudInit.get(volume.name);
      const configDrive = volume.cloudInitConfigDrive !== undefined;
      await (configDrive ? configDriveIso : cloudInitIso)(`${target}.iso`, {
        userData: data?.userdata,
        networkData: data?.networkdata,
        instanceId: vmi.metadata.uid ?? vmi.metadata.name ?? "kubevirt-ts",
        hostname: vmi.spec.hostname ?? vmi.metadata.name ?? "kubevirt-ts",
        publicKeys: await sshPublicKeys(vmi, layout.accessCredentialsDir, configDrive ? "configDrive" : "noCloud"),
      });
      disks[volume.name] = { path: `${target}.iso`, format: "raw", readonly: "unlessSata" };
    }
  }
  return disks;
}
