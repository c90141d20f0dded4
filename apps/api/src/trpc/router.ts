import { type Event, type KubeClient, type KubeObject, isForbidden, resources } from "@kubevirt-ts/kube";
import {
  type DataVolume,
  MAX_CLOUD_INIT_BYTES,
  SUBRESOURCE_GROUP,
  type VirtualMachine,
  dnsLabelProblem,
  type VirtualMachineInstance,
  type VmiDomainAction,
  summarize,
  validateVirtualMachine,
  kubevirtResources,
  inferFromVolumes,
  type InstancetypeSpec,
  type PreferenceSpec,
  instancetypeResources,
  parseQuantity,
  SNAPSHOT_GROUP,
  CLONE_GROUP,
  EXPORT_GROUP,
  VmConditionType,
  controllerRevisions,
} from "@kubevirt-ts/kubevirt-api";
import {
  type VmRequestAction,
  type VmRequestOptions,
  ACTION_WORDS,
  MIGRATION_SUBRESOURCE,
  type ActionAvailability,
  type VmActionName,
  type PendingChange,
  type StartRevision,
  availableActions,
  pendingChanges,
  startRevisionOf,
} from "@kubevirt-ts/vm-rules";
import { TRPCError } from "@trpc/server";
import { z } from "zod";
import { type Check, describeCheck, mayI, tokenRequester, whoAmI } from "../access.ts";
import {
  SERIAL_LOG_CHECK,
  actionCheck,
  requestSerialLog,
  requestVmAction,
  requestVmiAction,
  vmActionCheck,
  vmiActionCheck,
} from "../vm-actions.ts";
import { clones } from "./clones.ts";
import { exports } from "./exports.ts";
import { createVmWithCloudInitSecret } from "./cloud-init-secret.ts";
import { dataVolumes } from "./data-volumes.ts";
import { migrations } from "./migrations.ts";
import { fromRefusal } from "./refusal.ts";
import { CausesError, publicProcedure, router, userProcedure } from "./init.ts";
import { nodeFacts } from "./nodes.ts";
import { snapshots } from "./snapshots.ts";
import { listThenWatch } from "./watch.ts";

// The API's procedures. Each one that touches the cluster does so as the
// signed-in user (ctx.client carries their token): the user can do here
// exactly what they could do with kubectl, no more.

// Namespaces and names are DNS labels, checked by the API package's own rule.
const dnsLabel = z.string().superRefine((value, ctx) => {
  const problem = dnsLabelProblem(value);
  if (problem) ctx.addIssue({ code: "custom", message: problem });
});
const target = z.object({ namespace: dnsLabel, name: dnsLabel });
const inNamespace = z.object({ namespace: dnsLabel });
// Without a namespace, a stream covers every namespace (as a Kubernetes list does), for users who may list
// cluster-wide.
const resumable = z.object({ namespace: dnsLabel.optional(), lastEventId: z.string().nullish() });

/** Instancetypes by series (u1, o1, ...), then by vCPUs and memory within one. */
function bySeriesThenSize(
  a: { name: string; cpu: number; memory: string },
  b: { name: string; cpu: number; memory: string },
): number {
  const series = (a.name.split(".")[0] ?? "").localeCompare(b.name.split(".")[0] ?? "");
  if (series !== 0) return series;
  if (a.cpu !== b.cpu) return a.cpu - b.cpu;
  return (parseQuantity(a.memory) ?? 0) - (parseQuantity(b.memory) ?? 0);
}

