import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseAllDocuments, stringify } from "yaml";
import { core, imageOf, suiteNamespace } from "./cluster.ts";
import { KUBEVIRT_EXAMPLES_VERSION, kubevirtExamples } from "./kubevirt-examples.ts";

// KubeVirt's own examples/ (docs/kubevirt-examples.md), applied with kubectl
// as they are, but for their images: every containerDisk is the blank disk,
// a kernel boot the tiny guest's kernel and initrd. What kubevirt-ts accepts
// must reach Running (a VM started with the start subresource, as virtctl
// does; all the examples' VMs are Halted); what it refuses must be refused
// naming the field the table below names. The instancetype and preference
// examples are applied first, as on a KubeVirt cluster, where the VMs that
// name them are refused too: their templates set memory.guest as well.

const { name: namespace, kubectl, get, launcherPods } = suiteNamespace("e2e-examples");
const poll = { timeout: 180_000, interval: 2_000 };

type Outcome =
  | { runs: true; claims?: string[] }
  | { refused: string }
  | { stored: string }
  | { migrates: string }
  | { skipped: string };

const runs = (claims?: string[]): Outcome => ({ runs: true, ...(claims ? { claims } : {}) });
const memoryConflict: Outcome = { refused: "spec.template.spec.domain.memory.guest" };

/** What kubevirt-ts does with each of KubeVirt's examples at KUBEVIRT_EXAMPLES_VERSION. */
const EXPECTED: Record<string, Outcome> = {
  "clarge.yaml": { stored: "an instancetype" },
  "cluster-csmall.yaml": { stored: "a cluster instancetype" },
  "csmall.yaml": { stored: "an instancetype" },
  "virtio.yaml": { stored: "a preference" },
  "windows.yaml": { stored: "a preference" },
  "non-preemtible.yaml": { stored: "a PriorityClass, which vm-priorityclass.yaml names" },
  "preemtible.yaml": { skipped: "a PriorityClass no example names" },
  "pgpu-resource-claim-tmpl.yaml": { skipped: "a Kubernetes kind for GPUs (dynamic resource allocation)" },
  "example-migration-policy.yaml": { stored: "a MigrationPolicy; no VMI here has its labels" },
  "migration-job.yaml": { migrates: "vmi-migratable.yaml" },
  "vm-pool-cirros.yaml": { skipped: "VirtualMachinePool: not served" },
  "vmi-preset-small.yaml": { skipped: "VirtualMachineInstancePreset: not served (deprecated in KubeVirt)" },
  "vmi-replicaset-cirros.yaml": { skipped: "VirtualMachineInstanceReplicaSet: not served" },
  "vm-alpine-datavolume.yaml": {
    stored: "its DataVolume imports an image from the internet, which this machine cannot reach",
  },
  "vm-alpine-multipvc.yaml": runs(["disk-alpine", "disk-custom"]),
  "vm-cirros-clarge-virtio.yaml": memoryConflict,
  "vm-cirros-clarge-windows.yaml": memoryConflict,
  "vm-cirros-clarge.yaml": memoryConflict,
  "vm-cirros-cluster-csmall.yaml": memoryConflict,
  "vm-cirros-csmall.yaml": memoryConflict,
  "vm-windows-clarge-windows.yaml": memoryConflict,
  "vm-cirros-sata.yaml": runs(),
  "vm-cirros.yaml": runs(),
  "vm-priorityclass.yaml": runs(),
  "vm-cirros-with-sidecar-hook-configmap.yaml": {
    refused: "spec.template.metadata.annotations.hooks.kubevirt.io/hookSidecars",
  },
  "vmi-alpine-efi.yaml": runs(),
  "vmi-arm.yaml": runs(),
  "vmi-ephemeral.yaml": runs(),
  "vmi-fedora.yaml": runs(),
  "vmi-kernel-boot.yaml": runs(),
  "vmi-masquerade.yaml": runs(),
  "vmi-migratable.yaml": runs(),
  "vmi-nocloud.yaml": runs(),
  "vmi-pvc.yaml": runs(["disk-alpine"]),
  "vmi-sata.yaml": runs(),
  "vmi-secureboot.yaml": runs(),
  "vmi-windows.yaml": runs(["disk-windows"]),
  "vmi-dra-pgpu.yaml": { refused: "spec.domain.devices.gpus" },
  "vmi-fedora-isolated.yaml": { refused: "spec.domain.cpu.dedicatedCpuPlacement" },
  "vmi-gpu.yaml": { refused: "spec.domain.devices.gpus" },
  "vmi-host-disk.yaml": { refused: "spec.volumes[0].hostDisk" },
  "vmi-multus-multiple-net.yaml": { refused: "spec.networks[1].multus" },
  "vmi-multus-ptp.yaml": { refused: "spec.networks[0].multus" },
  "vmi-sriov.yaml": { refused: "spec.domain.devices.interfaces[1].sriov" },
  "vmi-usb.yaml": { refused: "spec.domain.devices.hostDevices" },
  "vmi-with-sidecar-hook-configmap.yaml": { refused: "metadata.annotations.hooks.kubevirt.io/hookSidecars" },
  "vmi-with-sidecar-hook.yaml": { refused: "metadata.annotations.hooks.kubevirt.io/hookSidecars" },
};

