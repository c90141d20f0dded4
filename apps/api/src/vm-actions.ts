import { ApiError, type KubeClient } from "@kubevirt-ts/kube";
import {
  DOMAIN_ACTION_SUBRESOURCE,
  type FreezeAction,
  type GuestAgentQuery,
  SUBRESOURCE_GROUP,
  type VirtualMachine,
  type VirtualMachineInstance,
  type VmiDomainAction,
  kubevirtResources,
} from "@kubevirt-ts/kubevirt-api";
import {
  MIGRATE_VM_GENERATE_NAME,
  newMigration,
  MIGRATION_SUBRESOURCE,
  migrationRefusal,
  type VmRequestAction,
  type VmRequestOptions,
  guestAgentRefusal,
  parseDurationSeconds,
  planVmRequest,
  unpauseAvailability,
  vmiActionAvailability,
} from "@kubevirt-ts/vm-rules";
import { StatusError } from "@kubevirt-ts/runtime";
import { type Check, type Requester, describeCheck } from "./access.ts";
import { type HandlerDialer, HandlerError } from "./handler-dialer.ts";

// One implementation of each action on a VM or VMI, whoever asks for it:
// KubeVirt's subresource API (kubectl, virtctl, any KubeVirt client, through
// the Kubernetes API server) and the dashboard's tRPC procedures. The user is
// first authorized for that exact subresource of that exact object, in
// KubeVirt's RBAC vocabulary (update on virtualmachines/start, ...); then the
// API makes the one write the action needs with its own account (ADR 6), or
// asks the handler on the VMI's node. Refusals carry KubeVirt's status codes
// and words.

export interface ActionServices {
  own: KubeClient;
  handlers: HandlerDialer;
}

export interface ActionTarget {
  namespace: string;
  name: string;
  /** The subresource API's version the request came in; any for the dashboard's. */
  version?: string;
}

/**
 * An action's options (dryRun: ["All"] checks without doing it), read only once the user is authorized: the subresource
 * API's come in the request's body.
 */
export type ReadOptions<T> = () => Promise<T & { dryRun?: string[] }>;
const noOptions = () => Promise.resolve({});

/** A refused action: its HTTP status, KubeVirt's message, and the object it is about. */
export class ActionRefusal extends StatusError {
  readonly details: { name: string; kind: "virtualmachine" | "virtualmachineinstance" } | undefined;
  constructor(status: number, message: string, details?: ActionRefusal["details"]) {
    super(status, message);
    this.details = details;
  }
}

