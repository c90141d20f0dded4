import { ApiError, type KubeClient } from "@kubevirt-ts/kube";
import {
  SNAPSHOT_API_VERSION,
  SnapshotConditionType,
  SnapshotKind,
  type VirtualMachine,
  type VirtualMachineInstance,
  type VirtualMachineRestore,
  type VirtualMachineSnapshot,
  type VirtualMachineSnapshotContent,
  dnsLabelProblem,
  dnsSubdomainProblem,
  kubevirtResources,
  parseQuantity,
} from "@kubevirt-ts/kubevirt-api";
import {
  type ActionAvailability,
  restoreInPlaceAvailability,
  snapshotAvailability,
  snapshotRestorability,
} from "@kubevirt-ts/vm-rules";
import { TRPCError } from "@trpc/server";
import type { z } from "zod";
import { mayI } from "../access.ts";
import { router, userProcedure } from "./init.ts";
import { MAX_LISTED, bounded, named, newestFirst, vm } from "./namespace-lists.ts";
import { refusal } from "./refusal.ts";

// A VM's snapshots for the dashboard's Snapshots tab (snapshot.kubevirt.io/v1beta1, docs/data-protection.md): its
// snapshots with what each holds and its size, taking one, deleting one, restoring one onto the VM (only while it is
// stopped) or as a new VM, and the restores of the VM. Every call is the signed-in user's own request (ADR 5); the
// snapshot and restore controllers do the work. Lists of a namespace are read in pages and bounded, so a namespace
// with many snapshots costs a bounded read and answer.

const ofSnapshot = vm.extend({ snapshot: named(dnsSubdomainProblem, "snapshot") });

const snapshotsIn = (client: KubeClient, namespace: string) =>
  bounded((o) => client.list<VirtualMachineSnapshot>(kubevirtResources.virtualMachineSnapshots, namespace, o));
const restoresIn = (client: KubeClient, namespace: string) =>
  bounded((o) => client.list<VirtualMachineRestore>(kubevirtResources.virtualMachineRestores, namespace, o));

/**
 * What restoring the content makes, in bytes: the sum of the claims its volume copies restore to (each source claim's
 * requested storage, as a restored claim asks for); undefined without a content or a size for every copy.
 */
export function contentSize(content: VirtualMachineSnapshotContent | undefined): number | undefined {
  const backups = content?.spec.volumeBackups;
  if (!backups || backups.length === 0) return undefined;
  let sum = 0;
  for (const backup of backups) {
    const spec = backup.persistentVolumeClaim.spec as { resources?: { requests?: { storage?: unknown } } } | undefined;
    const storage = spec?.resources?.requests?.storage;
    const bytes = typeof storage === "string" || typeof storage === "number" ? parseQuantity(storage) : undefined;
    if (bytes === undefined) return undefined;
    sum += bytes;
  }
  return sum;
}

/**
 * A snapshot as the tab lists it; `restorable`, whether it can be restored at all now (snapshotRestorability), which
 * the tab combines with the VM's live state (restoreInPlaceAvailability).
 */
export function snapshotView(
  snapshot: VirtualMachineSnapshot,
  content: VirtualMachineSnapshotContent | undefined,
  restorable: ActionAvailability,
) {
  const status = snapshot.status;
  return {
    name: snapshot.metadata.name ?? "",
    created: snapshot.metadata.creationTimestamp ?? "",
    /** When its disks were captured, once they were. */
    taken: status?.creationTime ?? undefined,
    phase: snapshot.metadata.deletionTimestamp ? "Deleting" : (status?.phase ?? "Pending"),
    readyToUse: status?.readyToUse === true,
    indications: status?.indications ?? [],
    included: status?.snapshotVolumes?.includedVolumes ?? [],
    excluded: status?.snapshotVolumes?.excludedVolumes ?? [],
    sizeBytes: contentSize(content),
    error: status?.error?.message,
    restorable,
  };
}

