import { expect } from "vitest";
import { imageOf, type SuiteNamespace } from "./cluster.ts";

// The Debian guest on a persistent root disk, as the data suites boot it:
// a VM on a claim or DataVolume, logged into on its serial console as the
// cloud-init user of the Secret debian-cloud-init.

/** How long a Debian boot (or its power-off) may take under emulation, and how often to look. */
export const BOOT = { timeout: 600_000, interval: 2_000 };
export const DEBIAN_USER = "tester";
export const DEBIAN_PASSWORD = "kubevirt-ts-e2e";
export const DEBIAN_CLOUD_INIT = "debian-cloud-init";

/** A Debian VM whose root disk is the volume source `root`, with its cloud-init disk. */
export const debianVm = (namespace: string, name: string, root: object, dataVolumeTemplates?: object[]) => ({
  apiVersion: "kubevirt.io/v1",
  kind: "VirtualMachine",
  metadata: { name, namespace },
  spec: {
    runStrategy: "Always",
    instancetype: { name: "u1.small" },
    preference: { name: "debian" },
    ...(dataVolumeTemplates ? { dataVolumeTemplates } : {}),
    template: {
      spec: {
        domain: {
          devices: {
            disks: [
              { name: "root", disk: { bus: "virtio" } },
              { name: "cloudinit", disk: { bus: "virtio" } },
            ],
          },
        },
        terminationGracePeriodSeconds: 120,
        volumes: [
          { name: "root", ...root },
          { name: "cloudinit", cloudInitNoCloud: { secretRef: { name: DEBIAN_CLOUD_INIT } } },
        ],
      },
    },
  },
});

/** The Secret debian-cloud-init: the user logs in with the password, and may use sudo. */
export const debianCloudInit = (namespace: string) => ({
  metadata: { name: DEBIAN_CLOUD_INIT, namespace },
  stringData: {
    userdata: [
      "#cloud-config",
      "users:",
      `  - name: ${DEBIAN_USER}`,
      "    lock_passwd: false",
      `    plain_text_passwd: ${DEBIAN_PASSWORD}`,
      "    shell: /bin/bash",
      "    sudo: ALL=(ALL) NOPASSWD:ALL",
      "",
    ].join("\n"),
  },
});

/** A DataVolume template filled from the Debian guest's containerDisk image. */
export const debianRootTemplate = (name: string) => ({
  metadata: { name },
  spec: {
    source: { registry: { url: `docker://${imageOf("debian-guest")}` } },
    storage: { resources: { requests: { storage: "4Gi" } } },
  },
});

/** Waits on a suite's VMs: until one's VMI runs, or until it is stopped (runStrategy Halted) and its VMI gone. */
export function vmWaits({ name: namespace, get, kubectl }: SuiteNamespace) {
  return {
    running: async (vm: string) => {
      await expect.poll(async () => (await get("virtualmachineinstances", vm))?.status?.phase, BOOT).toBe("Running");
    },
    stopped: async (vm: string) => {
      await kubectl("patch", "vm", vm, "-n", namespace, "--type=merge", "-p", '{"spec":{"runStrategy":"Halted"}}');
      await expect.poll(() => get("virtualmachineinstances", vm), BOOT).toBeUndefined();
    },
  };
}
