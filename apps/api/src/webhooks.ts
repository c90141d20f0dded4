import { isDeepStrictEqual } from "node:util";
import {
  API_VERSION,
  type Cause,
  CauseType,
  DEPRECATED_API_VERSION,
  type ExpansionSources,
  Finalizer,
  type InferenceRefusal,
  Label,
  type Lookup,
  VmiPhase,
  defaultVirtualMachine,
  defaultVirtualMachineInstance,
  expansionSources,
  findInstancetypeAndPreference,
  DEFAULTING_OPTIONS,
  type DefaultingOptions,
  featureGateWarnings,
  inferFromVolumes,
  parseVirtualMachine,
  summarize,
  validateDataVolume,
  validateKubeVirt,
  validateMigrationPolicy,
  validateVirtualMachine,
  validateVirtualMachineInstance,
} from "@kubevirt-ts/kubevirt-api";
import { withPhase } from "@kubevirt-ts/vm-rules";
import { kubeTime } from "@kubevirt-ts/kube";

// The admission webhooks for VirtualMachines and VirtualMachineInstances
// (and DataVolumes, where kubevirt-ts serves them: validation only):
// KubeVirt's defaulting (mutating) and validation (validating), from the
// kubevirt-api package, answered as admission.k8s.io/v1 AdmissionReviews.
// A change that leaves the spec as it was (metadata only: labels,
// finalizers) passes, so that an object stored before the webhooks existed
// can still be cleaned up. A VMI is created with the controller's finalizer
// already on it, as KubeVirt's VMI mutator does: one write fewer per VMI. A
// VM's instancetype and preference are inferred from a volume's labels
// (inferFromVolume) before its defaults, as KubeVirt's VM mutator does.

export interface AdmissionReview {
  apiVersion: "admission.k8s.io/v1";
  kind: "AdmissionReview";
  request?: {
    uid: string;
    kind?: { group: string; version: string; kind: string };
    operation: string;
    object?: unknown;
    oldObject?: unknown;
    namespace?: string;
    name?: string;
    dryRun?: boolean;
  };
  response?: AdmissionResponse;
}

interface AdmissionResponse {
  uid: string;
  allowed: boolean;
  warnings?: string[];
  status?: {
    code: number;
    reason: string;
    message: string;
    details: { causes: { reason: string; field: string; message: string }[] };
  };
  patchType?: "JSONPatch";
  patch?: string;
}

type JsonPatch = ({ op: "add" | "replace"; path: string; value: unknown } | { op: "remove"; path: string })[];

export type WebhookKind = "virtualmachines" | "virtualmachineinstances" | "datavolumes" | "migrationpolicies";

/**
 * The review with its objects read as kubevirt.io/v1: KubeVirt's webhooks admit v1alpha3 too, whose schema is v1's (the
 * request's kind names the version it was sent in). Only apiVersion differs, which no patch touches, so a patch made
 * for the v1 object is right for the v1alpha3 one.
 */
export function asStoredVersion(review: AdmissionReview): AdmissionReview {
  const request = review.request;
  if (!request) return review;
  const v1 = (object: unknown) =>
    typeof object === "object" &&
    object !== null &&
    (object as { apiVersion?: unknown }).apiVersion === DEPRECATED_API_VERSION
      ? { ...object, apiVersion: API_VERSION }
      : object;
  return { ...review, request: { ...request, object: v1(request.object), oldObject: v1(request.oldObject) } };
}

/** The AdmissionReview that answers the request of that uid. */
export function admissionAnswer(uid: string, response: Omit<AdmissionResponse, "uid">): AdmissionReview {
  return { apiVersion: "admission.k8s.io/v1", kind: "AdmissionReview", response: { uid, ...response } };
}

const specOf = (object: unknown) => (object as { spec?: unknown } | undefined)?.spec;

/**
 * What a VM's validation needs from the cluster: its instancetype and preference (KubeVirt's v1.6 and later admit a
 * VM whose instancetype is not there yet, with a warning; the controller reports it until it appears).
 */
export async function vmValidationContext(object: unknown, lookup: Lookup): Promise<VmValidationContext> {
  const parsed = parseVirtualMachine(object);
  if (!parsed.ok || (!parsed.value.spec.instancetype && !parsed.value.spec.preference))
    return { sources: {}, warnings: [], refusals: [] };
  const found = await findInstancetypeAndPreference(parsed.value, lookup);
  return {
    sources: expansionSources(found),
    warnings: found.problems.filter((p) => !p.refused).map((p) => p.message),
    refusals: found.problems
      .filter((p) => p.refused)
      .map((p) => ({ reason: CauseType.NotSupported, field: p.field, message: p.message })),
  };
}

