import type { KubeClient } from "@kubevirt-ts/kube";
import {
  CLONE_API_VERSION,
  CLONE_KIND,
  ClonePhase,
  MAX_CLONE_MACS,
  SnapshotConditionType,
  type VirtualMachine,
  type VirtualMachineClone,
  dnsLabelProblem,
  kubevirtResources,
} from "@kubevirt-ts/kubevirt-api";
import { snapshotAvailability } from "@kubevirt-ts/vm-rules";
import { TRPCError } from "@trpc/server";
import { z } from "zod";
import { router, userProcedure } from "./init.ts";
import { MAX_LISTED, bounded, named, newestFirst, vm } from "./namespace-lists.ts";
import { refusal } from "./refusal.ts";

// A VM's clones for the dashboard's Clone action (clone.kubevirt.io/v1beta1, docs/data-protection.md): making one of
// the VM under a name the user gives, and the clones of it and into it with how far each got. A clone is a snapshot
// of the VM restored as a new VM (ADR 28), so a VM is cloned only when it could be snapshotted now. Every call is the
// signed-in user's own request (ADR 5); the clone controller does the work.

/** A VirtualMachineClone of the VM into `target`, named after the target (the API server adds a suffix). */
export function newClone(
  namespace: string,
  source: string,
  target: string,
  newMacAddresses?: Record<string, string>,
): VirtualMachineClone {
  return {
    apiVersion: CLONE_API_VERSION,
    kind: CLONE_KIND,
    metadata: { generateName: `clone-${target}-`.slice(0, 58), namespace },
    spec: {
      source: { apiGroup: "kubevirt.io", kind: "VirtualMachine", name: source },
      target: { apiGroup: "kubevirt.io", kind: "VirtualMachine", name: target },
      ...(newMacAddresses ? { newMacAddresses } : {}),
    },
  };
}

/**
 * A clone as the dashboard shows it: from which VM into which, its phase and, in words, why it is where it is (the
 * Progressing condition's message while it runs, the Ready condition's once it failed).
 */
export function cloneView(clone: VirtualMachineClone) {
  const status = clone.status;
  const phase = status?.phase ?? ClonePhase.Unset;
  const conditions = status?.conditions ?? [];
  const said = (type: string) => conditions.find((c) => c.type === type && c.message)?.message;
  const failed = phase === ClonePhase.Failed;
  return {
    name: clone.metadata.name ?? "",
    created: clone.metadata.creationTimestamp ?? "",
    source: clone.spec.source.name,
    target: status?.targetName ?? clone.spec.target?.name ?? "",
    phase,
    succeeded: phase === ClonePhase.Succeeded,
    failed,
    message: failed
      ? (said(SnapshotConditionType.Ready) ?? said(SnapshotConditionType.Progressing))
      : said(SnapshotConditionType.Progressing),
  };
}

const macs = z
  .record(named(dnsLabelProblem, "newMacAddresses key"), z.string().max(32))
  .refine((m) => Object.keys(m).length <= MAX_CLONE_MACS, {
    message: `newMacAddresses names at most ${String(MAX_CLONE_MACS)} interfaces`,
  });

const clonesIn = (client: KubeClient, namespace: string) =>
  bounded((o) => client.list<VirtualMachineClone>(kubevirtResources.virtualMachineClones, namespace, o));

export const clones = router({
  // The clones of the VM and the one that made it, newest first; `truncated` when the namespace held more than could
  // be read, or the VM more than are listed.
  list: userProcedure.input(vm).query(async ({ ctx, input }) => {
    const listed = await clonesIn(ctx.client, input.namespace);
    const mine = newestFirst(
      listed.items.filter(
        (c) =>
          (c.spec.source.kind === "VirtualMachine" && c.spec.source.name === input.name) ||
          (c.status?.targetName ?? c.spec.target?.name) === input.name,
      ),
    );
    return {
      clones: mine.slice(0, MAX_LISTED).map(cloneView),
      truncated: listed.truncated || mine.length > MAX_LISTED,
    };
  }),
  // target: the new VM's name; newMacAddresses: a MAC by interface name (others get new ones).
  create: userProcedure
    .input(vm.extend({ target: named(dnsLabelProblem, "target"), newMacAddresses: macs.optional() }))
    .mutation(async ({ ctx, input }) => {
      const { namespace, name, target } = input;
      const theVm = await ctx.client.get<VirtualMachine>(kubevirtResources.virtualMachines, namespace, name);
      refusal(snapshotAvailability(theVm), `clone ${name}`);
      if (await ctx.client.find(kubevirtResources.virtualMachines, namespace, target))
        throw new TRPCError({
          code: "CONFLICT",
          message: `target: a VM named ${target} already exists in ${namespace}; choose another name.`,
        });
      const made = await ctx.client.create<VirtualMachineClone>(
        kubevirtResources.virtualMachineClones,
        namespace,
        newClone(namespace, name, target, input.newMacAddresses),
      );
      return { name: made.metadata.name ?? "", target };
    }),
});
