import { open } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { claimDevicePath } from "@kubevirt-ts/vm-rules";
import { core, custom, imageOf, suiteNamespace, volumeOnMachine } from "./cluster.ts";
import { tinyVmOnClaim } from "../manifests.ts";
import { inGuest as inGuestOf } from "./console.ts";

// Disks that outlive their VM: a PersistentVolumeClaim of the cluster's
// default StorageClass (the local cluster's local-path-provisioner) as the
// tiny guest's disk. What the guest writes is there after a stop and a start,
// and for a new VM on the same claim after the first is deleted; on the node
// it is the claim's disk.img. A VM whose claim does not exist waits, says
// so, and starts once the claim is made. A Block-mode claim (the local
// cluster's local-block StorageClass: local volumes on loop devices) is the
// guest's disk as the raw device, which the launcher's user owns.

const { name: namespace, kubectl, get, launcherPods } = suiteNamespace("e2e-disk");
const poll = { timeout: 240_000, interval: 1_000 };
const tinyGuest = imageOf("tiny-guest");
const MARKER = `kubevirt-ts-persisted-${Date.now().toString(36)}`;
const CLAIM_BYTES = 256 * 1024 * 1024;

const vmOnClaim = (name: string, claimName: string) => tinyVmOnClaim(name, tinyGuest, claimName, namespace);

const createVm = (body: object) =>
  custom.createNamespacedCustomObject({
    group: "kubevirt.io",
    version: "v1",
    namespace,
    plural: "virtualmachines",
    body,
  });
const createClaim = (name: string) =>
  core.createNamespacedPersistentVolumeClaim({
    namespace,
    body: {
      metadata: { name },
      spec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: String(CLAIM_BYTES) } } },
    },
  });

const inGuest = (vm: string, command: string, expected: string) => inGuestOf(namespace, vm, command, expected);

const runningUid = async (vm: string) => {
  await expect.poll(async () => (await get("virtualmachineinstances", vm))?.status?.phase, poll).toBe("Running");
  return (await get("virtualmachineinstances", vm))?.metadata.uid;
};