interface VmValidationContext {
  sources: ExpansionSources;
  warnings: string[];
  refusals: Cause[];
}

export function validate(
  review: AdmissionReview,
  kind: WebhookKind,
  context: VmValidationContext = { sources: {}, warnings: [], refusals: [] },
): AdmissionReview {
  const request = review.request;
  if (!request) throw new Error("the AdmissionReview has no request");
  const answer = (response: Omit<AdmissionResponse, "uid">) => admissionAnswer(request.uid, response);
  if (request.operation === "UPDATE" && isDeepStrictEqual(specOf(request.object), specOf(request.oldObject)))
    return answer({ allowed: true });
  // A DataVolume's spec is fixed once it is made, as CDI's webhook has it: its claim was made and filled from it.
  if (kind === "datavolumes" && request.operation === "UPDATE") {
    return answer({
      allowed: false,
      status: {
        code: 422,
        reason: "Invalid",
        message: "spec: a DataVolume's spec cannot change once it is made; delete it and make a new one",
        details: {
          causes: [
            {
              reason: CauseType.Invalid,
              field: "spec",
              message: "a DataVolume's spec cannot change once it is made; delete it and make a new one",
            },
          ],
        },
      },
    });
  }
  const validated =
    kind === "virtualmachines"
      ? validateVirtualMachine(request.object, context.sources)
      : kind === "datavolumes"
        ? validateDataVolume(request.object)
        : kind === "migrationpolicies"
          ? validateMigrationPolicy(request.object)
          : validateVirtualMachineInstance(request.object);
  const causes = [...context.refusals, ...(validated.ok ? [] : validated.causes)];
  const result = causes.length === 0 ? validated : { ok: false as const, causes };
  if (result.ok)
    return answer({ allowed: true, ...(context.warnings.length > 0 ? { warnings: context.warnings } : {}) });
  return answer({
    allowed: false,
    status: {
      code: 422,
      reason: "Invalid",
      message: summarize(result.causes),
      details: { causes: result.causes.map((c) => ({ reason: c.reason, field: c.field, message: c.message })) },
    },
  });
}

/**
 * The KubeVirt CR: refused by path where kubevirt-ts would not act on it (and when it is not the one CR kubevirt-ts
 * reads); admitted with a warning for each feature gate kubevirt-ts ignores, with the reason.
 */
export function validateKubeVirtReview(review: AdmissionReview, installNamespace: string): AdmissionReview {
  const request = review.request;
  if (!request) throw new Error("the AdmissionReview has no request");
  const answer = (response: Omit<AdmissionResponse, "uid">) => admissionAnswer(request.uid, response);
  if (request.operation === "DELETE") return answer({ allowed: true });
  const validated = validateKubeVirt(request.object, installNamespace);
  if (!validated.ok) {
    return answer({
      allowed: false,
      status: {
        code: 422,
        reason: "Invalid",
        message: summarize(validated.causes),
        details: { causes: validated.causes.map((c) => ({ reason: c.reason, field: c.field, message: c.message })) },
      },
    });
  }
  const warnings = featureGateWarnings(validated.value.spec.configuration.developerConfiguration?.featureGates ?? []);
  return answer({ allowed: true, ...(warnings.length > 0 ? { warnings } : {}) });
}

/** A VM with its instancetype and preference inferred from its volumes (inferFromVolume), looked up with `lookup`. */
export async function inferVmDefaults(object: unknown, lookup: Lookup): Promise<InferredVm> {
  if (typeof object !== "object" || object === null) return { vm: object, refusals: [] };
  return inferFromVolumes(object as Parameters<typeof inferFromVolumes>[0], lookup);
}

interface InferredVm {
  vm: unknown;
  refusals: InferenceRefusal[];
}

type VmSpecLike =
  | { spec?: { instancetype?: unknown; preference?: unknown; template?: { spec?: { domain?: { memory?: unknown } } } } }
  | undefined;

/**
 * The patch from the VM as sent to the VM with what was inferred: its matchers, and the memory an Ignore policy drops.
 */