/** Every action the dashboard offers, as the Kubernetes permission it takes. */
const ACTIONS = {
  list: [{ verb: "list", resource: "virtualmachines" }],
  create: [{ verb: "create", resource: "virtualmachines" }],
  update: [{ verb: "update", resource: "virtualmachines" }],
  delete: [{ verb: "delete", resource: "virtualmachines" }],
  // The VM and VMI actions take what KubeVirt's subresources take (vm-actions.ts), since they are the same code.
  start: [vmActionCheck("start")],
  stop: [vmActionCheck("stop")],
  forceStop: [vmActionCheck("stop")],
  restart: [vmActionCheck("restart")],
  pause: [vmiActionCheck("pause")],
  unpause: [vmiActionCheck("unpause")],
  softReboot: [vmiActionCheck("softReboot")],
  reset: [vmiActionCheck("reset")],
  console: [{ verb: "get", group: SUBRESOURCE_GROUP, resource: "virtualmachineinstances", subresource: "console" }],
  vnc: [{ verb: "get", group: SUBRESOURCE_GROUP, resource: "virtualmachineinstances", subresource: "vnc" }],
  serialLog: [SERIAL_LOG_CHECK],
  // As KubeVirt 1.5 and later: the kubevirt.io:migrate role has both, edit and admin neither.
  migrate: [actionCheck("virtualmachines", MIGRATION_SUBRESOURCE)],
  cancelMigration: [{ verb: "delete", resource: "virtualmachineinstancemigrations" }],
  takeSnapshot: [{ verb: "create", group: SNAPSHOT_GROUP, resource: "virtualmachinesnapshots" }],
  deleteSnapshot: [{ verb: "delete", group: SNAPSHOT_GROUP, resource: "virtualmachinesnapshots" }],
  restoreSnapshot: [{ verb: "create", group: SNAPSHOT_GROUP, resource: "virtualmachinerestores" }],
  // The restore controller makes the new VM: the user must be one who could make it.
  restoreAsNewVm: [
    { verb: "create", group: SNAPSHOT_GROUP, resource: "virtualmachinerestores" },
    { verb: "create", resource: "virtualmachines" },
  ],
  // The clone controller makes the new VM, as KubeVirt's does, from the clone alone.
  clone: [{ verb: "create", group: CLONE_GROUP, resource: "virtualmachineclones" }],
  exportVm: [{ verb: "create", group: EXPORT_GROUP, resource: "virtualmachineexports" }],
  deleteExport: [{ verb: "delete", group: EXPORT_GROUP, resource: "virtualmachineexports" }],
} as const;
type Action = keyof typeof ACTIONS;

/** What the VM list of every namespace takes, cluster-wide: its two streams. */
const ALL_NAMESPACES_CHECKS: Check[] = ["virtualmachines", "virtualmachineinstances"].flatMap((resource) => [
  { verb: "list", resource },
  { verb: "watch", resource },
]);

/** What each action is, for messages: "You may not <phrase> in <namespace>". */
const PHRASES: Record<Action, string> = {
  list: "list VMs",
  create: "create VMs",
  update: "edit VMs",
  ...(Object.fromEntries(Object.entries(ACTION_WORDS).map(([action, words]) => [action, `${words} VMs`])) as Record<
    VmActionName,
    string
  >),
  serialLog: "read the serial logs of VMs",
  migrate: "migrate VMs",
  cancelMigration: "cancel migrations of VMs",
  takeSnapshot: "take snapshots of VMs",
  deleteSnapshot: "delete snapshots of VMs",
  restoreSnapshot: "restore snapshots of VMs",
  restoreAsNewVm: "restore snapshots as new VMs",
  clone: "clone VMs",
  exportVm: "export VMs",
  deleteExport: "delete exports of VMs",
};

/**
 * Events as the dashboard lists them, newest first; `uid` tells apart two events of the same object, time and words.
 */
function newestFirst(events: readonly Event[]) {
  return events
    .map((e) => ({
      uid: e.metadata.uid ?? `${e.metadata.namespace ?? ""}/${e.metadata.name ?? ""}`,
      type: e.type ?? "Normal",
      reason: e.reason ?? "",
      message: e.message ?? "",
      kind: e.involvedObject.kind ?? "",
      name: e.involvedObject.name ?? "",
      count: e.count ?? 1,
      time: e.lastTimestamp ?? e.eventTime ?? e.metadata.creationTimestamp ?? "",
    }))
    .sort((a, b) => b.time.localeCompare(a.time));
}

