import { readFileSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { INSTALLED_BOOT_ARG, buildTinyInstallerIso } from "@kubevirt-ts/images";
import { describe, expect, it } from "vitest";
import { createVm, custom, suiteNamespace } from "./cluster.ts";
import { inGuest, serialLog } from "./console.ts";
import { dataVolume, toUploadProxy, uploadDataVolume, uploadToken } from "./datavolumes.ts";

// An OS installed from an ISO, as a user installs one: the installer ISO
// (packages/images builds it offline: the tiny guest's kernel with an
// initramfs that writes an installed system to the first virtio disk and
// powers off) is uploaded into a DataVolume as virtctl image-upload does. The
// VM has the dashboard's layout: a blank DataVolume that boots first, which
// the firmware passes over, and the ISO as a CD-ROM after it. The guest
// powers off when it has installed (RerunOnFailure: a clean power-off is not
// restarted, and its VMI goes). Started again, the VM boots from its disk
// though the ISO is still there; then the ISO is removed, and it boots from
// its disk alone. The kernel's command line says which it booted.

const { name: namespace, kubectl, get } = suiteNamespace("e2e-iso-install");
const poll = { timeout: 300_000, interval: 2_000 };

const installVm = {
  apiVersion: "kubevirt.io/v1",
  kind: "VirtualMachine",
  metadata: { name: "installed", namespace },
  spec: {
    runStrategy: "RerunOnFailure",
    dataVolumeTemplates: [
      {
        metadata: { name: "installed-root" },
        spec: { source: { blank: {} }, storage: { resources: { requests: { storage: "64Mi" } } } },
      },
    ],
    template: {
      spec: {
        domain: {
          memory: { guest: "256Mi" },
          devices: {
            disks: [
              { name: "root", disk: { bus: "virtio" }, bootOrder: 1 },
              { name: "installer", cdrom: { bus: "sata" }, bootOrder: 2 },
            ],
          },
        },
        terminationGracePeriodSeconds: 5,
        volumes: [
          { name: "root", dataVolume: { name: "installed-root" } },
          { name: "installer", dataVolume: { name: "installer-iso" } },
        ],
      },
    },
  },
};

/** PUT of the VM's subresource (start, stop) through the API server, as virtctl does. */
async function putSubresource(action: "start" | "stop"): Promise<void> {
  const path = `/apis/subresources.kubevirt.io/v1/namespaces/${namespace}/virtualmachines/installed/${action}`;
  const dir = await mkdtemp(join(tmpdir(), "e2e-iso-"));
  try {
    await writeFile(join(dir, "options.json"), "{}");
    await kubectl("replace", "--raw", path, "-f", join(dir, "options.json"));
  } finally {
    await rm(dir, { recursive: true });
  }
}

/** Waits for a VMI of the VM other than the one given to run; that VMI. */
async function newVmiRunning(previousUid: string | undefined) {
  await expect
    .poll(async () => {
      const vmi = await get("virtualmachineinstances", "installed");
      return vmi && vmi.metadata.uid !== previousUid ? vmi.status?.phase : "no new VMI";
    }, poll)
    .toBe("Running");
  return get("virtualmachineinstances", "installed");
}

describe("an OS installed from an ISO", () => {
  it(
    "installs from an uploaded ISO onto a blank DataVolume, then boots from " +
      "that disk, with the ISO and without it",
    async () => {
      const iso = readFileSync(await buildTinyInstallerIso());
      await custom.createNamespacedCustomObject({
        group: "cdi.kubevirt.io",
        version: "v1beta1",
        namespace,
        plural: "datavolumes",
        body: uploadDataVolume(namespace, "installer-iso", "64Mi"),
      });
      await expect
        .poll(async () => (await dataVolume(namespace, "installer-iso"))?.status?.phase, poll)
        .toBe("UploadReady");
      const token = await uploadToken(namespace, kubectl, "installer-iso");
      expect(await toUploadProxy("POST", "/v1beta1/upload", token, iso)).toMatchObject({ status: 200 });
      await expect
        .poll(async () => (await dataVolume(namespace, "installer-iso"))?.status?.phase, poll)
        .toBe("Succeeded");

      await createVm(namespace, installVm);
      await expect
        .poll(async () => (await get("virtualmachineinstances", "installed"))?.status?.phase, poll)
        .toBe("Running");
      const installer = await get("virtualmachineinstances", "installed");
      // Powered off by its guest once it has installed: the VMI succeeded, so RerunOnFailure deletes it (as KubeVirt's)
      // and starts no other. An installer that fails stays up, and its serial output says why.
      await expect
        .poll(async () => (await get("virtualmachineinstances", "installed"))?.metadata.uid, poll)
        .toBeUndefined()
        .catch(async (error: unknown) => {
          throw new Error(
            "the installer did not power " +
              `off: ${String(error)}\n` +
              (await serialLog(namespace, "installed").catch(String)).slice(-3000),
          );
        });
      expect(await get("virtualmachines", "installed")).toMatchObject({
        status: { printableStatus: "Stopped", created: false },
      });

      // Started as virtctl start does: the installed disk boots first now, though the ISO is still there.
      await putSubresource("start");
      const bootedFromDisk = await newVmiRunning(installer?.metadata.uid);
      await inGuest(namespace, "installed", "cat /proc/cmdline", INSTALLED_BOOT_ARG);

      // Stopped, and the ISO comes out (its disk and its volume): the VM boots from its disk alone.
      await putSubresource("stop");
      await expect
        .poll(async () => (await get("virtualmachineinstances", "installed"))?.metadata.uid, poll)
        .toBeUndefined();
      await kubectl(
        "patch",
        "vm",
        "installed",
        "-n",
        namespace,
        "--type=json",
        "-p",
        JSON.stringify([
          { op: "test", path: "/spec/template/spec/domain/devices/disks/1/name", value: "installer" },
          { op: "remove", path: "/spec/template/spec/domain/devices/disks/1" },
          { op: "test", path: "/spec/template/spec/volumes/1/name", value: "installer" },
          { op: "remove", path: "/spec/template/spec/volumes/1" },
        ]),
      );
      await putSubresource("start");
      await newVmiRunning(bootedFromDisk?.metadata.uid);
      const booted = await get("virtualmachineinstances", "installed");
      expect((booted?.status?.volumeStatus as { name: string }[] | undefined)?.map((v) => v.name)).toEqual(["root"]);
      await inGuest(namespace, "installed", "cat /proc/cmdline", INSTALLED_BOOT_ARG);
    },
  );
});
