import { describe, expect, it } from "vitest";
import { migrateArgs } from "./outgoing.ts";

const base = {
  uri: "qemu+unix:///session?socket=/state/libvirt-sock",
  domain: "test_tiny",
  socketsDir: "/var/run/kubevirt-ts/sockets",
};
const defaults = {
  postCopy: false,
  autoConverge: false,
  bandwidthMiB: 0,
  completionTimeoutPerGiB: 150,
  progressTimeout: 150,
  allowNonSharedDisks: false,
};

describe("virsh's arguments for a migration", () => {
  it("are KubeVirt's flags, peer to peer to the target's libvirt and QEMU through the sockets volume", () => {
    expect(migrateArgs({ ...base, copiedDisks: [], options: defaults })).toEqual([
      "-c",
      base.uri,
      "migrate",
      "--live",
      "--p2p",
      "--persistent",
      "--migrateuri",
      "unix:///var/run/kubevirt-ts/sockets/migration-memory.sock",
      "test_tiny",
      "qemu+unix:///session?socket=/var/run/kubevirt-ts/sockets/migration-libvirt.sock",
    ]);
  });

  it("copy the pod's own disks over NBD through the disks socket, and carry the options", () => {
    const args = migrateArgs({
      ...base,
      copiedDisks: ["vda", "vdc"],
      options: { ...defaults, postCopy: true, autoConverge: true, bandwidthMiB: 64 },
    });
    expect(args).toEqual(expect.arrayContaining(["--auto-converge", "--postcopy"]));
    expect(args.join(" ")).toContain("--bandwidth 64");
    expect(args.join(" ")).toContain(
      "--copy-storage-inc --migrate-disks vda,vdc --disks-uri unix:///var/run/kubevirt-ts/sockets/migration-disks.sock",
    );
  });
});