/** The most events the namespace's Events page lists (the newest). */
const NAMESPACE_EVENTS = 500;

/**
 * Refuses an action the VM's state or spec does not allow now, saying why: CONFLICT while its state stands in the way,
 * PRECONDITION_FAILED while its spec does.
 */
function requireAvailable(availability: ActionAvailability, action: VmActionName, name: string): void {
  if (!availability.available)
    throw new TRPCError({
      code: availability.by === "spec" ? "PRECONDITION_FAILED" : "CONFLICT",
      message: `Cannot ${ACTION_WORDS[action]} ${name}: ${availability.reason}.`,
    });
}

function checkedVm(input: unknown, namespace: string, name?: string): VirtualMachine {
  const object = typeof input === "object" && input !== null ? (input as Record<string, unknown>) : {};
  const metadata: Record<string, unknown> = { ...(object.metadata as Record<string, unknown> | undefined), namespace };
  if (name !== undefined && metadata.name !== name)
    throw new CausesError(`metadata.name must stay ${name}`, [
      {
        field: "metadata.name",
        message: `metadata.name must stay ${name}: a VM cannot be renamed`,
        reason: "FieldValueInvalid",
      },
    ]);
  const result = validateVirtualMachine({ apiVersion: "kubevirt.io/v1", kind: "VirtualMachine", ...object, metadata });
  if (!result.ok) throw new CausesError(summarize(result.causes), result.causes);
  return result.value;
}

/**
 * The VM with its instancetype and preference inferred from a volume (inferFromVolume), as virt-api's webhook would
 * infer them, here as the user: what is checked is what will be stored.
 */
async function inferredAsUser(client: KubeClient, input: unknown, namespace: string): Promise<unknown> {
  if (typeof input !== "object" || input === null) return input;
  const object = input as { metadata?: Record<string, unknown> };
  const { vm, refusals } = await inferFromVolumes(
    { ...object, metadata: { ...object.metadata, namespace } },
    (r, ns, name) => client.find(r, ns, name),
  );
  if (refusals.length > 0)
    throw new CausesError(
      refusals.map((r) => `${r.field} ${r.message}`).join("; "),
      refusals.map((r) => ({ field: r.field, message: `${r.field} ${r.message}`, reason: "FieldValueInvalid" })),
    );
  return vm;
}

/**
 * Lets the VM's DataVolumes go: its owner reference taken off each, as the user, so deleting the VM leaves them. Their
 * names.
 */
async function releaseDataVolumes(client: KubeClient, vm: VirtualMachine): Promise<string[]> {
  const kept: string[] = [];
  for (const template of vm.spec.dataVolumeTemplates ?? []) {
    const dv = await client.find<DataVolume>(
      kubevirtResources.dataVolumes,
      vm.metadata.namespace,
      template.metadata.name,
    );
    const owners = dv?.metadata.ownerReferences ?? [];
    if (!dv || !owners.some((o) => o.uid === vm.metadata.uid)) continue;
    await client.update(kubevirtResources.dataVolumes, {
      ...dv,
      metadata: { ...dv.metadata, ownerReferences: owners.filter((o) => o.uid !== vm.metadata.uid) },
    });
    kept.push(template.metadata.name);
  }
  return kept;
}

async function vmAndVmi(client: KubeClient, input: { namespace: string; name: string }) {
  const vm = await client.get<VirtualMachine>(kubevirtResources.virtualMachines, input.namespace, input.name);
  const vmi = await client.find<VirtualMachineInstance>(
    kubevirtResources.virtualMachineInstances,
    input.namespace,
    input.name,
  );
  return { vm, vmi };
}

/**
 * What a restart of the VM would bring: the changes to its spec since its VMI started (vm-rules' pendingChanges), read
 * as the user from the start revision the controller kept. `changes` is undefined, with the reason, when they cannot
 * be told; the VM's RestartRequired condition still says whether there are any.
 */
