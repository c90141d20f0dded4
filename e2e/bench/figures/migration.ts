import { join } from "node:path";
import { REPO_ROOT } from "@kubevirt-ts/control-plane";
import { core, custom, imageOf, undefinedIfNotFound } from "../../cluster/cluster.ts";
import { inGuest, serialLogin } from "../../cluster/console.ts";
import { tinyVm } from "../../manifests.ts";
import { createNamespace, deleteNamespace, kubectl, waitFor } from "../cluster.ts";
import type { Row } from "../results.ts";
import { createVm } from "../workload.ts";

// Live migration on the two-node cluster: how long a guest takes to move
// while it dirties its memory, and how long it stood still at the switch-over
// (libvirt's measured downtime of the finished job, which the source's
// handler logs as "the migration completed"). The tiny guest (128 MiB, a
// kernel and busybox) and the Debian guest of examples/vm-debian.yaml.

interface Migration {
  metadata: { name?: string; uid?: string };
  status?: { phase?: string; phaseTransitionTimestamps?: { phase: string; phaseTransitionTimestamp: string }[] };
}
interface Vmi {
  status?: {
    phase?: string;
    nodeName?: string;
    conditions?: { type: string; status: string }[];
    migrationState?: { sourceNode?: string; startTimestamp?: string; endTimestamp?: string };
  };
}

const kubevirt = (namespace: string, plural: string) => ({ group: "kubevirt.io", version: "v1", namespace, plural });
const readVmi = async (namespace: string, name: string) =>
  (await custom.getNamespacedCustomObject({ ...kubevirt(namespace, "virtualmachineinstances"), name })) as Vmi;
/** The VMI, or undefined while its VM has not made it yet. */
const findVmi = (namespace: string, name: string) => readVmi(namespace, name).catch(undefinedIfNotFound);

/** What the source's handler logged when the migration completed: libvirt's figures of the job. */
async function completedLine(
  sourceNode: string,
  migrationUid: string,
): Promise<{ downtimeMs?: number; elapsedMs?: number; dataProcessed?: number } | undefined> {
  const handler = (
    await core.listNamespacedPod({
      namespace: "kubevirt-ts",
      labelSelector: "app.kubernetes.io/name=virt-handler",
      fieldSelector: `spec.nodeName=${sourceNode}`,
    })
  ).items[0];
  const log = await kubectl("logs", "-n", "kubevirt-ts", handler?.metadata?.name ?? "");
  for (const line of log.split("\n")) {
    if (!line.includes(migrationUid) || !line.includes("the migration completed")) continue;
    return JSON.parse(line) as { downtimeMs?: number; elapsedMs?: number; dataProcessed?: number };
  }
  return undefined;
}

