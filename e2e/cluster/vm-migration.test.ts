import { writeFile } from "node:fs/promises";
import { REPO_ROOT } from "@kubevirt-ts/control-plane";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { tinyVm } from "../manifests.ts";
import { core, createVm, custom, imageOf, nodeNames, suiteNamespace, undefinedIfNotFound } from "./cluster.ts";
import { inGuest, openConsole, serialLogin } from "./console.ts";
import { BOOT } from "./debian.ts";
import { runPod } from "./pods.ts";

// Live migration on two nodes, as a user drives it: virtctl migrate (the
// migrate subresource), a VirtualMachineInstanceMigration deleted to cancel
// it, and kubectl drain of the node. The guest keeps running throughout: its
// uptime and a counter it keeps (on its serial console and in a file) go on
// increasing, and a port it serves answers from a pod on its new address.

const { name: namespace, kubectl, get, launcherPods } = suiteNamespace("e2e-migrate");
const poll = { timeout: 300_000, interval: 1_000 };
const migrations = { group: "kubevirt.io", version: "v1", namespace, plural: "virtualmachineinstancemigrations" };
const migrationPolicies = { group: "migrations.kubevirt.io", version: "v1alpha1", plural: "migrationpolicies" };

interface MigrationState {
  migrationUid?: string;
  migrationPolicyName?: string;
  migrationConfiguration?: Record<string, unknown>;
  sourceNode?: string;
  targetNode?: string;
  sourcePod?: string;
  targetPod?: string;
  completed?: boolean;
  failed?: boolean;
  failureReason?: string;
  abortStatus?: string;
  mode?: string;
  startTimestamp?: string;
  endTimestamp?: string;
}
interface Vmi {
  metadata: { uid?: string; labels?: Record<string, string> };
  status?: {
    phase?: string;
    nodeName?: string;
    migrationState?: MigrationState;
    interfaces?: { ipAddress?: string }[];
    conditions?: { type: string; status: string; reason?: string }[];
  };
}
interface Migration {
  metadata: { name?: string; uid?: string; deletionTimestamp?: string; labels?: Record<string, string> };
  status?: { phase?: string };
}

/** The VMI, which must be there. */
async function vmi(name: string): Promise<Vmi> {
  const found = await get("virtualmachineinstances", name);
  if (!found) throw new Error(`VMI ${namespace}/${name} is not there`);
  return found;
}
const listMigrations = async () =>
  ((await custom.listNamespacedCustomObject(migrations)) as { items: Migration[] }).items;
const readMigration = (name: string) =>
  custom.getNamespacedCustomObject({ ...migrations, name }).then((m) => m as Migration, undefinedIfNotFound);

/**
 * A running tiny guest that counts every second (on its serial console and into /tmp/count) and answers "pong" on port
 * 8080.
 */
async function countingVm(name: string, evictionStrategy?: string, labels?: Record<string, string>): Promise<Vmi> {
  const vm = tinyVm(name, imageOf("tiny-guest"), namespace);
  if (labels) Object.assign(vm.spec.template, { metadata: { labels } });
  // Its port is forwarded to the guest from the pod's address (QEMU's user network forwards the ports declared).
  Object.assign(vm.spec.template.spec.domain.devices, {
    interfaces: [{ name: "default", masquerade: {}, ports: [{ name: "pong", port: 8080 }] }],
  });
  if (evictionStrategy) Object.assign(vm.spec.template.spec, { evictionStrategy });
  await createVm(namespace, vm);
  await expect.poll(async () => (await vmi(name)).status?.phase, poll).toBe("Running");
  await expect
    .poll(async () => (await vmi(name)).status?.conditions?.find((c) => c.type === "LiveMigratable")?.status, poll)
    .toBe("True");
  await inGuest(
    namespace,
    name,
    "(i=0; while :; do i=$((i+1)); echo $i > /tmp/count; echo tick-$i > /dev/console; sleep 1; " +
      "done) & nc -ll -p 8080 -e echo pong & echo started-$((40+2))",
    "started-42",
  );
  return await vmi(name);
}

