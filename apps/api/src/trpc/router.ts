import { type KubeClient, type KubeObject, isNotFound, resources } from "@kubevirt-ts/kube";
import {
  SUBRESOURCE_GROUP, type VirtualMachine, dnsLabelProblem, type VirtualMachineInstance, type VmiDomainAction, planLifecycle, summarize, validateVirtualMachine,
} from "@kubevirt-ts/kubevirt-api";
import { TRPCError } from "@trpc/server";
import { z } from "zod";
import { type HandlerDialer, HandlerError } from "../handler-dialer.ts";
import { type Check, describeCheck, mayI } from "../access.ts";
import { CausesError, publicProcedure, router, userProcedure } from "./init.ts";
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
const resumable = z.object({ namespace: dnsLabel, lastEventId: z.string().nullish() });

/** Every action the dashboard offers, as the Kubernetes permission it takes. */
const ACTIONS = {
  list: [{ verb: "list", resource: "virtualmachines" }],
  create: [{ verb: "create", resource: "virtualmachines" }],
  update: [{ verb: "update", resource: "virtualmachines" }],
  delete: [{ verb: "delete", resource: "virtualmachines" }],
  start: [{ verb: "patch", resource: "virtualmachines" }],
  stop: [{ verb: "patch", resource: "virtualmachines" }],
  forceStop: [{ verb: "patch", resource: "virtualmachines" }, { verb: "delete", resource: "virtualmachineinstances" }],
  restart: [{ verb: "delete", resource: "virtualmachineinstances" }],
  pause: [{ verb: "update", group: SUBRESOURCE_GROUP, resource: "virtualmachineinstances", subresource: "pause" }],
  unpause: [{ verb: "update", group: SUBRESOURCE_GROUP, resource: "virtualmachineinstances", subresource: "unpause" }],
  softReboot: [{ verb: "update", group: SUBRESOURCE_GROUP, resource: "virtualmachineinstances", subresource: "softreboot" }],
  reset: [{ verb: "update", group: SUBRESOURCE_GROUP, resource: "virtualmachineinstances", subresource: "reset" }],
  console: [{ verb: "get", group: SUBRESOURCE_GROUP, resource: "virtualmachineinstances", subresource: "console" }],
  vnc: [{ verb: "get", group: SUBRESOURCE_GROUP, resource: "virtualmachineinstances", subresource: "vnc" }],
} as const;
type Action = keyof typeof ACTIONS;

/** What each action is, for messages: "You may not <phrase> in <namespace>". */
const PHRASES: Record<Action, string> = {
  list: "list VMs",
  create: "create VMs",
  update: "edit VMs",
  delete: "delete VMs",
  start: "start VMs",
  stop: "stop VMs",
  forceStop: "force stop VMs",
  restart: "restart VMs",
  pause: "pause VMs",
  unpause: "unpause VMs",
  softReboot: "soft reboot VMs",
  reset: "reset VMs",
  console: "open the serial console of VMs",
  vnc: "open the display (VNC) of VMs",
};

async function requireAction(client: KubeClient, namespace: string, action: Action, name: string): Promise<void> {
  for (const check of ACTIONS[action]) {
    if (!(await mayI(client, namespace, check, name))) throw new TRPCError({ code: "FORBIDDEN", message: `You may not ${PHRASES[action]} in ${namespace}: it takes ${describeCheck(check)}.` });
  }
}

async function getOrUndefined<T extends KubeObject>(promise: Promise<T>): Promise<T | undefined> {
  try {
    return await promise;
  } catch (error) {
    if (isNotFound(error)) return undefined;
    throw error;
  }
}