async function changesSinceStart(
  client: KubeClient,
  input: { namespace: string; name: string },
): Promise<{ restartRequired: boolean; changes?: PendingChange[]; reason?: string }> {
  const { vm, vmi } = await vmAndVmi(client, input);
  const restartRequired =
    vm.status?.conditions?.some((c) => c.type === VmConditionType.RestartRequired && c.status === "True") ?? false;
  const revision = vmi && startRevisionOf(vm, vmi);
  if (revision === undefined)
    return vmi
      ? { restartRequired, reason: "Its instance was started before kubevirt-ts kept the spec it starts from." }
      : { restartRequired, changes: [] };
  const kept = await client
    .find<StartRevision>(controllerRevisions, input.namespace, revision)
    .catch((error: unknown) => {
      if (isForbidden(error)) return "forbidden" as const;
      throw error;
    });
  if (kept === "forbidden")
    return {
      restartRequired,
      reason:
        `You may not read the ControllerRevision ${revision} in ${input.namespace}, ` +
        "which holds the spec it started from.",
    };
  if (!kept) return { restartRequired, reason: `The ControllerRevision ${revision} it started from is gone.` };
  return { restartRequired, changes: pendingChanges(kept.data?.spec, vm) };
}

/**
 * start, stop, forceStop (a stop with a grace period of 0) and restart: the subresource API's own implementation, as
 * the signed-in user.
 */
const vmAction = (action: VmRequestAction, options: VmRequestOptions = {}) =>
  userProcedure.input(target).mutation(async ({ ctx, input }) => {
    await requestVmAction(ctx, tokenRequester(ctx.client), input, action, () => Promise.resolve(options)).catch(
      fromRefusal,
    );
    return { ok: true as const };
  });

const vmiAction = (action: VmiDomainAction) =>
  userProcedure.input(target).mutation(async ({ ctx, input }) => {
    await requestVmiAction(ctx, tokenRequester(ctx.client), input, action).catch(fromRefusal);
    return { ok: true as const };
  });