/** The guest's uptime and counter, read on its serial console (through the handler of whichever node it runs on). */
async function guestCounters(name: string): Promise<{ uptime: number; count: number }> {
  const text = await inGuest(
    namespace,
    name,
    "echo counters $(cut -d. -f1 /proc/uptime) $(cat /tmp/count) $((6*7))",
    " 42",
  );
  const [, uptime = "NaN", count = "NaN"] = /counters (\d+) (\d+) 42/.exec(text) ?? [];
  return { uptime: Number(uptime), count: Number(count) };
}

/** What the guest's port 8080 answers to a pod, at the VMI's address. */
async function pong(address: string): Promise<string> {
  const script =
    `const s = require("node:net").connect(8080, ${JSON.stringify(address)}); let t = ""; ` +
    `s.on("data", (d) => (t += d)); s.on("close", () => console.log("answer:" + t.trim())); ` +
    `s.on("error", (e) => { console.log("error:" + e.message); }); setTimeout(() => ` +
    "process.exit(0), 10000).unref();";
  return runPod(core, { namespace, image: imageOf("virt-controller"), command: ["node", "-e", script] });
}

/** The migration virtctl migrate makes: PUT on the VM's migrate subresource, as the admin. */
async function virtctlMigrate(vm: string, options: object = {}): Promise<Migration> {
  const before = new Set((await listMigrations()).map((m) => m.metadata.name));
  const body = join(tmpdir(), `migrate-${vm}-${String(Date.now())}.json`);
  await writeFile(body, JSON.stringify(options));
  await kubectl(
    "replace",
    "--raw",
    `/apis/subresources.kubevirt.io/v1/namespaces/${namespace}/virtualmachines/${vm}/migrate`,
    "-f",
    body,
  );
  const created = (await listMigrations()).find((m) => !before.has(m.metadata.name));
  if (!created) throw new Error(`the migrate subresource made no migration of ${vm}`);
  expect(created.metadata.name).toMatch(/^kubevirt-migrate-vm-/);
  // KubeVirt's label, which virtctl migrate-cancel finds the VMI's migrations by.
  expect(created.metadata.labels?.["kubevirt.io/vmi-name"]).toBe(vm);
  return created;
}

const otherNode = (node: string | undefined) => nodeNames.find((n) => n !== node) ?? "";

