import type { EventRecorder, Expectations, Informer, KubeClient, Reconcile } from "@kubevirt-ts/kube";
import {
  API_VERSION, Annotation, EVACUATION_GENERATE_NAME, type EvictionStrategy, Kind, type VirtualMachineInstance, type VirtualMachineInstanceMigration, evictionStrategyOf, isFinalMigrationPhase, isLiveMigratable,
  kubevirtResources,
} from "@kubevirt-ts/kubevirt-api";

// KubeVirt's evacuation controller: a VMI whose launcher pod's eviction was
// asked for (virt-api's eviction webhook wrote status.evacuationNodeName, its
// node) and whose eviction strategy migrates it gets a migration, named
// kubevirt-evacuation-…, unless one is going already. The migration
// controller's limits queue it; once it completed, the VMI controller clears
// the mark and the source pod goes, which lets the drain through.

/** The index of migrations by the VMI they name: namespace/name. */
export const MIGRATIONS_BY_VMI = "vmi";
export const migrationsByVmi = (m: VirtualMachineInstanceMigration): string[] => [`${m.metadata.namespace ?? ""}/${m.spec.vmiName}`];

export interface EvacuationDeps {
  client: KubeClient;
  vmis: Informer<VirtualMachineInstance>;
  migrations: Informer<VirtualMachineInstanceMigration>;
  expectations: Expectations;
  recorder: EventRecorder;
  evictionStrategy: EvictionStrategy;
}

/** Whether the VMI is to be moved off its node now. */
export function needsEvacuation(vmi: VirtualMachineInstance, clusterDefault: EvictionStrategy): boolean {
  const node = vmi.status?.nodeName;
  const strategy = evictionStrategyOf(vmi, clusterDefault);
  return node !== undefined && vmi.status?.evacuationNodeName === node && !vmi.metadata.deletionTimestamp && vmi.status.phase === "Running" && isLiveMigratable(vmi) && (strategy === "LiveMigrate" || strategy === "LiveMigrateIfPossible");
}

export function createEvacuationReconciler(deps: EvacuationDeps): Reconcile {
  const { client, vmis, migrations, expectations, recorder } = deps;
  return async (key) => {
    const vmi = vmis.get(key);
    if (!vmi) {
      expectations.deleteExpectations(key);
      return undefined;
    }
    if (!expectations.satisfied(key) || !needsEvacuation(vmi, deps.evictionStrategy)) return undefined;
    if (migrations.byIndex(MIGRATIONS_BY_VMI, key).some((m) => !isFinalMigrationPhase(m.status?.phase) && !m.metadata.deletionTimestamp)) return undefined;
    const node = vmi.status?.nodeName ?? "";
    const migration: VirtualMachineInstanceMigration = {
      apiVersion: API_VERSION,
      kind: Kind.VirtualMachineInstanceMigration,
      metadata: { generateName: EVACUATION_GENERATE_NAME, namespace: vmi.metadata.namespace, annotations: { [Annotation.EvacuationMigration]: node } },
      spec: { vmiName: vmi.metadata.name ?? "" },
    };
    expectations.expectCreations(key, 1);
    try {
      const created = await client.create(kubevirtResources.virtualMachineInstanceMigrations, vmi.metadata.namespace, migration);
      recorder.record(vmi, "Normal", "SuccessfulCreate", `Created migration ${created.metadata.name ?? ""} to move the VMI off node ${node}, whose drain asked for its eviction`);
    } catch (error) {
      expectations.creationObserved(key);
      throw error;
    }
    return undefined;
  };
}
