import {
  EXPECTATIONS_RECHECK_MS,
  type EventRecorder,
  type Expectations,
  type Informer,
  type KubeClient,
  type PersistentVolumeClaim,
  type Reconcile,
  WrittenVersions,
  addFinalizer,
  isAlreadyExists,
  isNotFound,
  kubeTime,
  removeFinalizer,
  writeStatusIfChanged,
} from "@kubevirt-ts/kube";
import {
  API_VERSION,
  Annotation,
  type DataVolume,
  EventReason,
  Finalizer,
  Kind,
  Label,
  PrintableStatus,
  type VirtualMachine,
  type VirtualMachineInstance,
  type VmStatus,
  VmiPhase,
  defaultVmiSpec,
  runStrategyOf,
  kubevirtResources,
  controllerRef,
  controllerRevisions,
} from "@kubevirt-ts/kubevirt-api";
import {
  type StartRevision,
  claimVolumes,
  isFinalPhase,
  startRevisionFor,
  startRevisionName,
  startRevisionOf,
  startRevisionPrefix,
  templateChanged,
} from "@kubevirt-ts/vm-rules";
import type { Logger } from "@kubevirt-ts/runtime";
import { controllerOf } from "../common/owner.ts";

import { dataVolumesOf } from "../vmi/claim-events.ts";
import { ensureDataVolumes } from "./data-volumes.ts";
import { type VmAction, backoffMs, decide } from "./decide.ts";
import { InstancetypeLookup, type Sizing, sizeVm } from "./instancetype.ts";
import { deriveVmStatus } from "./status.ts";

// The VirtualMachine controller: keeps each VM's VMI in the state its run
// strategy and start/stop requests call for, and reports it in the VM's status.

export interface VmControllerDeps {
  client: KubeClient;
  vms: Informer<VirtualMachine>;
  vmis: Informer<VirtualMachineInstance>;
  /** PersistentVolumeClaims: whether the VM's claims are bound yet. */
  claims: Informer<PersistentVolumeClaim>;
  /** DataVolumes, where the cluster serves the kind (CDI's, or kubevirt-ts's own); undefined where it does not. */
  dataVolumes: Informer<DataVolume> | undefined;
  expectations: Expectations;
  recorder: EventRecorder;
  log: Logger;
  now: () => Date;
}

/** Whether a claim the VM's volumes name exists but is not bound yet (KubeVirt's WaitingForVolumeBinding). */
function unboundClaims(vm: VirtualMachine, claims: Informer<PersistentVolumeClaim>): boolean {
  return claimVolumes(vm.spec.template.spec).some((c) => {
    const claim = claims.get(`${vm.metadata.namespace ?? ""}/${c.claimName}`);
    return claim !== undefined && claim.status?.phase !== "Bound";
  });
}

/**
 * The VMI a VM creates: its template (as its instancetype and preference expand it), with KubeVirt's defaults, owned by
 * the VM; paused at start when a start request asked so, as KubeVirt sets the VMI's startStrategy then.
 */
export function vmiForVm(
  vm: VirtualMachine,
  expanded: NonNullable<Sizing["expanded"]>,
  paused = false,
): VirtualMachineInstance {
  const template = vm.spec.template;
  return {
    apiVersion: API_VERSION,
    kind: Kind.VirtualMachineInstance,
    metadata: {
      name: vm.metadata.name,
      namespace: vm.metadata.namespace,
      labels: { ...template.metadata?.labels, [Label.VmName]: vm.metadata.name ?? "" },
      annotations: { ...expanded.annotations, [Annotation.VmGeneration]: String(vm.metadata.generation ?? 0) },
      ownerReferences: [controllerRef({ apiVersion: API_VERSION, kind: Kind.VirtualMachine, metadata: vm.metadata })],
    },
    spec: defaultVmiSpec(paused ? { ...expanded.spec, startStrategy: "Paused" } : expanded.spec),
  };
}

interface SyncOutcome {
  action: VmAction;
  startFailure: VmStatus["startFailure"];
  error?: { reason: string; message: string };
  requeueAfterMs?: number;
}

