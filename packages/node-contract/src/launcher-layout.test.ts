import { describe, expect, it } from "vitest";
import { LAUNCHER_OPS_PORT } from "@kubevirt-ts/kubevirt-api";
import { LauncherDir, LauncherEnv, LauncherVolume, SOCKETS_VOLUME_ON_NODE, launcherEnv } from "./launcher-layout.ts";

describe("the launcher pod's layout", () => {
  const env = launcherEnv({
    allowEmulation: true,
    gracePeriodSeconds: 45,
    guestNetwork: { address: "198.18.77.0", prefix: 26 },
  });

  it("gives the launcher every variable it reads, once, and nothing else", () => {
    expect(env.map((e) => e.name).sort()).toEqual(Object.values(LauncherEnv).sort());
    expect(new Set(Object.values(LauncherEnv)).size).toBe(Object.values(LauncherEnv).length);
  });

  it.each([
    ["OPS_PORT", String(LAUNCHER_OPS_PORT)],
    ["SOCKETS_DIR", "/var/run/kubevirt-ts/sockets"],
    ["STATE_DIR", "/var/run/kubevirt-ts/launcher"],
    ["CONTAINER_DISKS_DIR", "/var/run/kubevirt-ts/container-disks"],
    ["KERNEL_BOOT_DIR", "/var/run/kubevirt-ts/kernel-boot"],
    ["CLOUD_INIT_SECRETS_DIR", "/var/run/kubevirt-ts/cloud-init-secrets"],
    ["CONFIG_VOLUMES_DIR", "/var/run/kubevirt-ts/config-volumes"],
    ["ACCESS_CREDENTIALS_DIR", "/var/run/kubevirt-ts/access-credentials"],
    ["ALLOW_EMULATION", "true"],
    ["GRACE_PERIOD_SECONDS", "45"],
    ["GUEST_NETWORK", "198.18.77.0/26"],
  ])("sets %s to %s", (name, value) => {
    expect(env).toContainEqual({ name, value });
  });

  it("keeps every folder apart, so no volume is mounted over another", () => {
    const dirs = Object.values(LauncherDir);
    for (const a of dirs) for (const b of dirs) if (a !== b) expect(b.startsWith(`${a}/`)).toBe(false);
    expect(new Set(Object.values(LauncherVolume)).size).toBe(Object.values(LauncherVolume).length);
  });

  it("finds the sockets volume where the kubelet puts an emptyDir of that name", () => {
    expect(SOCKETS_VOLUME_ON_NODE).toBe("kubernetes.io~empty-dir/sockets");
  });
});