function checkedVm(input: unknown, namespace: string, name?: string): VirtualMachine {
  const object = typeof input === "object" && input !== null ? (input as Record<string, unknown>) : {};
  const metadata: Record<string, unknown> = { ...(object.metadata as Record<string, unknown> | undefined), namespace };
  if (name !== undefined && metadata.name !== name) throw new CausesError(`metadata.name must stay ${name}`, [{ field: "metadata.name", message: `metadata.name must stay ${name}: a VM cannot be renamed`, reason: "FieldValueInvalid" }]);
  const result = validateVirtualMachine({ apiVersion: "kubevirt.io/v1", kind: "VirtualMachine", ...object, metadata });
  if (!result.ok) throw new CausesError(summarize(result.causes), result.causes);
  return result.value;
}

async function domainAction(ctx: { client: KubeClient; handlers: HandlerDialer }, input: { namespace: string; name: string }, action: Action, handlerAction: VmiDomainAction) {
  await requireAction(ctx.client, input.namespace, action, input.name);
  const vmi = await getOrUndefined(ctx.client.get<VirtualMachineInstance>(resources.virtualMachineInstances, input.namespace, input.name));
  if (!vmi?.status?.nodeName) throw new TRPCError({ code: "CONFLICT", message: `The VM ${input.name} is not running; start it first.` });
  try {
    await ctx.handlers.act(vmi.status.nodeName, input.namespace, input.name, handlerAction);
  } catch (error) {
    if (error instanceof HandlerError) throw new TRPCError({ code: error.status === 409 ? "CONFLICT" : "INTERNAL_SERVER_ERROR", message: error.message });
    throw error;
  }
  return { ok: true as const };
}

const lifecycle = (action: "start" | "stop" | "restart" | "forceStop") =>
  userProcedure.input(target).mutation(async ({ ctx, input }) => {
    const vm = await ctx.client.get<VirtualMachine>(resources.virtualMachines, input.namespace, input.name);
    const vmi = await getOrUndefined(ctx.client.get<VirtualMachineInstance>(resources.virtualMachineInstances, input.namespace, input.name));
    const plan = planLifecycle(vm, vmi !== undefined, action === "forceStop" ? "stop" : action);
    if (plan.kind === "refuse" && !(action === "forceStop" && vmi)) throw new TRPCError({ code: "CONFLICT", message: `Cannot ${action === "forceStop" ? "force stop" : action} ${input.name}: ${plan.reason}.` });
    if (plan.kind === "patch") await ctx.client.patch(resources.virtualMachines, input.namespace, input.name, plan.patch, "merge");
    if (plan.kind === "deleteVmi" || (action === "forceStop" && vmi)) {
      await ctx.client.delete(resources.virtualMachineInstances, input.namespace, input.name, { uid: vmi?.metadata.uid, ...(action === "forceStop" ? { gracePeriodSeconds: 0 } : {}) });
    }
    return { ok: true as const };
  });

const vms = router({
  list: userProcedure.input(inNamespace).query(async ({ ctx, input }) => (await ctx.client.list<VirtualMachine>(resources.virtualMachines, input.namespace)).items),
  get: userProcedure.input(target).query(({ ctx, input }) => ctx.client.get<VirtualMachine>(resources.virtualMachines, input.namespace, input.name)),
  watch: userProcedure.input(resumable).subscription(({ ctx, input, signal }) => listThenWatch<VirtualMachine>(ctx.client, resources.virtualMachines, input.namespace, input.lastEventId, signal)),
  create: userProcedure.input(z.object({ namespace: dnsLabel, vm: z.unknown() })).mutation(({ ctx, input }) => ctx.client.create(resources.virtualMachines, input.namespace, checkedVm(input.vm, input.namespace))),
  update: userProcedure.input(target.extend({ vm: z.unknown() })).mutation(({ ctx, input }) => ctx.client.update(resources.virtualMachines, checkedVm(input.vm, input.namespace, input.name))),
  delete: userProcedure.input(target).mutation(async ({ ctx, input }) => {
    await ctx.client.delete(resources.virtualMachines, input.namespace, input.name);
    return { ok: true as const };
  }),
  start: lifecycle("start"),
  stop: lifecycle("stop"),
  forceStop: lifecycle("forceStop"),
  restart: lifecycle("restart"),
  pause: userProcedure.input(target).mutation(({ ctx, input }) => domainAction(ctx, input, "pause", "pause")),
  unpause: userProcedure.input(target).mutation(({ ctx, input }) => domainAction(ctx, input, "unpause", "unpause")),
  softReboot: userProcedure.input(target).mutation(({ ctx, input }) => domainAction(ctx, input, "softReboot", "softreboot")),
  reset: userProcedure.input(target).mutation(({ ctx, input }) => domainAction(ctx, input, "reset", "reset")),
  events: userProcedure.input(target).query(async ({ ctx, input }) => {
    interface Event extends KubeObject {
      type?: string;
      reason?: string;
      message?: string;
      count?: number;
      lastTimestamp?: string;
      eventTime?: string;
      involvedObject?: { kind?: string; name?: string };
    }
    const events = await ctx.client.list<Event>(resources.events, input.namespace, { fieldSelector: `involvedObject.name=${input.name}` });
    return events.items
      .map((e) => ({ type: e.type ?? "Normal", reason: e.reason ?? "", message: e.message ?? "", kind: e.involvedObject?.kind ?? "", count: e.count ?? 1, time: e.lastTimestamp ?? e.eventTime ?? e.metadata.creationTimestamp ?? "" }))
      .sort((a, b) => b.time.localeCompare(a.time));
  }),
});