const vms = router({
  list: userProcedure
    .input(inNamespace)
    .query(
      async ({ ctx, input }) =>
        (await ctx.client.list<VirtualMachine>(kubevirtResources.virtualMachines, input.namespace)).items,
    ),
  get: userProcedure
    .input(target)
    .query(({ ctx, input }) =>
      ctx.client.get<VirtualMachine>(kubevirtResources.virtualMachines, input.namespace, input.name),
    ),
  watch: userProcedure
    .input(resumable)
    .subscription(({ ctx, input, signal }) =>
      listThenWatch<VirtualMachine>(
        ctx.client,
        kubevirtResources.virtualMachines,
        input.namespace,
        input.lastEventId,
        signal,
      ),
    ),
  // cloudInitUserData: user data to keep in the Secret the VM's cloudInitNoCloud.secretRef names, out of the spec.
  create: userProcedure
    .input(
      z.object({
        namespace: dnsLabel,
        vm: z.unknown(),
        cloudInitUserData: z.string().max(MAX_CLOUD_INIT_BYTES).optional(),
      }),
    )
    .mutation(async ({ ctx, input }) => {
      const vm = checkedVm(await inferredAsUser(ctx.client, input.vm, input.namespace), input.namespace);
      return input.cloudInitUserData === undefined
        ? ctx.client.create(kubevirtResources.virtualMachines, input.namespace, vm)
        : createVmWithCloudInitSecret(ctx.client, vm, input.cloudInitUserData);
    }),
  update: userProcedure
    .input(target.extend({ vm: z.unknown() }))
    .mutation(({ ctx, input }) =>
      ctx.client.update(kubevirtResources.virtualMachines, checkedVm(input.vm, input.namespace, input.name)),
    ),
  // keepDisks: the DataVolumes of its dataVolumeTemplates (and so their claims) outlive it; else they go with it, as
  // KubeVirt's do.
  delete: userProcedure
    .input(target.extend({ keepDisks: z.boolean().default(false) }))
    .mutation(async ({ ctx, input }) => {
      const vm = await ctx.client.get<VirtualMachine>(kubevirtResources.virtualMachines, input.namespace, input.name);
      requireAvailable(availableActions(vm, undefined).delete, "delete", input.name);
      const kept = input.keepDisks ? await releaseDataVolumes(ctx.client, vm) : [];
      await ctx.client.delete(kubevirtResources.virtualMachines, input.namespace, input.name, { uid: vm.metadata.uid });
      return { ok: true as const, kept };
    }),
  start: vmAction("start"),
  stop: vmAction("stop"),
  forceStop: vmAction("stop", { gracePeriod: 0 }),
  restart: vmAction("restart"),
  pause: vmiAction("pause"),
  unpause: vmiAction("unpause"),
  softReboot: vmiAction("softReboot"),
  reset: vmiAction("reset"),
  // The VM's CPU, memory, network and disk over the last minutes, from the API's store or a Prometheus; reading the VMI
  // is the permission it takes.
  metrics: userProcedure
    .input(target.extend({ minutes: z.union([z.literal(15), z.literal(60)]) }))
    .query(async ({ ctx, input }) => {
      await ctx.client.get<VirtualMachineInstance>(
        kubevirtResources.virtualMachineInstances,
        input.namespace,
        input.name,
      );
      const rates = await Promise.resolve(ctx.metrics?.rates(input.namespace, input.name, input.minutes) ?? []).catch(
        (error: unknown) => {
          throw new TRPCError({ code: "BAD_GATEWAY", message: error instanceof Error ? error.message : String(error) });
        },
      );
      return { source: ctx.metrics?.source ?? "store", sampleSeconds: ctx.metrics?.sampleSeconds ?? 0, rates };
    }),
  // The changes to a running VM's spec that wait for a restart, field by field.
  pendingChanges: userProcedure.input(target).query(({ ctx, input }) => changesSinceStart(ctx.client, input)),
  // What the guest printed on its serial console since boot, as KubeVirt's guest console log is read (get on pods/log).
  serialLog: userProcedure
    .input(target)
    .query(async ({ ctx, input }) =>
      (await requestSerialLog(ctx, tokenRequester(ctx.client), input).catch(fromRefusal)).toString("utf8"),
    ),
  events: userProcedure.input(target).query(async ({ ctx, input }) =>
    newestFirst(
      (
        await ctx.client.list<Event>(resources.events, input.namespace, {
          fieldSelector: `involvedObject.name=${input.name}`,
        })
      ).items,
    ),
  ),
});

const vmis = router({
  list: userProcedure
    .input(inNamespace)
    .query(
      async ({ ctx, input }) =>
        (await ctx.client.list<VirtualMachineInstance>(kubevirtResources.virtualMachineInstances, input.namespace))
          .items,
    ),
  get: userProcedure
    .input(target)
    .query(({ ctx, input }) =>
      ctx.client.get<VirtualMachineInstance>(kubevirtResources.virtualMachineInstances, input.namespace, input.name),
    ),
  watch: userProcedure
    .input(resumable)
    .subscription(({ ctx, input, signal }) =>
      listThenWatch<VirtualMachineInstance>(
        ctx.client,
        kubevirtResources.virtualMachineInstances,
        input.namespace,
        input.lastEventId,
        signal,
      ),
    ),
});