/** The example as applied here: its images replaced by ones this cluster has, nothing else changed. */
function withLocalImages(object: unknown): unknown {
  if (Array.isArray(object)) return object.map(withLocalImages);
  if (object === null || typeof object !== "object") return object;
  const entries = Object.entries(object as Record<string, unknown>);
  const record = Object.fromEntries(entries.map(([key, value]) => [key, withLocalImages(value)]));
  if ("kernelPath" in record || "initrdPath" in record) {
    return { ...record, image: imageOf("tiny-guest"), kernelPath: "/boot/vmlinuz", initrdPath: "/boot/initrd.gz" };
  }
  if (typeof record.image === "string") return { ...record, image: imageOf("blank-disk") };
  return record;
}

const examples: Record<string, { kind: string; name: string; clusterScoped: boolean; file: string }> = {};
const workDir = mkdtempSync(join(tmpdir(), "kubevirt-examples-"));

/** kubectl create of the example: "created", or kubectl's error. */
async function create(file: string): Promise<string> {
  const example = examples[file];
  if (!example) throw new Error(`no example ${file}`);
  return kubectl("create", "-n", namespace, "-f", example.file).then(
    () => "created",
    (error: unknown) => String((error as { stderr?: string }).stderr ?? error),
  );
}

const CLUSTER_KINDS = new Set([
  "VirtualMachineClusterInstancetype",
  "VirtualMachineClusterPreference",
  "PriorityClass",
  "MigrationPolicy",
]);

beforeAll(async () => {
  const dir = await kubevirtExamples();
  for (const file of readdirSync(dir)
    .filter((f) => f.endsWith(".yaml"))
    .sort()) {
    const documents = parseAllDocuments(readFileSync(join(dir, file), "utf8"))
      .map((d) => d.toJSON() as { kind: string; metadata: { name: string } } | null)
      .filter((d) => d !== null);
    const [object] = documents;
    if (!object || documents.length !== 1)
      throw new Error(`${file}: expected one object, found ${String(documents.length)}`);
    const local = join(workDir, file);
    writeFileSync(local, stringify(withLocalImages(object)));
    examples[file] = {
      kind: object.kind,
      name: object.metadata.name,
      clusterScoped: CLUSTER_KINDS.has(object.kind),
      file: local,
    };
  }
  for (const claim of ["disk-alpine", "disk-custom", "disk-windows"]) {
    await core.createNamespacedPersistentVolumeClaim({
      namespace,
      body: {
        metadata: { name: claim },
        spec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "1Gi" } } },
      },
    });
  }
}, 300_000);

