import { isDeepStrictEqual } from "node:util";
import type { KubeClient } from "@kubevirt-ts/kube";
import {
  type Cause,
  CauseType,
  type VirtualMachineInstance,
  type VirtualMachineInstanceMigration,
  kubevirtResources,
  summarize,
  validateMigration,
} from "@kubevirt-ts/kubevirt-api";
import { isFinalMigrationPhase, migrationRefusal } from "@kubevirt-ts/vm-rules";
import { type AdmissionReview, admissionAnswer } from "./webhooks.ts";

// The validating webhook of VirtualMachineInstanceMigrations, as KubeVirt's
// migration admitter: a new migration must have KubeVirt's shape (fields
// kubevirt-ts does not act on refused by path), name a VMI of its namespace
// that runs, can move (its LiveMigratable condition) and is not moving
// already, nor has another migration waiting; a migration's spec never
// changes once made. The VMI and the namespace's migrations are read with
// virt-api's own account, as KubeVirt's virt-api reads them.

const refuse = (uid: string, causes: Cause[]): AdmissionReview =>
  admissionAnswer(uid, {
    allowed: false,
    status: {
      code: 422,
      reason: "Invalid",
      message: summarize(causes),
      details: { causes: causes.map((c) => ({ reason: c.reason, field: c.field, message: c.message })) },
    },
  });

/**
 * Why a migration of this VMI cannot be made now, or undefined: migration.ts's rule and the namespace's other
 * migrations.
 */
async function vmiRefusal(
  own: KubeClient,
  namespace: string,
  migration: VirtualMachineInstanceMigration,
): Promise<string | undefined> {
  const { vmiName } = migration.spec;
  const vmi = await own.find<VirtualMachineInstance>(kubevirtResources.virtualMachineInstances, namespace, vmiName);
  if (!vmi)
    return (
      `VMI ${vmiName} does not exist in namespace ${namespace}: a migration names a ` +
      "VirtualMachineInstance of its own namespace"
    );
  const refusal = migrationRefusal(vmi);
  if (refusal !== undefined) return refusal;
  const others = (
    await own.list<VirtualMachineInstanceMigration>(kubevirtResources.virtualMachineInstanceMigrations, namespace)
  ).items;
  const waiting = others.find(
    (m) => m.spec.vmiName === vmiName && !isFinalMigrationPhase(m.status?.phase) && !m.metadata.deletionTimestamp,
  );
  if (waiting)
    return (
      `VMI ${vmiName} has a migration in flight already ` +
      `(${waiting.metadata.name ?? ""}, ${waiting.status?.phase ?? "Pending"}); wait for it to end, or ` +
      "delete it to cancel it"
    );
  return undefined;
}

export async function reviewMigration(review: AdmissionReview, own: KubeClient): Promise<AdmissionReview> {
  const request = review.request;
  if (!request) throw new Error("the AdmissionReview has no request");
  const specOf = (object: unknown) => (object as { spec?: unknown } | undefined)?.spec;
  if (request.operation === "UPDATE") {
    if (isDeepStrictEqual(specOf(request.object), specOf(request.oldObject)))
      return admissionAnswer(request.uid, { allowed: true });
    return refuse(request.uid, [
      {
        reason: CauseType.Invalid,
        field: "spec",
        message:
          "spec: a migration's spec cannot change once it is made; delete it (which cancels it) and make a new one",
      },
    ]);
  }
  const validated = validateMigration(request.object);
  if (!validated.ok) return refuse(request.uid, validated.causes);
  const refusal = await vmiRefusal(own, request.namespace ?? "", validated.value);
  if (refusal !== undefined)
    return refuse(request.uid, [
      { reason: CauseType.Invalid, field: "spec.vmiName", message: `spec.vmiName: ${refusal}` },
    ]);
  return admissionAnswer(request.uid, { allowed: true });
}