/** A request body's JSON, or KubeVirt's 400 for a body that is not JSON. */
export function parseRequestJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new ActionRefusal(
      400,
      `Can not unmarshal Request body to struct, error: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
}

/** The permission an action takes: update on its subresource, as KubeVirt's roles grant it. */
export function actionCheck(
  resource: "virtualmachines" | "virtualmachineinstances",
  subresource: string,
  version?: string,
): Check {
  return { verb: "update", group: SUBRESOURCE_GROUP, resource, subresource, ...(version ? { version } : {}) };
}

export const vmActionCheck = (action: VmRequestAction) => actionCheck("virtualmachines", action);
export const vmiActionCheck = (action: VmiDomainAction) =>
  actionCheck("virtualmachineinstances", DOMAIN_ACTION_SUBRESOURCE[action]);

/** Conflict in KubeVirt's words: "Operation cannot be fulfilled on virtualmachine.kubevirt.io "<name>": <why>". */
function conflict(
  kind: "virtualmachine" | "virtualmachineinstance",
  name: string,
  why: string,
  code = 409,
): ActionRefusal {
  return new ActionRefusal(
    code,
    code === 409 ? `Operation cannot be fulfilled on ${kind}.kubevirt.io "${name}": ${why}` : why,
    { name, kind },
  );
}

/**
 * The handler's refusal as the API's: its 409 in its words, an unreachable handler 503, anything else an internal
 * error.
 */
function fromHandler(error: unknown): never {
  if (!(error instanceof HandlerError)) throw error;
  if (error.status === 409) throw new ActionRefusal(409, error.message);
  throw new ActionRefusal(error.status >= 500 ? 503 : 500, `Internal error occurred: ${error.message}`);
}

/** The user may do `check` on the target, or the request ends with a 403 that names the permission. */
export async function authorize(requester: Requester, target: ActionTarget, check: Check): Promise<void> {
  const answer = await requester.may(target.namespace, check, target.name);
  if (!answer.allowed)
    throw new ActionRefusal(403, requester.refusal(target.namespace, check, target.name, answer.reason));
}

/** start, stop or restart of a VM: vm-rules' planVmRequest, written with the API's own account. */
export async function requestVmAction(
  services: Pick<ActionServices, "own">,
  requester: Requester,
  target: ActionTarget,
  action: VmRequestAction,
  readOptions: ReadOptions<VmRequestOptions> = noOptions,
): Promise<void> {
  await authorize(requester, target, {
    ...vmActionCheck(action),
    ...(target.version ? { version: target.version } : {}),
  });
  const options = await readOptions();
  const { own } = services;
  const vm = await own.find<VirtualMachine>(kubevirtResources.virtualMachines, target.namespace, target.name);
  if (!vm)
    throw new ActionRefusal(404, `virtualmachine.kubevirt.io "${target.name}" not found`, {
      name: target.name,
      kind: "virtualmachine",
    });
  const vmi = await own.find<VirtualMachineInstance>(
    kubevirtResources.virtualMachineInstances,
    target.namespace,
    target.name,
  );
  const owned = vmi?.metadata.ownerReferences?.some((r) => r.controller === true && r.uid === vm.metadata.uid)
    ? vmi
    : undefined;
  const plan = planVmRequest(vm, owned, action, options);
  if (plan.kind === "refuse") throw conflict("virtualmachine", target.name, plan.message, plan.code);
  if (options.dryRun?.includes("All")) return;
  try {
    if (plan.vmiGrace && owned)
      await own.patch(kubevirtResources.virtualMachineInstances, target.namespace, target.name, plan.vmiGrace, "json");
    // The status first: a paused start of a Halted VM is in the status before its run strategy turns Always.
    if (plan.status)
      await own.patch(kubevirtResources.virtualMachines, target.namespace, target.name, plan.status, "json", "status");
    if (plan.spec) await own.patch(kubevirtResources.virtualMachines, target.namespace, target.name, plan.spec, "json");
  } catch (error) {
    // A test that no longer holds: the VM changed between reading and writing.
    if (error instanceof ApiError && (error.code === 409 || error.code === 422))
      throw conflict("virtualmachine", target.name, error.status.message ?? "the VM changed meanwhile; try again");
    throw error;
  }
}

/**
 * The node of a VMI the user may use this subresource of, whose state allows it now: the user authorized first, the
 * VMI read only then, its refusal (409 its state, 400 its spec) in KubeVirt's words.
 */
async function vmiNode(
  services: ActionServices,
  requester: Requester,
  target: ActionTarget,
  check: Check,
  refusal: (vmi: VirtualMachineInstance) => { status: 400 | 409; reason: string } | undefined,
): Promise<string> {
  await authorize(requester, target, { ...check, ...(target.version ? { version: target.version } : {}) });
  const vmi = await services.own.find<VirtualMachineInstance>(
    kubevirtResources.virtualMachineInstances,
    target.namespace,
    target.name,
  );
  if (!vmi)
    throw new ActionRefusal(404, `virtualmachineinstance.kubevirt.io "${target.name}" not found`, {
      name: target.name,
      kind: "virtualmachineinstance",
    });
  const refused = refusal(vmi);
  if (refused) throw conflict("virtualmachineinstance", target.name, refused.reason, refused.status);
  const node = vmi.status?.nodeName;
  if (!node) throw conflict("virtualmachineinstance", target.name, "the VMI has no node yet");
  return node;
}

/** availableActions' rule for a VMI action or console, as vmiNode's refusal. */
const unavailable = (action: VmiDomainAction | "vnc") => (vmi: VirtualMachineInstance) => {
  const availability = vmiActionAvailability(vmi, action);
  return availability.available
    ? undefined
    : { status: availability.by === "spec" ? (400 as const) : (409 as const), reason: availability.reason };
};

const getCheck = (subresource: string): Check => ({
  verb: "get",
  group: SUBRESOURCE_GROUP,
  resource: "virtualmachineinstances",
  subresource,
});

/**
 * pause, unpause, soft reboot or reset of a VMI: checked as KubeVirt does, then asked of the handler on the VMI's node.
 */
export async function requestVmiAction(
  services: ActionServices,
  requester: Requester,
  target: ActionTarget,
  action: VmiDomainAction,
  readOptions: ReadOptions<object> = noOptions,
): Promise<void> {
  const node = await vmiNode(services, requester, target, vmiActionCheck(action), unavailable(action));
  if (action === "unpause") {
    // As KubeVirt's virt-api: not while a snapshot of the VM of the VMI's name is under way (it may hold the pause).
    const vm = await services.own.find<VirtualMachine>(
      kubevirtResources.virtualMachines,
      target.namespace,
      target.name,
    );
    const held = unpauseAvailability(vm);
    if (!held.available) throw conflict("virtualmachine", target.name, held.reason);
  }
  if ((await readOptions()).dryRun?.includes("All")) return;
  await services.handlers.act(node, target.namespace, target.name, action).catch(fromHandler);
}

/**
 * guestosinfo, userlist or filesystemlist: get on that subresource, then the guest agent asked through the handler on
 * the VMI's node.
 */
export async function requestGuestAgent(
  services: ActionServices,
  requester: Requester,
  target: ActionTarget,
  query: GuestAgentQuery,
): Promise<unknown> {
  const node = await vmiNode(services, requester, target, getCheck(query), (vmi) => {
    const reason = guestAgentRefusal(vmi);
    return reason === undefined ? undefined : { status: 409, reason };
  });
  return services.handlers.guestAgent(node, target.namespace, target.name, query).catch(fromHandler);
}

/** vnc/screenshot: get on that subresource, then the display's PNG from the handler on the VMI's node. */
export async function requestScreenshot(
  services: ActionServices,
  requester: Requester,
  target: ActionTarget,
): Promise<Buffer> {
  const node = await vmiNode(services, requester, target, getCheck("vnc/screenshot"), unavailable("vnc"));
  return services.handlers.screenshot(node, target.namespace, target.name).catch(fromHandler);
}

/**
 * The permission the guest's serial log takes. KubeVirt serves it as its launcher pod's guest-console-log container
 * (`kubectl logs -c guest-console-log`), so it takes get on pods/log in the VM's namespace; the view role has it.
 */
export const SERIAL_LOG_CHECK: Check = { verb: "get", group: "", resource: "pods", subresource: "log" };

/**
 * What the VMI's guest printed on its serial console since boot (its last 512 KiB), from the handler on its node, for a
 * user who may read pod logs in its namespace.
 */
export async function requestSerialLog(
  services: ActionServices,
  requester: Requester,
  target: ActionTarget,
): Promise<Buffer> {
  const answer = await requester.may(target.namespace, SERIAL_LOG_CHECK, "");
  if (!answer.allowed)
    throw new ActionRefusal(
      403,
      `You may not read the serial log of ${target.name} in ${target.namespace}: it ` +
        `takes ${describeCheck(SERIAL_LOG_CHECK)}.`,
    );
  const vmi = await services.own.find<VirtualMachineInstance>(
    kubevirtResources.virtualMachineInstances,
    target.namespace,
    target.name,
  );
  if (!vmi)
    throw new ActionRefusal(404, "the VM is not running: its serial log begins with its next start", {
      name: target.name,
      kind: "virtualmachineinstance",
    });
  if (vmi.spec.domain.devices.logSerialConsole === false)
    throw conflict(
      "virtualmachineinstance",
      target.name,
      "the VMI keeps no serial log: spec.domain.devices.logSerialConsole is false",
      400,
    );
  const node = vmi.status?.nodeName;
  if (!node)
    throw conflict(
      "virtualmachineinstance",
      target.name,
      "the VMI has no node yet: its serial log begins once it is placed",
    );
  return services.handlers.serialLog(node, target.namespace, target.name).catch(fromHandler);
}

/**
 * freeze or unfreeze of the guest's file systems: update on that subresource, then the guest agent asked through the
 * handler. A freeze takes KubeVirt's unfreezeTimeout (a duration such as "5m"; "0s": until unfrozen), after which the
 * file systems thaw by themselves.
 */
export async function requestFreeze(
  services: ActionServices,
  requester: Requester,
  target: ActionTarget,
  action: FreezeAction,
  readOptions: ReadOptions<{ unfreezeTimeout?: string }> = noOptions,
): Promise<void> {
  const node = await vmiNode(services, requester, target, actionCheck("virtualmachineinstances", action), (vmi) => {
    const reason = guestAgentRefusal(vmi);
    return reason === undefined ? undefined : { status: 409, reason };
  });
  const options = await readOptions();
  let seconds = 0;
  if (action === "freeze") {
    if (options.unfreezeTimeout === undefined)
      throw new ActionRefusal(
        400,
        'Unfreeze timeout must be specified: send unfreezeTimeout, a duration such as "5m", ' +
          "after which the file systems thaw by themselves",
      );
    const parsed = parseDurationSeconds(options.unfreezeTimeout);
    if (parsed === undefined)
      throw new ActionRefusal(
        400,
        `unfreezeTimeout must be a duration such as "5m" or "90s", not ${JSON.stringify(options.unfreezeTimeout)}`,
      );
    seconds = parsed;
  }
  if (options.dryRun?.includes("All")) return;
  await services.handlers.freeze(node, target.namespace, target.name, action, seconds).catch(fromHandler);
}

/** KubeVirt's MigrateOptions: addedNodeSelector, labels the target node must have besides the VMI's nodeSelector. */
export interface MigrateOptions {
  addedNodeSelector?: Record<string, string>;
}

/**
 * migrate of a VM (virtctl migrate), as KubeVirt's virt-api serves it: update on virtualmachines/migrate, then a
 * VirtualMachineInstanceMigration of the VM's running VMI, named kubevirt-migrate-vm-…, made with the API's own
 * account (ADR 6), which the migration webhook checks as any other. Its name.
 */
export async function requestMigration(
  services: Pick<ActionServices, "own">,
  requester: Requester,
  target: ActionTarget,
  readOptions: ReadOptions<MigrateOptions> = noOptions,
): Promise<string> {
  await authorize(requester, target, {
    ...actionCheck("virtualmachines", MIGRATION_SUBRESOURCE),
    ...(target.version ? { version: target.version } : {}),
  });
  const options = await readOptions();
  const { own } = services;
  const vm = await own.find<VirtualMachine>(kubevirtResources.virtualMachines, target.namespace, target.name);
  if (!vm)
    throw new ActionRefusal(404, `virtualmachine.kubevirt.io "${target.name}" not found`, {
      name: target.name,
      kind: "virtualmachine",
    });
  const vmi = await own.find<VirtualMachineInstance>(
    kubevirtResources.virtualMachineInstances,
    target.namespace,
    target.name,
  );
  if (!vmi?.metadata.ownerReferences?.some((r) => r.controller === true && r.uid === vm.metadata.uid))
    throw conflict("virtualmachine", target.name, "VM is not running");
  const refusal = migrationRefusal(vmi);
  if (refusal !== undefined) throw conflict("virtualmachine", target.name, refusal);
  const migration = newMigration(target.namespace, target.name, MIGRATE_VM_GENERATE_NAME, {
    ...(options.addedNodeSelector ? { spec: { addedNodeSelector: options.addedNodeSelector } } : {}),
  });
  const created = await own.create(
    kubevirtResources.virtualMachineInstanceMigrations,
    target.namespace,
    migration,
    options.dryRun?.includes("All") ? { dryRun: "All" } : {},
  );
  return created.metadata.name ?? "";
}