/** A restore as the tab lists it: onto which VM, from which snapshot, how far. */
export function restoreView(restore: VirtualMachineRestore) {
  const conditions = restore.status?.conditions ?? [];
  const failure = conditions.find((c) => c.type === SnapshotConditionType.Failure && c.status === "True");
  const progressing = conditions.find((c) => c.type === SnapshotConditionType.Progressing && c.status === "True");
  return {
    name: restore.metadata.name ?? "",
    created: restore.metadata.creationTimestamp ?? "",
    snapshot: restore.spec.virtualMachineSnapshotName,
    target: restore.spec.target.name,
    complete: restore.status?.complete === true,
    restoreTime: restore.status?.restoreTime ?? undefined,
    failed: failure !== undefined,
    message: failure?.message ?? progressing?.message ?? undefined,
    deletedDataVolumes: restore.status?.deletedDataVolumes ?? [],
  };
}

/** A VirtualMachineSnapshot of the VM, as KubeVirt's virtctl and console make one. */
export function newSnapshot(namespace: string, name: string, vmName: string): VirtualMachineSnapshot {
  return {
    apiVersion: SNAPSHOT_API_VERSION,
    kind: SnapshotKind.VirtualMachineSnapshot,
    metadata: { name, namespace },
    spec: { source: { apiGroup: "kubevirt.io", kind: "VirtualMachine", name: vmName } },
  };
}

/** A VirtualMachineRestore of the snapshot onto `target`, named after it (the API server adds a suffix). */
export function newRestore(namespace: string, snapshot: string, target: string): VirtualMachineRestore {
  return {
    apiVersion: SNAPSHOT_API_VERSION,
    kind: SnapshotKind.VirtualMachineRestore,
    metadata: { generateName: `${target}-restore-`.slice(0, 58), namespace },
    spec: {
      target: { apiGroup: "kubevirt.io", kind: "VirtualMachine", name: target },
      virtualMachineSnapshotName: snapshot,
    },
  };
}

async function snapshotOf(client: KubeClient, input: z.infer<typeof ofSnapshot>): Promise<VirtualMachineSnapshot> {
  const snapshot = await client.get<VirtualMachineSnapshot>(
    kubevirtResources.virtualMachineSnapshots,
    input.namespace,
    input.snapshot,
  );
  if (snapshot.spec.source.name !== input.name)
    throw new TRPCError({
      code: "BAD_REQUEST",
      message: `snapshot: ${input.snapshot} is a snapshot of ${snapshot.spec.source.name}, not of ${input.name}.`,
    });
  return snapshot;
}

/** Contents read at once, of the at most MAX_LISTED a list shows. */
const CONTENT_READS = 10;

/**
 * The contents of the snapshots listed, by name, each read by itself (never the namespace's every content, each of
 * which holds a whole VM); a user who may not read contents sees the snapshots without sizes.
 */
async function contentsOf(
  client: KubeClient,
  namespace: string,
  listed: VirtualMachineSnapshot[],
): Promise<Map<string, VirtualMachineSnapshotContent>> {
  const names = [...new Set(listed.map((s) => s.status?.virtualMachineSnapshotContentName ?? ""))].filter(
    (name) => name !== "" && dnsSubdomainProblem(name) === undefined,
  );
  const contents = new Map<string, VirtualMachineSnapshotContent>();
  try {
    for (let i = 0; i < names.length; i += CONTENT_READS) {
      const found = await Promise.all(
        names
          .slice(i, i + CONTENT_READS)
          .map((name) =>
            client.find<VirtualMachineSnapshotContent>(
              kubevirtResources.virtualMachineSnapshotContents,
              namespace,
              name,
            ),
          ),
      );
      for (const content of found) if (content) contents.set(content.metadata.name ?? "", content);
    }
  } catch (error) {
    if (error instanceof ApiError && error.code === 403) return new Map();
    throw error;
  }
  return contents;
}

const vmiOf = (client: KubeClient, namespace: string, name: string) =>
  client.find<VirtualMachineInstance>(kubevirtResources.virtualMachineInstances, namespace, name);