function inferencePatch(patch: JsonPatch, before: VmSpecLike, after: VmSpecLike): void {
  for (const which of ["instancetype", "preference"] as const) {
    const [was, is] = [before?.spec?.[which], after?.spec?.[which]];
    if (isDeepStrictEqual(was, is)) continue;
    patch.push(
      is === undefined
        ? { op: "remove", path: `/spec/${which}` }
        : { op: "replace", path: `/spec/${which}`, value: is },
    );
  }
  if (
    before?.spec?.template?.spec?.domain?.memory !== undefined &&
    after?.spec?.template?.spec?.domain?.memory === undefined
  )
    patch.push({ op: "remove", path: "/spec/template/spec/domain/memory" });
}

/** A VM whose instancetype or preference cannot be inferred is refused, each cause at its matcher's inferFromVolume. */
function inferenceRefused(uid: string, refusals: InferenceRefusal[]): AdmissionReview {
  const causes: Cause[] = refusals.map((r) => ({
    reason: CauseType.Invalid,
    field: r.field,
    message: `${r.field} ${r.message}`,
  }));
  return admissionAnswer(uid, {
    allowed: false,
    status: { code: 422, reason: "Invalid", message: summarize(causes), details: { causes } },
  });
}

/**
 * The admission's defaulting: KubeVirt's, with the cluster's machine type; a new VMI also gets the cluster's CPU model
 * when it names none (as KubeVirt's VMI mutator; a VM's template keeps none, so its next VMI takes the model then).
 */
export function mutate(
  review: AdmissionReview,
  kind: WebhookKind,
  inferred?: InferredVm,
  defaulting: DefaultingOptions = DEFAULTING_OPTIONS,
): AdmissionReview {
  const request = review.request;
  if (!request) throw new Error("the AdmissionReview has no request");
  const response: AdmissionResponse = { uid: request.uid, allowed: true };
  const patch: JsonPatch = [];
  // Only what validates gets defaults; the validating webhook refuses the rest, with its reasons.
  if (kind === "virtualmachines") {
    if (inferred && inferred.refusals.length > 0) return inferenceRefused(request.uid, inferred.refusals);
    const object = inferred?.vm ?? request.object;
    inferencePatch(patch, request.object as VmSpecLike, object as VmSpecLike);
    const parsed = validateVirtualMachine(object);
    if (parsed.ok)
      replaceIfChanged(
        patch,
        "/spec/template/spec",
        parsed.value.spec.template.spec,
        defaultVirtualMachine(parsed.value, { ...defaulting, cpuModel: undefined }).spec.template.spec,
      );
  } else {
    const parsed = validateVirtualMachineInstance(request.object);
    if (parsed.ok) {
      replaceIfChanged(
        patch,
        "/spec",
        parsed.value.spec,
        defaultVirtualMachineInstance(
          parsed.value,
          request.operation === "CREATE" ? defaulting : { ...defaulting, cpuModel: undefined },
        ).spec,
      );
      if (request.operation === "CREATE")
        createdVmi(
          patch,
          request.object as { metadata?: { finalizers?: string[]; labels?: Record<string, string> }; status?: unknown },
        );
    }
  }
  if (patch.length > 0) {
    response.patchType = "JSONPatch";
    response.patch = Buffer.from(JSON.stringify(patch)).toString("base64");
  }
  return { apiVersion: "admission.k8s.io/v1", kind: "AdmissionReview", response };
}

/**
 * A new VMI: the controller's finalizer and the Pending phase, as KubeVirt's mutator adds them; any other status and
 * the node label go, since only kubevirt-ts writes them (a VMI has no status subresource to drop them: a VMI exported
 * with its status applies as a new one).
 */
function createdVmi(
  patch: JsonPatch,
  object: { metadata?: { finalizers?: string[]; labels?: Record<string, string> }; status?: unknown },
): void {
  const finalizers = object.metadata?.finalizers;
  if (!finalizers?.includes(Finalizer.VmiController)) {
    patch.push(
      finalizers
        ? { op: "add", path: "/metadata/finalizers/-", value: Finalizer.VmiController }
        : { op: "add", path: "/metadata/finalizers", value: [Finalizer.VmiController] },
    );
  }
  // Pending from the start, as KubeVirt's mutator writes it: no write of the controller's is needed to say so.
  patch.push({ op: "add", path: "/status", value: withPhase({}, VmiPhase.Pending, kubeTime(new Date())) });
  if (object.metadata?.labels?.[Label.NodeName] !== undefined)
    patch.push({
      op: "remove",
      path: `/metadata/labels/${Label.NodeName.replaceAll("~", "~0").replaceAll("/", "~1")}`,
    });
}

function replaceIfChanged(patch: JsonPatch, path: string, before: unknown, after: unknown): void {
  if (!isDeepStrictEqual(before, after)) patch.push({ op: "replace", path, value: after });
}