const vmis = router({
  list: userProcedure.input(inNamespace).query(async ({ ctx, input }) => (await ctx.client.list<VirtualMachineInstance>(resources.virtualMachineInstances, input.namespace)).items),
  get: userProcedure.input(target).query(({ ctx, input }) => ctx.client.get<VirtualMachineInstance>(resources.virtualMachineInstances, input.namespace, input.name)),
  watch: userProcedure.input(resumable).subscription(({ ctx, input, signal }) => listThenWatch<VirtualMachineInstance>(ctx.client, resources.virtualMachineInstances, input.namespace, input.lastEventId, signal)),
});

export const appRouter = router({
  health: publicProcedure.query(() => ({ ok: true as const })),
  whoami: userProcedure.query(async ({ ctx }) => {
    const review = await ctx.client.create<KubeObject & { status?: { userInfo?: { username?: string; groups?: string[] } } }>(resources.selfSubjectReviews, undefined, {
      apiVersion: "authentication.k8s.io/v1",
      kind: "SelfSubjectReview",
      metadata: {},
    });
    return { username: review.status?.userInfo?.username ?? "", groups: review.status?.userInfo?.groups ?? [] };
  }),
  namespaces: userProcedure.query(async ({ ctx }) => {
    // Many users may not list namespaces; the dashboard then asks for one by name.
    try {
      return { names: (await ctx.client.list(resources.namespaces)).items.map((n) => n.metadata.name ?? "").sort(), mayList: true };
    } catch (error) {
      if ((error as { code?: number }).code === 403) return { names: [], mayList: false };
      throw error;
    }
  }),
  nodes: userProcedure.query(async ({ ctx }) => {
    interface Node extends KubeObject {
      status?: { conditions?: { type: string; status: string }[]; addresses?: { type: string; address: string }[] };
    }
    return (await ctx.client.list<Node>(resources.nodes)).items.map((n) => ({
      name: n.metadata.name ?? "",
      ready: n.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") ?? false,
      address: n.status?.addresses?.find((a) => a.type === "InternalIP")?.address ?? "",
    }));
  }),
  images: userProcedure.query(({ ctx }) => ctx.guestImages),
  permissions: userProcedure.input(inNamespace).query(async ({ ctx, input }) => {
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
        return [action, missing.length === 0 ? { allowed: true } : { allowed: false, reason: `You may not ${PHRASES[action]} in ${input.namespace}: it takes ${missing.join(" and ")}.` }] as const;
      }),
    );
    return Object.fromEntries(entries) as Record<Action, { allowed: boolean; reason?: string }>;
  }),
  vms,
  vmis,
});

export type AppRouter = typeof appRouter;
export type { WatchMessage } from "./watch.ts";