describe("live migration between the two nodes", () => {
  it(
    "moves a running guest to the other node: it keeps counting, its node " + "and address move, its old pod goes",
    async () => {
      expect(
        nodeNames.length,
        "migration needs a cluster of two nodes: make cluster-up NODES=2",
      ).toBeGreaterThanOrEqual(2);
      const before = await countingVm("mover");
      const source = before.status?.nodeName;
      const [sourcePod] = await launcherPods();
      expect((await pong(sourcePod?.status?.podIP ?? "")).trim()).toContain("answer:pong");
      const counted = await guestCounters("mover");
      expect(counted.count).toBeGreaterThan(0);

      const migration = await virtctlMigrate("mover");
      await expect
        .poll(async () => (await readMigration(migration.metadata.name ?? ""))?.status?.phase, poll)
        .toBe("Succeeded");
      // The controller moves the VMI to the target once the source reported the guest gone: a moment after the
      // migration's phase.
      await expect.poll(async () => (await vmi("mover")).status?.nodeName, poll).toBe(otherNode(source));
      const after = await vmi("mover");
      expect(after.metadata.uid).toBe(before.metadata.uid);
      expect(after.status?.nodeName).toBe(otherNode(source));
      const state = after.status?.migrationState;
      expect([state?.sourceNode, state?.targetNode, state?.completed, state?.failed ?? false, state?.mode]).toEqual([
        source,
        otherNode(source),
        true,
        false,
        "PreCopy",
      ]);
      expect(Date.parse(state?.endTimestamp ?? "")).toBeGreaterThanOrEqual(Date.parse(state?.startTimestamp ?? ""));
      // KubeVirt's handler events on both nodes: the source's migrating, the target's prepared and migrated to.
      const handlerEvents = async () =>
        (
          await core.listNamespacedEvent({ namespace, fieldSelector: `involvedObject.uid=${after.metadata.uid ?? ""}` })
        ).items
          .filter(
            (e) =>
              e.source?.component === "virt-handler" &&
              ["Migrating", "PreparingTarget", "Migrated"].includes(e.reason ?? ""),
          )
          .map((e) => `${e.source?.host ?? ""} ${e.type ?? ""} ${e.reason ?? ""}`)
          .sort();
      const target = otherNode(source);
      await expect
        .poll(handlerEvents, poll)
        .toEqual(
          [`${source ?? ""} Normal Migrating`, `${target} Normal Migrated`, `${target} Normal PreparingTarget`].sort(),
        );
      // The source pod goes; the target pod is the VMI's one launcher pod, on the new node.
      await expect
        .poll(
          async () => (await launcherPods()).filter((p) => !p.metadata?.deletionTimestamp).map((p) => p.spec?.nodeName),
          poll,
        )
        .toEqual([otherNode(source)]);
      await expect
        .poll(async () => (await launcherPods()).some((p) => p.metadata?.uid === sourcePod?.metadata?.uid), poll)
        .toBe(false);

      // The same guest, still counting: no reboot, no restart of its loop; its console is reached on the new node.
      const moved = await guestCounters("mover");
      expect(moved.uptime).toBeGreaterThanOrEqual(counted.uptime);
      expect(moved.count).toBeGreaterThan(counted.count);
      // Its address is the new pod's, and its port answers there.
      const [targetPod] = (await launcherPods()).filter((p) => !p.metadata?.deletionTimestamp);
      await expect
        .poll(async () => (await vmi("mover")).status?.interfaces?.[0]?.ipAddress, poll)
        .toBe(targetPod?.status?.podIP);
      expect((await pong(targetPod?.status?.podIP ?? "")).trim()).toContain("answer:pong");
    },
  );

  it("is cancelled by deleting its migration: the guest stays on its node, running, with the reason", async () => {
    // A MigrationPolicy for this VM alone (its label, in this namespace) holds its migrations to 1 MiB/s: the copy of
    // its 128 MiB takes minutes, and the cancel reaches it under way.
    const policy = `${namespace}-slow`;
    const selectors = {
      namespaceSelector: { "kubernetes.io/metadata.name": namespace },
      virtualMachineInstanceSelector: { "kubevirt-ts.io/e2e-migration": "slow" },
    };
    await custom.createClusterCustomObject({
      ...migrationPolicies,
      body: {
        apiVersion: "migrations.kubevirt.io/v1alpha1",
        kind: "MigrationPolicy",
        metadata: { name: policy },
        spec: { selectors, bandwidthPerMigration: "1Mi" },
      },
    });
    try {
      const before = await countingVm("stayer", undefined, { "kubevirt-ts.io/e2e-migration": "slow" });
      const source = before.status?.nodeName;
      const counted = await guestCounters("stayer");
      const migration = await virtctlMigrate("stayer");
      const name = migration.metadata.name ?? "";
      await expect
        .poll(async () => (await readMigration(name))?.status?.phase, poll)
        .toMatch(/^(Running|Succeeded|Failed)$/);
      expect((await readMigration(name))?.status?.phase, "the migration ended before it could be cancelled").toBe(
        "Running",
      );
      // It runs under the policy: the controller handed it over with the policy's bandwidth over the cluster's
      // configuration.
      expect((await vmi("stayer")).status?.migrationState).toMatchObject({
        migrationPolicyName: policy,
        migrationConfiguration: { bandwidthPerMigration: "1Mi", completionTimeoutPerGiB: 150 },
      });
      // virtctl migrate-cancel: the migrations of the VMI by KubeVirt's label; the one not ended is deleted.
      const labelled = (await custom.listNamespacedCustomObject({
        ...migrations,
        labelSelector: "kubevirt.io/vmi-name==stayer",
      })) as { items: Migration[] };
      const active = labelled.items.filter((m) => !["Succeeded", "Failed"].includes(m.status?.phase ?? ""));
      expect(active.map((m) => m.metadata.name)).toEqual([name]);
      await custom.deleteNamespacedCustomObject({ ...migrations, name });
      await expect.poll(() => readMigration(name), poll).toBeUndefined();

      const after = await vmi("stayer");
      expect(after.status?.nodeName).toBe(source);
      expect(after.status?.phase).toBe("Running");
      expect(after.status?.migrationState).toMatchObject({
        failed: true,
        abortStatus: "Succeeded",
        failureReason: "Migration aborted",
      });
      await expect
        .poll(
          async () =>
            (await launcherPods())
              .filter((p) => p.metadata?.labels?.["vm.kubevirt.io/name"] === "stayer" && !p.metadata.deletionTimestamp)
              .map((p) => p.spec?.nodeName),
          poll,
        )
        .toEqual([source]);
      const later = await guestCounters("stayer");
      expect(later.uptime).toBeGreaterThanOrEqual(counted.uptime);
      expect(later.count).toBeGreaterThan(counted.count);
      await custom.deleteNamespacedCustomObject({
        group: "kubevirt.io",
        version: "v1",
        namespace,
        plural: "virtualmachines",
        name: "stayer",
      });
    } finally {
      await custom.deleteClusterCustomObject({ ...migrationPolicies, name: policy });
    }
  });

  it("keeps a LiveMigrate VM running through kubectl drain of its node: the drain migrates it away", async () => {
    const before = await countingVm("drained", "LiveMigrate");
    const source = before.status?.nodeName ?? "";
    const counted = await guestCounters("drained");
    try {
      // Only this VM's launcher pod: the drain's evictions of the rest of the node are not this test's business.
      await kubectl(
        "drain",
        source,
        "--pod-selector=vm.kubevirt.io/name=drained",
        "--ignore-daemonsets",
        "--delete-emptydir-data",
        "--timeout=300s",
      );
    } finally {
      await kubectl("uncordon", source);
    }
    const after = await vmi("drained");
    expect(after.metadata.uid).toBe(before.metadata.uid);
    expect(after.status?.nodeName).toBe(otherNode(source));
    expect(after.status?.migrationState?.completed).toBe(true);
    // One evacuation, which moved it: none made again in the moment between its success and the VMI's move.
    const evacuations = (await listMigrations()).filter((m) => m.metadata.name?.startsWith("kubevirt-evacuation-"));
    expect(evacuations.map((m) => [m.metadata.uid, m.status?.phase])).toEqual([
      [after.status?.migrationState?.migrationUid, "Succeeded"],
    ]);
    const moved = await guestCounters("drained");
    expect(moved.uptime).toBeGreaterThanOrEqual(counted.uptime);
    expect(moved.count).toBeGreaterThan(counted.count);
  });

  // A boot of the Debian guest under emulation and its migration, each with its own bound: the test has both.
  it(
    "moves the Debian guest while it counts on its serial console: the count never starts again",
    async () => {
      await kubectl("create", "-n", namespace, "-f", join(REPO_ROOT, "examples/vm-debian.yaml"));
      const boot = BOOT;
      await expect
        .poll(async () => (await get("virtualmachineinstances", "debian"))?.status?.phase, boot)
        .toBe("Running");
      const shell = await serialLogin(namespace, "debian", "demo", "kubevirt-ts", boot);
      await shell.run(
        "(i=0; while :; do i=$((i+1)); echo $i > /tmp/count; echo tick-$i; sleep 1; done) & echo counting-$((40+2))",
        "counting-42",
      );
      shell.close();
      await expect
        .poll(
          async () => (await vmi("debian")).status?.conditions?.find((c) => c.type === "LiveMigratable")?.status,
          poll,
        )
        .toBe("True");
      const source = (await vmi("debian")).status?.nodeName;
      const ticks = (text: string) => [...text.matchAll(/tick-(\d+)/g)].map((m) => Number(m[1]));

      const watching = await openConsole(namespace, "debian", "console");
      await expect.poll(() => ticks(watching.received().toString("utf8")).length, poll).toBeGreaterThan(2);
      const migration = await virtctlMigrate("debian");
      await expect
        .poll(async () => (await readMigration(migration.metadata.name ?? ""))?.status?.phase, BOOT)
        .toBe("Succeeded");
      const lastBefore = Math.max(...ticks(watching.received().toString("utf8")));
      watching.ws.close();
      await expect.poll(async () => (await vmi("debian")).status?.nodeName, poll).toBe(otherNode(source));

      // On the new node, the same loop prints on: every tick after the move is past the last one seen before it.
      const after = await openConsole(namespace, "debian", "console");
      await expect.poll(() => ticks(after.received().toString("utf8")).length, poll).toBeGreaterThan(2);
      const seen = ticks(after.received().toString("utf8"));
      after.ws.close();
      expect(Math.min(...seen)).toBeGreaterThan(lastBefore);
      expect(seen.toSorted((a, b) => a - b)).toEqual(seen);
    },
    2 * BOOT.timeout,
  );
});