export function createVmReconciler(deps: VmControllerDeps): Reconcile {
  const { client, vms, vmis, expectations, recorder, log, now } = deps;

  async function execute(
    vm: VirtualMachine,
    action: VmAction,
    key: string,
    startFailure: VmStatus["startFailure"],
    sizing: Sizing,
    /** The VMI the action was decided on: a delete action's. */
    vmi: VirtualMachineInstance | undefined,
  ): Promise<SyncOutcome> {
    const { namespace, name = "" } = vm.metadata;
    switch (action.kind) {
      case "none":
        return { action, startFailure };
      case "backoff":
        return { action, startFailure, requeueAfterMs: Math.max(action.untilMs - now().getTime(), 0) + 100 };
      case "create": {
        if (!sizing.expanded) return { action: { kind: "none" }, startFailure, error: sizing.problem };
        try {
          await keepStartRevision(vm);
        } catch (error) {
          return {
            action: { kind: "none" },
            startFailure,
            error: { reason: EventReason.FailedCreate, message: String(error) },
          };
        }
        expectations.expectCreations(key, 1);
        try {
          await client.create(
            kubevirtResources.virtualMachineInstances,
            namespace,
            vmiForVm(vm, sizing.expanded, action.paused === true),
          );
          recorder.record(
            vm,
            "Normal",
            EventReason.SuccessfulCreate,
            `Started the virtual machine by creating the new virtual machine instance ${name}`,
          );
        } catch (error) {
          expectations.creationObserved(key);
          if (isAlreadyExists(error)) return { action, startFailure };
          recorder.record(
            vm,
            "Warning",
            EventReason.FailedCreate,
            `Error creating virtual machine instance ${name}: ${String(error)}`,
          );
          return { action, startFailure, error: { reason: EventReason.FailedCreate, message: String(error) } };
        }
        return { action, startFailure };
      }
      case "delete": {
        let failure = startFailure;
        if (action.failedEarly && startFailure?.lastFailedVMIUID !== action.uid) {
          const count = (startFailure?.consecutiveFailCount ?? 0) + 1;
          failure = {
            consecutiveFailCount: count,
            lastFailedVMIUID: action.uid,
            retryAfterTimestamp: kubeTime(new Date(now().getTime() + backoffMs(count))),
          };
        }
        // Why a failed VMI failed (say, its liveness probe) outlives it in the VM's events: from the VMI the decision
        // was made on, which the informer may have dropped by the time the deletion returns.
        const why = action.failed ? vmi?.status?.message : undefined;
        expectations.expectDeletions(key, 1);
        try {
          await client.delete(kubevirtResources.virtualMachineInstances, namespace, name, { uid: action.uid });
          recorder.record(
            vm,
            "Normal",
            EventReason.SuccessfulDelete,
            "Stopped the virtual machine by deleting the virtual machine " +
              `instance ${action.uid}${why ? `, which failed: ${why}` : ""}`,
          );
        } catch (error) {
          expectations.deletionObserved(key);
          if (!isNotFound(error)) {
            recorder.record(
              vm,
              "Warning",
              EventReason.FailedDelete,
              `Error deleting virtual machine instance ${name}: ${String(error)}`,
            );
            return {
              action,
              startFailure: failure,
              error: { reason: EventReason.FailedDelete, message: String(error) },
            };
          }
        }
        return { action, startFailure: failure };
      }
    }
  }

  /** The VM is being deleted: its VMI goes first, then the finalizer. */
  async function finalize(vm: VirtualMachine, vmi: VirtualMachineInstance | undefined, key: string): Promise<void> {
    if (vmi) {
      if (!vmi.metadata.deletionTimestamp) {
        expectations.expectDeletions(key, 1);
        await client
          .delete(kubevirtResources.virtualMachineInstances, vmi.metadata.namespace, vmi.metadata.name ?? "", {
            uid: vmi.metadata.uid,
          })
          .catch((error: unknown) => {
            expectations.deletionObserved(key);
            if (!isNotFound(error)) throw error;
          });
      }
      return;
    }
    await removeFinalizer(client, kubevirtResources.virtualMachines, vm, Finalizer.VmController);
  }

  /**
   * The VM's spec as of its VMI's start, in the revision made for it: the one of the VM's last start, before its VMI is
   * made, and no other (KubeVirt's). The revision of this generation there already (a start tried again) is kept.
   */
  async function keepStartRevision(vm: VirtualMachine): Promise<void> {
    const { namespace, uid = "", generation = 0 } = vm.metadata;
    const keep = startRevisionName(uid, generation);
    const stale = (
      await client.list<StartRevision>(controllerRevisions, namespace, { labelSelector: `${Label.CreatedBy}=${uid}` })
    ).items.filter((r) => r.metadata.name?.startsWith(startRevisionPrefix(uid)) && r.metadata.name !== keep);
    for (const old of stale)
      await client.delete(controllerRevisions, namespace, old.metadata.name ?? "").catch((error: unknown) => {
        if (!isNotFound(error)) throw error;
      });
    await client.create(controllerRevisions, namespace, startRevisionFor(vm)).catch((error: unknown) => {
      if (!isAlreadyExists(error)) throw error;
    });
  }

  /** Each VM's start revision read, by the VM's key: a revision never changes once made. */
  const startSpecs = new Map<string, { name: string; spec: VirtualMachine["spec"] }>();
  /** Whether the running VM's template has changed since its VMI was started (false when that is not known). */
  async function restartRequired(vm: VirtualMachine, vmi: VirtualMachineInstance | undefined): Promise<boolean> {
    const name = vmi && !isFinalPhase(vmi.status?.phase) ? startRevisionOf(vm, vmi) : undefined;
    if (name === undefined) return false;
    const key = `${vm.metadata.namespace ?? ""}/${vm.metadata.name ?? ""}`;
    let spec = startSpecs.get(key)?.name === name ? startSpecs.get(key)?.spec : undefined;
    if (spec === undefined) {
      spec = (await client.find<StartRevision>(controllerRevisions, vm.metadata.namespace, name))?.data?.spec;
      if (spec === undefined) return false;
      startSpecs.set(key, { name, spec });
    }
    return templateChanged(spec, vm);
  }

  const written = new WrittenVersions();
  const instancetypes = new InstancetypeLookup(client);
  return async (key) => {
    const cached = vms.get(key);
    if (!cached) {
      expectations.deleteExpectations(key);
      written.forget(key);
      instancetypes.forget(key);
      startSpecs.delete(key);
      return undefined;
    }
    // Our own last write has not reached the cache yet: its watch event brings the VM back here.
    if (written.isStale(key, cached.metadata.resourceVersion)) return undefined;
    // The cache may not show the VMI just created or deleted yet; deciding now could do it twice.
    if (!expectations.satisfied(key)) return { requeueAfterMs: EXPECTATIONS_RECHECK_MS };
    // A VM's VMI has its name: the same key.
    let vmi = vmis.get(key);
    if (vmi && controllerOf(vmi)?.uid !== cached.metadata.uid) {
      log.warn("a VMI of the VM's name is not controlled by it; leaving it alone", { vm: key });
      vmi = undefined;
    }
    if (cached.metadata.deletionTimestamp) {
      // As KubeVirt's: a VM being deleted reads Terminating until it is gone (while its VMI goes, or another's
      // finalizer holds it).
      const terminating = await writeStatusIfChanged(client, kubevirtResources.virtualMachines, cached, {
        ...cached.status,
        printableStatus: PrintableStatus.Terminating,
      });
      if (terminating) written.wrote(key, cached.metadata.resourceVersion);
      await finalize(cached, vmi, key);
      return undefined;
    }
    const vm = await addFinalizer(client, kubevirtResources.virtualMachines, cached, Finalizer.VmController);

    const runStrategy = runStrategyOf(vm.spec);
    const decision = decide({
      runStrategy,
      previousRunStrategy: vm.status?.runStrategy,
      // Written by the API's start, stop and restart (vm-rules' planVmRequest), as KubeVirt's virt-api writes them.
      requests: vm.status?.stateChangeRequests ?? [],
      vmi: vmi
        ? {
            uid: vmi.metadata.uid ?? "",
            phase: vmi.status?.phase,
            deleting: Boolean(vmi.metadata.deletionTimestamp),
            ran: (vmi.status?.phaseTransitionTimestamps ?? []).some((t) => t.phase === VmiPhase.Running),
          }
        : undefined,
      startFailure: vm.status?.startFailure,
      restoreInProgress: vm.status?.restoreInProgress,
      snapshotInProgress: vm.status?.snapshotInProgress,
      now: now(),
    });
    const sizing = await sizeVm(client, instancetypes, vm);
    const dataVolumeError = await ensureDataVolumes(client, deps.dataVolumes, recorder, vm);
    const dataVolumes = dataVolumesOf(vm.metadata.namespace, vm.spec.template.spec, deps.dataVolumes);
    // As KubeVirt's: the VMI is made once its DataVolumes are in (or wait for its pod to bind their claims).
    const action: VmAction =
      decision.action.kind === "create" && dataVolumes?.ready === false ? { kind: "none" } : decision.action;
    const outcome = await execute(vm, action, key, vm.status?.startFailure, sizing, vmi);
    // A VMI that reached Running ends the crash loop.
    const startFailure = vmi?.status?.phase === "Running" ? undefined : outcome.startFailure;
    const status = deriveVmStatus({
      vm,
      vmi,
      runStrategy,
      requests: decision.requests,
      action: outcome.action,
      startFailure,
      syncError: outcome.error ?? sizing.problem ?? dataVolumeError,
      now: now(),
      unboundClaims: unboundClaims(vm, deps.claims),
      dataVolumes,
      startHeld: action !== decision.action,
      instancetypeRef: sizing.instancetypeRef,
      preferenceRef: sizing.preferenceRef,
      restartRequired: await restartRequired(vm, vmi),
    });
    const updated = await writeStatusIfChanged(client, kubevirtResources.virtualMachines, vm, status);
    if (updated) written.wrote(key, cached.metadata.resourceVersion, vm.metadata.resourceVersion);
    else if (vm !== cached) written.wrote(key, cached.metadata.resourceVersion);
    if (outcome.error) throw new Error(`${outcome.error.reason}: ${outcome.error.message}`);
    return outcome.requeueAfterMs === undefined ? undefined : { requeueAfterMs: outcome.requeueAfterMs };
  };
}