export const appRouter = router({
  health: publicProcedure.query(() => ({ ok: true as const })),
  whoami: userProcedure.query(({ ctx }) => whoAmI(ctx.client)),
  namespaces: userProcedure.query(async ({ ctx }) => {
    // Many users may not list namespaces; the dashboard then asks for one by name.
    const listed = ctx.client.list(resources.namespaces).then(
      (list) => ({ names: list.items.map((n) => n.metadata.name ?? "").sort(), mayList: true }),
      (error: unknown) => {
        if ((error as { code?: number }).code === 403) return { names: [] as string[], mayList: false };
        throw error;
      },
    );
    // The VM list of every namespace takes list and watch of VMs and VMIs cluster-wide: offered only to who may.
    const everywhere = Promise.all(ALL_NAMESPACES_CHECKS.map((check) => mayI(ctx.client, "", check))).then((answers) =>
      answers.every(Boolean),
    );
    const [namespaces, mayListVmsEverywhere] = await Promise.all([listed, everywhere]);
    return { ...namespaces, mayListVmsEverywhere };
  }),
  // The namespace's events, newest first, for the Events page.
  events: userProcedure
    .input(inNamespace)
    .query(async ({ ctx, input }) =>
      newestFirst((await ctx.client.list<Event>(resources.events, input.namespace)).items).slice(0, NAMESPACE_EVENTS),
    ),
  // Nodes with capacity, allocation and the VMs on each, for the node view.
  nodes: userProcedure.input(inNamespace).query(({ ctx, input }) => nodeFacts(ctx.client, input.namespace)),
  images: userProcedure.query(({ ctx }) => ctx.guestImages),
  // The cluster-wide instancetypes and preferences the create form offers (every signed-in user may read them).
  instancetypes: userProcedure.query(async ({ ctx }) => {
    const [sizes, preferences] = await Promise.all([
      ctx.client.list<KubeObject & { spec: InstancetypeSpec }>(instancetypeResources.VirtualMachineClusterInstancetype),
      ctx.client.list<KubeObject & { spec: PreferenceSpec }>(instancetypeResources.VirtualMachineClusterPreference),
    ]);
    return {
      sizes: sizes.items
        .map((i) => ({ name: i.metadata.name ?? "", cpu: i.spec.cpu.guest, memory: String(i.spec.memory.guest) }))
        .sort(bySeriesThenSize),
      preferences: preferences.items
        .map((p) => ({
          name: p.metadata.name ?? "",
          displayName: p.metadata.annotations?.["openshift.io/display-name"] ?? p.metadata.name ?? "",
        }))
        .sort((a, b) => a.name.localeCompare(b.name)),
    };
  }),
  // What the user may do in the namespace (RBAC); with a VM's name, also what that VM's state allows now
  // (availableActions).
  permissions: userProcedure.input(inNamespace.extend({ name: dnsLabel.optional() })).query(async ({ ctx, input }) => {
    const { name } = input;
    const state =
      name === undefined
        ? undefined
        : await vmAndVmi(ctx.client, { namespace: input.namespace, name }).then(({ vm, vmi }) =>
            availableActions(vm, vmi),
          );
    // Actions share permissions (start and stop both patch the VM): each distinct one is asked once.
    const asked = new Map<string, Promise<boolean>>();
    const may = (check: Check) => {
      const key = describeCheck(check);
      let answer = asked.get(key);
      if (!answer) asked.set(key, (answer = mayI(ctx.client, input.namespace, check)));
      return answer;
    };
    const entries = await Promise.all(
      (Object.keys(ACTIONS) as Action[]).map(async (action) => {
        const answers = await Promise.all(ACTIONS[action].map(may));
        const missing = ACTIONS[action].filter((_, i) => !answers[i]).map(describeCheck);
        const rbac =
          missing.length === 0
            ? { allowed: true }
            : {
                allowed: false,
                reason: `You may not ${PHRASES[action]} in ${input.namespace}: it takes ${missing.join(" and ")}.`,
              };
        const now = state && action in state ? state[action as VmActionName] : undefined;
        return [action, now ? { ...rbac, state: now } : rbac] as const;
      }),
    );
    return Object.fromEntries(entries) as Record<
      Action,
      { allowed: boolean; reason?: string; state?: ActionAvailability }
    >;
  }),
  vms,
  vmis,
  migrations,
  dataVolumes,
  snapshots,
  clones,
  exports,
});

export type AppRouter = typeof appRouter;
export type { WatchMessage } from "./watch.ts";