describe("a VM's disk on a PersistentVolumeClaim", () => {
  it("is the claim's disk.img, made sparse at the claim's size, and reported in the VMI's volume status", async () => {
    await createClaim("data");
    await createVm(vmOnClaim("keeper", "data"));
    await runningUid("keeper");

    const claim = await core.readNamespacedPersistentVolumeClaim({ namespace, name: "data" });
    expect(claim.status?.phase).toBe("Bound");
    expect(claim.spec?.storageClassName).toBe("local-path");
    const volumes = (await get("virtualmachineinstances", "keeper"))?.status?.volumeStatus as {
      name: string;
      target: string;
      persistentVolumeClaimInfo?: Record<string, unknown>;
    }[];
    expect(volumes.find((v) => v.name === "data")).toEqual({
      name: "data",
      target: "vda",
      persistentVolumeClaimInfo: {
        claimName: "data",
        accessModes: ["ReadWriteOnce"],
        volumeMode: "Filesystem",
        capacity: { storage: String(CLAIM_BYTES) },
        requests: { storage: String(CLAIM_BYTES) },
        preallocated: false,
        filesystemOverhead: "0.055",
      },
    });
    const [pod] = await launcherPods();
    const [size, blocks] = (
      await kubectl(
        "exec",
        "-n",
        namespace,
        pod?.metadata?.name ?? "",
        "-c",
        "compute",
        "--",
        "stat",
        "-c",
        "%s %b",
        "/var/run/kubevirt-ts/vmi-disks/data/disk.img",
      )
    )
      .trim()
      .split(" ")
      .map(Number);
    expect(size).toBe(CLAIM_BYTES);
    // Sparse: only what was written takes room (512-byte blocks).
    expect((blocks ?? Infinity) * 512).toBeLessThan(CLAIM_BYTES / 16);
  });

  it("keeps what the guest wrote across a stop and a start, in the claim's folder on the node", async () => {
    await inGuest(
      "keeper",
      `echo ${MARKER} | dd of=/dev/vda conv=fsync 2>/dev/null && echo wrote-$((40+2))`,
      "wrote-42",
    );
    const before = await runningUid("keeper");
    await kubectl("patch", "vm", "keeper", "-n", namespace, "--type=merge", "-p", '{"spec":{"runStrategy":"Halted"}}');
    await expect.poll(() => get("virtualmachineinstances", "keeper"), poll).toBeUndefined();

    // The claim's folder is on its node, where the provisioner made it: the guest's bytes are at the start of disk.img.
    const volume = await core.readPersistentVolume({
      name: (await core.readNamespacedPersistentVolumeClaim({ namespace, name: "data" })).spec?.volumeName ?? "",
    });
    const folder = volumeOnMachine(volume);
    const file = await open(join(folder, "disk.img"));
    const head = Buffer.alloc(64);
    await file.read(head, 0, 64, 0);
    await file.close();
    expect(head.toString("latin1")).toContain(MARKER);

    await kubectl("patch", "vm", "keeper", "-n", namespace, "--type=merge", "-p", '{"spec":{"runStrategy":"Always"}}');
    expect(await runningUid("keeper")).not.toBe(before);
    await inGuest(
      "keeper",
      "dd if=/dev/vda bs=64 count=1 2>/dev/null | tr -d '\\000'; echo; echo read-$((40+3))",
      MARKER,
    );
  });

  it("outlives its VM: a new VM on the same claim reads what the first wrote", async () => {
    await custom.deleteNamespacedCustomObject({
      group: "kubevirt.io",
      version: "v1",
      namespace,
      plural: "virtualmachines",
      name: "keeper",
    });
    await expect.poll(() => get("virtualmachines", "keeper"), poll).toBeUndefined();
    expect((await core.readNamespacedPersistentVolumeClaim({ namespace, name: "data" })).status?.phase).toBe("Bound");

    await createVm(vmOnClaim("heir", "data"));
    await runningUid("heir");
    await inGuest(
      "heir",
      "dd if=/dev/vda bs=64 count=1 2>/dev/null | tr -d '\\000'; echo; echo read-$((40+4))",
      MARKER,
    );
  });

  it("waits for a claim that does not exist, saying which, and starts once it is made", async () => {
    await createVm(vmOnClaim("waiter", "later"));
    await expect
      .poll(async () => (await get("virtualmachines", "waiter"))?.status?.printableStatus, poll)
      .toBe("ErrorPvcNotFound");
    const vmi = await get("virtualmachineinstances", "waiter");
    const synchronized = (vmi?.status?.conditions as { type: string; reason?: string; message?: string }[]).find(
      (c) => c.type === "Synchronized",
    );
    expect(synchronized?.reason).toBe("FailedPvcNotFound");
    expect(synchronized?.message).toContain(`PVC ${namespace}/later does not exist`);
    expect(vmi?.status?.phase).toBe("Pending");
    expect((await launcherPods()).filter((p) => p.metadata?.labels?.["vm.kubevirt.io/name"] === "waiter")).toEqual([]);

    await createClaim("later");
    await runningUid("waiter");
    expect((await get("virtualmachines", "waiter"))?.status?.printableStatus).toBe("Running");
  });
});