export const snapshots = router({
  // The VM's snapshots, newest first, each with whether it can be restored now; `truncated` when the
  // namespace held more than could be read, or the VM more than are listed.
  list: userProcedure.input(vm).query(async ({ ctx, input }) => {
    const listed = await snapshotsIn(ctx.client, input.namespace);
    const mine = newestFirst(listed.items.filter((s) => s.spec.source.name === input.name));
    const shown = mine.slice(0, MAX_LISTED);
    const byName = await contentsOf(ctx.client, input.namespace, shown);
    return {
      snapshots: shown.map((s) => {
        const content = byName.get(s.status?.virtualMachineSnapshotContentName ?? "");
        return snapshotView(s, content, snapshotRestorability(s));
      }),
      truncated: listed.truncated || mine.length > MAX_LISTED,
    };
  }),
  // The restores onto the VM and from its snapshots (onto new VMs), newest first.
  restores: userProcedure.input(vm).query(async ({ ctx, input }) => {
    const [restores, listed] = await Promise.all([
      restoresIn(ctx.client, input.namespace),
      snapshotsIn(ctx.client, input.namespace),
    ]);
    const ofVm = new Set(listed.items.filter((s) => s.spec.source.name === input.name).map((s) => s.metadata.name));
    const mine = newestFirst(
      restores.items.filter((r) => r.spec.target.name === input.name || ofVm.has(r.spec.virtualMachineSnapshotName)),
    );
    return {
      restores: mine.slice(0, MAX_LISTED).map(restoreView),
      truncated: restores.truncated || listed.truncated || mine.length > MAX_LISTED,
    };
  }),
  create: userProcedure.input(ofSnapshot).mutation(async ({ ctx, input }) => {
    const theVm = await ctx.client.get<VirtualMachine>(kubevirtResources.virtualMachines, input.namespace, input.name);
    refusal(snapshotAvailability(theVm), `take a snapshot of ${input.name}`);
    const made = await ctx.client.create<VirtualMachineSnapshot>(
      kubevirtResources.virtualMachineSnapshots,
      input.namespace,
      newSnapshot(input.namespace, input.snapshot, input.name),
    );
    return { name: made.metadata.name ?? input.snapshot };
  }),
  delete: userProcedure.input(ofSnapshot).mutation(async ({ ctx, input }) => {
    const snapshot = await snapshotOf(ctx.client, input);
    await ctx.client.delete(kubevirtResources.virtualMachineSnapshots, input.namespace, input.snapshot, {
      uid: snapshot.metadata.uid,
    });
    return { ok: true as const };
  }),
  // newVm: the name of a VM to make from the snapshot; without it, the snapshot is restored onto its own VM, which
  // must be stopped.
  restore: userProcedure
    .input(ofSnapshot.extend({ newVm: named(dnsLabelProblem, "newVm").optional() }))
    .mutation(async ({ ctx, input }) => {
      const snapshot = await snapshotOf(ctx.client, input);
      const { namespace, newVm } = input;
      if (newVm === undefined) {
        const [theVm, vmi] = await Promise.all([
          ctx.client.get<VirtualMachine>(kubevirtResources.virtualMachines, namespace, input.name),
          vmiOf(ctx.client, namespace, input.name),
        ]);
        refusal(
          restoreInPlaceAvailability(snapshotRestorability(snapshot), theVm, vmi),
          `restore ${input.snapshot} onto ${input.name}`,
        );
      } else {
        refusal(snapshotRestorability(snapshot), `restore ${input.snapshot} as ${newVm}`);
        if (await ctx.client.find(kubevirtResources.virtualMachines, namespace, newVm))
          throw new TRPCError({
            code: "CONFLICT",
            message: `newVm: a VM named ${newVm} already exists in ${namespace}; choose another name.`,
          });
        // The restore controller makes the VM with its own rights: the user must be one who could have made it.
        if (!(await mayI(ctx.client, namespace, { verb: "create", resource: "virtualmachines" })))
          throw new TRPCError({
            code: "FORBIDDEN",
            message:
              `You may not create VMs in ${namespace}: restoring a snapshot as a new VM takes create on ` +
              "virtualmachines (kubevirt.io).",
          });
      }
      const made = await ctx.client.create<VirtualMachineRestore>(
        kubevirtResources.virtualMachineRestores,
        namespace,
        newRestore(namespace, input.snapshot, newVm ?? input.name),
      );
      return { name: made.metadata.name ?? "", target: newVm ?? input.name };
    }),
});