/** Migrates the running VMI once and measures it; `dirty` starts the guest's memory-dirtying loop first. */
async function migrateOnce(
  namespace: string,
  name: string,
  label: string,
  guest: string,
  dirty: () => Promise<void>,
): Promise<Row[]> {
  // Running (its console reaches the guest only then) and able to move.
  const ready = await waitFor(
    async () => {
      const vmi = await findVmi(namespace, name);
      return (
        vmi?.status?.phase === "Running" &&
        (vmi.status.conditions?.some((c) => c.type === "LiveMigratable" && c.status === "True") ?? false)
      );
    },
    900_000,
    1_000,
  );
  if (!ready) throw new Error(`${label}: the VMI is not Running and LiveMigratable after 900 s`);
  await dirty();
  const created = (await custom.createNamespacedCustomObject({
    ...kubevirt(namespace, "virtualmachineinstancemigrations"),
    body: {
      apiVersion: "kubevirt.io/v1",
      kind: "VirtualMachineInstanceMigration",
      metadata: { generateName: "bench-" },
      spec: { vmiName: name },
    },
  })) as Migration;
  const migrationName = created.metadata.name ?? "";
  let migration: Migration | undefined;
  const ended = await waitFor(
    async () => {
      migration = (await custom.getNamespacedCustomObject({
        ...kubevirt(namespace, "virtualmachineinstancemigrations"),
        name: migrationName,
      })) as Migration;
      return migration.status?.phase === "Succeeded" || migration.status?.phase === "Failed";
    },
    900_000,
    250,
  );
  const phases = migration?.status?.phaseTransitionTimestamps ?? [];
  const at = (phase: string) => Date.parse(phases.find((p) => p.phase === phase)?.phaseTransitionTimestamp ?? "");
  const state = (await readVmi(namespace, name)).status?.migrationState;
  const succeeded = ended && migration?.status?.phase === "Succeeded";
  const job =
    succeeded && state?.sourceNode ? await completedLine(state.sourceNode, created.metadata.uid ?? "") : undefined;
  const note = succeeded ? undefined : ended ? "the migration failed" : "the migration did not end within 900 s";
  return [
    {
      id: `migration.${label}.total`,
      figure: `${guest}, dirtying its memory: migration created → Succeeded`,
      unit: "s",
      values: { value: succeeded ? (at("Succeeded") - at("Pending")) / 1000 : null },
      method:
        "the VirtualMachineInstanceMigration's phase timestamps, Pending → Succeeded (target pod made, " +
        "scheduled, started, the copy, the switch-over, the VMI moved)",
      ...(note ? { note } : {}),
    },
    {
      id: `migration.${label}.copy`,
      figure: `${guest}, dirtying its memory: libvirt's migration job`,
      unit: "s",
      values: { value: job?.elapsedMs === undefined ? null : job.elapsedMs / 1000 },
      method: "libvirt's job stats of the completed job (time elapsed), as the source's handler logs them",
      ...(job
        ? { note: `${((job.dataProcessed ?? 0) / 2 ** 20).toFixed(0)} MiB sent` }
        : { note: note ?? "no completed job in the source handler's log" }),
    },
    {
      id: `migration.${label}.downtime`,
      figure: `${guest}, dirtying its memory: downtime at the switch-over`,
      unit: "ms",
      values: { value: job?.downtimeMs ?? null },
      method:
        "libvirt's job stats of the completed job (downtime: the guest paused on the source until it " +
        "runs on the target), as the source's handler logs them",
      ...(job?.downtimeMs === undefined ? { note: note ?? "no downtime in the source handler's log" } : {}),
    },
  ];
}

export async function migrationFigures(): Promise<Row[]> {
  const rows: Row[] = [];
  const namespace = await createNamespace("migration");
  try {
    await createVm(namespace, tinyVm("tiny", imageOf("tiny-guest"), namespace));
    rows.push(
      ...(await migrateOnce(namespace, "tiny", "tiny", "the tiny guest (128 MiB)", async () => {
        // 16 MiB rewritten over and over in its RAM-backed root.
        await inGuest(
          namespace,
          "tiny",
          "(while :; do dd if=/dev/urandom of=/tmp/dirty bs=1M count=16 2>/dev/null; done) & echo dirtying-$((40+2))",
          "dirtying-42",
        );
      })),
    );

    await kubectl("create", "-n", namespace, "-f", join(REPO_ROOT, "examples/vm-debian.yaml"));
    rows.push(
      ...(await migrateOnce(
        namespace,
        "debian",
        "debian",
        "the Debian guest (examples/vm-debian.yaml, 1 vCPU, 1Gi)",
        async () => {
          const shell = await serialLogin(namespace, "debian", "demo", "kubevirt-ts");
          // 64 MiB of tmpfs rewritten over and over.
          await shell.run(
            "(while :; do head -c 67108864 /dev/urandom > /dev/shm/dirty; done) & echo dirtying-$((40+2))",
            "dirtying-42",
          );
          shell.close();
        },
      )),
    );
  } finally {
    await deleteNamespace(namespace).catch(() => undefined);
  }
  return rows;
}