describe("a VM's disk on a Block-mode PersistentVolumeClaim", () => {
  it(
    "is the claim's device, owned by the launcher's user, and keeps what the guest wrote " +
      "on the node's device across a stop and a start",
    async () => {
      await core.createNamespacedPersistentVolumeClaim({
        namespace,
        body: {
          metadata: { name: "raw" },
          spec: {
            storageClassName: "local-block",
            volumeMode: "Block",
            accessModes: ["ReadWriteOnce"],
            resources: { requests: { storage: "256Mi" } },
          },
        },
      });
      await createVm(vmOnClaim("raw-disk", "raw"));
      const before = await runningUid("raw-disk");
      const volumes = (await get("virtualmachineinstances", "raw-disk"))?.status?.volumeStatus as {
        name: string;
        persistentVolumeClaimInfo?: { volumeMode?: string };
      }[];
      expect(volumes.find((v) => v.name === "data")?.persistentVolumeClaimInfo?.volumeMode).toBe("Block");
      const pod = (await launcherPods()).find((p) => p.metadata?.labels?.["vm.kubevirt.io/name"] === "raw-disk");
      expect(
        (
          await kubectl(
            "exec",
            "-n",
            namespace,
            pod?.metadata?.name ?? "",
            "-c",
            "compute",
            "--",
            "stat",
            "-c",
            "%F %u",
            claimDevicePath("data"),
          )
        ).trim(),
      ).toBe("block special file 107");

      await inGuest(
        "raw-disk",
        `echo ${MARKER}-raw | dd of=/dev/vda conv=fsync 2>/dev/null && echo wrote-$((40+5))`,
        "wrote-45",
      );
      await kubectl(
        "patch",
        "vm",
        "raw-disk",
        "-n",
        namespace,
        "--type=merge",
        "-p",
        '{"spec":{"runStrategy":"Halted"}}',
      );
      await expect.poll(() => get("virtualmachineinstances", "raw-disk"), poll).toBeUndefined();
      // The claim's volume is a device of this node: the guest's bytes are at its start.
      const volume = await core.readPersistentVolume({
        name: (await core.readNamespacedPersistentVolumeClaim({ namespace, name: "raw" })).spec?.volumeName ?? "",
      });
      expect(volume.spec?.volumeMode).toBe("Block");
      const device = await open(volumeOnMachine(volume));
      const head = Buffer.alloc(64);
      await device.read(head, 0, 64, 0);
      await device.close();
      expect(head.toString("latin1")).toContain(`${MARKER}-raw`);

      await kubectl(
        "patch",
        "vm",
        "raw-disk",
        "-n",
        namespace,
        "--type=merge",
        "-p",
        '{"spec":{"runStrategy":"Always"}}',
      );
      expect(await runningUid("raw-disk")).not.toBe(before);
      await inGuest(
        "raw-disk",
        "dd if=/dev/vda bs=64 count=1 2>/dev/null | tr -d '\\000'; echo; echo read-$((40+6))",
        `${MARKER}-raw`,
      );
    },
  );
});

describe("a VM that infers its instancetype and preference from its disk's claim (inferFromVolume)", () => {
  const inferring = (name: string, claimName: string, policy?: "Ignore") => {
    const vm = vmOnClaim(name, claimName);
    const matcher = { inferFromVolume: "data", ...(policy ? { inferFromVolumeFailurePolicy: policy } : {}) };
    return { ...vm, spec: { ...vm.spec, runStrategy: "Halted", instancetype: matcher, preference: matcher } };
  };
  const labelledClaim = (name: string, labels: Record<string, string>) =>
    core.createNamespacedPersistentVolumeClaim({
      namespace,
      body: {
        metadata: { name, labels },
        spec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: String(CLAIM_BYTES) } } },
      },
    });

  it(
    "is stored with the instancetype and preference its claim's labels name, and " +
      "without its fallback memory under Ignore",
    async () => {
      await labelledClaim("golden", {
        "instancetype.kubevirt.io/default-instancetype": "u1.small",
        "instancetype.kubevirt.io/default-preference": "debian",
      });
      await createVm(inferring("inferred", "golden", "Ignore"));
      const stored = (await get("virtualmachines", "inferred")) as unknown as {
        spec: { instancetype?: object; preference?: object; template: { spec: { domain: object } } };
      };
      expect(stored.spec.instancetype).toEqual({ name: "u1.small" });
      expect(stored.spec.preference).toEqual({ name: "debian" });
      expect(stored.spec.template.spec.domain).not.toHaveProperty("memory");
      // The controller sizes it from the inferred instancetype, as from one named.
      await expect
        .poll(
          async () =>
            ((await get("virtualmachines", "inferred"))?.status?.instancetypeRef as { name?: string } | undefined)
              ?.name,
          poll,
        )
        .toBe("u1.small");
    },
  );

  it("is refused, naming inferFromVolume, when its claim names no instancetype and the policy is Reject", async () => {
    await labelledClaim("plain", {});
    const refused = await createVm(inferring("not-inferred", "plain")).then(
      () => "created",
      (error: unknown) => String((error as { body?: unknown }).body ?? error),
    );
    expect(refused).toMatch(
      /spec\.instancetype\.inferFromVolume cannot infer .*\/plain has no .*\/default-instancetype label/,
    );
  });
});