afterAll(async () => {
  // Cluster-scoped examples go with the suite; the namespace takes the rest.
  for (const example of Object.values(examples).filter((e) => e.clusterScoped))
    await kubectl("delete", "--ignore-not-found", "-f", example.file).catch(() => undefined);
});

describe(`KubeVirt's examples at ${KUBEVIRT_EXAMPLES_VERSION}`, () => {
  it("are all in the table of what kubevirt-ts does with them, and the table names no example that is gone", () => {
    expect(Object.keys(examples).sort()).toEqual(Object.keys(EXPECTED).sort());
  });

  it("instancetypes, preferences and the PriorityClass an example names: stored as they are", async () => {
    for (const [file, outcome] of Object.entries(EXPECTED)) {
      if (!("stored" in outcome) || file === "vm-alpine-datavolume.yaml") continue;
      expect(`${file}: ${await create(file)}`).toBe(`${file}: created`);
    }
  });

  it("what kubevirt-ts refuses: refused by kubectl's create, naming the field", async () => {
    const refusals = Object.entries(EXPECTED).filter(
      (entry): entry is [string, { refused: string }] => "refused" in entry[1],
    );
    for (const [file, { refused }] of refusals) {
      const answer = await create(file);
      expect(answer, file).not.toBe("created");
      expect(answer, file).toContain(refused);
    }
  });

  it("a VM whose DataVolume needs the internet: stored", async () => {
    expect(await create("vm-alpine-datavolume.yaml")).toBe("created");
    expect(await get("virtualmachines", examples["vm-alpine-datavolume.yaml"]?.name ?? "")).toBeDefined();
  });

  it(
    "what kubevirt-ts accepts: created unchanged and Running, a VM once started as virtctl start does",
    { timeout: 1_200_000 },
    async () => {
      const runnable = Object.entries(EXPECTED)
        .filter(([, outcome]) => "runs" in outcome)
        .map(([file]) => file);
      // Those on the same claim one after the other (a disk image is opened by one QEMU at a time); the rest three at a
      // time.
      const lanes: string[][] = [
        [],
        [],
        [],
        runnable.filter((f) => f === "vm-alpine-multipvc.yaml" || f === "vmi-pvc.yaml"),
      ];
      runnable.filter((f) => !(lanes[3] ?? []).includes(f)).forEach((f, i) => lanes[i % 3]?.push(f));
      /** The example's way to Running; what went wrong, or undefined. */
      const run = async (file: string): Promise<string | undefined> => {
        const example = examples[file];
        if (!example) return `${file}: no such example`;
        const created = await create(file);
        if (created !== "created") return `${file}: ${created}`;
        if (example.kind === "VirtualMachine") {
          await kubectl(
            "replace",
            "--raw",
            `/apis/subresources.kubevirt.io/v1/namespaces/${namespace}/virtualmachines/${example.name}/start`,
            "-f",
            writeOptions(),
          );
        }
        const deadline = Date.now() + poll.timeout;
        let vmi = await get("virtualmachineinstances", example.name);
        while (vmi?.status?.phase !== "Running" && Date.now() < deadline) {
          await new Promise((resolve) => setTimeout(resolve, poll.interval));
          vmi = await get("virtualmachineinstances", example.name);
        }
        const outcome =
          vmi?.status?.phase === "Running"
            ? undefined
            : `${file}: ${String(vmi?.status?.phase)}: ${JSON.stringify(vmi?.status?.conditions ?? [])}`;
        await kubectl("delete", "-n", namespace, "--wait=true", "-f", example.file);
        await expect.poll(() => get("virtualmachineinstances", example.name), poll).toBeUndefined();
        return outcome;
      };
      const failures: string[] = [];
      await Promise.all(
        lanes.map(async (lane) => {
          for (const file of lane) {
            const failure = await run(file);
            if (failure !== undefined) failures.push(failure);
          }
        }),
      );
      expect(failures).toEqual([]);
    },
  );
});

describe(`KubeVirt's masquerade example at ${KUBEVIRT_EXAMPLES_VERSION}`, () => {
  it("runs with its ports, the pod forwarding them alone, and without, the pod forwarding every port", async () => {
    const example = examples["vmi-masquerade.yaml"];
    if (!example) throw new Error("no vmi-masquerade.yaml");
    /** The example created from that file, once Running: the rules its launcher pod's network-setup was given. */
    const rulesOf = async (file: string) => {
      await kubectl("create", "-n", namespace, "-f", file);
      await expect
        .poll(async () => (await get("virtualmachineinstances", example.name))?.status?.phase, poll)
        .toBe("Running");
      const [pod] = await launcherPods();
      const setup = pod?.spec?.initContainers?.find((c) => c.name === "network-setup");
      await kubectl("delete", "-n", namespace, "--wait=true", "-f", file);
      await expect.poll(() => get("virtualmachineinstances", example.name), poll).toBeUndefined();
      return setup?.env?.find((e) => e.name === "KUBEVIRT_TS_NETWORK_RULES")?.value ?? "no network-setup";
    };
    const listed = await rulesOf(example.file);
    expect(listed).toContain('iifname "eth0" tcp dport { 80 } dnat to 198.19.254.2');
    expect(listed).not.toContain("meta l4proto");
    const object = parseAllDocuments(readFileSync(example.file, "utf8"))[0]?.toJSON() as {
      spec: { domain: { devices: { interfaces: { ports?: unknown }[] } } };
    };
    for (const iface of object.spec.domain.devices.interfaces) delete iface.ports;
    const withoutPorts = join(workDir, "vmi-masquerade-without-ports.yaml");
    writeFileSync(withoutPorts, stringify(object));
    expect(await rulesOf(withoutPorts)).toContain('iifname "eth0" meta l4proto { tcp, udp } dnat to 198.19.254.2');
  });
});

describe(`KubeVirt's migration example at ${KUBEVIRT_EXAMPLES_VERSION}`, () => {
  it("moves the VMI it names, vmi-migratable, to the other node", { timeout: 600_000 }, async () => {
    const migrating = Object.entries(EXPECTED).flatMap(([file, o]) =>
      "migrates" in o ? [{ job: file, vmiFile: o.migrates }] : [],
    );
    expect(migrating).toHaveLength(1);
    const { job = "", vmiFile = "" } = migrating[0] ?? {};
    const name = examples[vmiFile]?.name ?? "";
    expect(await create(vmiFile)).toBe("created");
    await expect.poll(async () => (await get("virtualmachineinstances", name))?.status?.phase, poll).toBe("Running");
    const liveMigratable = async () =>
      (
        (await get("virtualmachineinstances", name))?.status?.conditions as
          { type: string; status: string }[] | undefined
      )?.find((c) => c.type === "LiveMigratable")?.status;
    await expect.poll(liveMigratable, poll).toBe("True");
    const source = (await get("virtualmachineinstances", name))?.status?.nodeName as string;

    expect(await create(job)).toBe("created");
    const migration = examples[job]?.name ?? "";
    await expect
      .poll(async () => (await get("virtualmachineinstancemigrations", migration))?.status?.phase, {
        timeout: 300_000,
        interval: 2_000,
      })
      .toBe("Succeeded");
    await expect
      .poll(async () => (await get("virtualmachineinstances", name))?.status?.nodeName, poll)
      .not.toBe(source);
    expect((await get("virtualmachineinstances", name))?.status?.phase).toBe("Running");
    await kubectl("delete", "-n", namespace, "--wait=true", "-f", examples[vmiFile]?.file ?? "");
  });
});

function writeOptions(): string {
  const file = join(workDir, "start-options.json");
  writeFileSync(file, "{}");
  return file;
}
