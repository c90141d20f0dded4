import { isDeepStrictEqual } from "node:util";
import {
  defaultVirtualMachine, defaultVirtualMachineInstance, summarize, validateVirtualMachine, validateVirtualMachineInstance,
} from "@kubevirt-ts/kubevirt-api";

// The admission webhooks for VirtualMachines and VirtualMachineInstances:
// KubeVirt's defaulting (mutating) and validation (validating), from the
// kubevirt-api package, answered as admission.k8s.io/v1 AdmissionReviews.
// A change that leaves the spec as it was (metadata only: labels,
// finalizers) passes, so that an object stored before the webhooks existed
// can still be cleaned up.

export interface AdmissionReview {
  apiVersion: "admission.k8s.io/v1";
  kind: "AdmissionReview";
  request?: { uid: string; operation: string; object?: unknown; oldObject?: unknown };
  response?: AdmissionResponse;
}

interface AdmissionResponse {
  uid: string;
  allowed: boolean;
  status?: { code: number; reason: string; message: string; details: { causes: { type: string; field: string; message: string }[] } };
  patchType?: "JSONPatch";
  patch?: string;
}

export type WebhookKind = "virtualmachines" | "virtualmachineinstances";

const specOf = (object: unknown) => (object as { spec?: unknown } | undefined)?.spec;

export function validate(review: AdmissionReview, kind: WebhookKind): AdmissionReview {
  const request = review.request;
  if (!request) throw new Error("the AdmissionReview has no request");
  const answer = (response: Omit<AdmissionResponse, "uid">): AdmissionReview => ({ apiVersion: "admission.k8s.io/v1", kind: "AdmissionReview", response: { uid: request.uid, ...response } });
  if (request.operation === "UPDATE" && isDeepStrictEqual(specOf(request.object), specOf(request.oldObject))) return answer({ allowed: true });
  const result = kind === "virtualmachines" ? validateVirtualMachine(request.object) : validateVirtualMachineInstance(request.object);
  if (result.ok) return answer({ allowed: true });
  return answer({
    allowed: false,
    status: { code: 422, reason: "Invalid", message: summarize(result.causes), details: { causes: result.causes.map((c) => ({ type: c.reason, field: c.field, message: c.message })) } },
  });
}

export function mutate(review: AdmissionReview, kind: WebhookKind): AdmissionReview {
  const request = review.request;
  if (!request) throw new Error("the AdmissionReview has no request");
  const response: AdmissionResponse = { uid: request.uid, allowed: true };
  // Only what validates gets defaults; the validating webhook refuses the rest, with its reasons.
  let change: { path: string; before: unknown; after: unknown } | undefined;
  if (kind === "virtualmachines") {
    const parsed = validateVirtualMachine(request.object);
    if (parsed.ok) change = { path: "/spec/template/spec", before: parsed.value.spec.template.spec, after: defaultVirtualMachine(parsed.value).spec.template.spec };
  } else {
    const parsed = validateVirtualMachineInstance(request.object);
    if (parsed.ok) change = { path: "/spec", before: parsed.value.spec, after: defaultVirtualMachineInstance(parsed.value).spec };
  }
  if (change) {
    const { path, before, after } = change;
    if (!isDeepStrictEqual(before, after)) {
      response.patchType = "JSONPatch";
      response.patch = Buffer.from(JSON.stringify([{ op: "replace", path, value: after }])).toString("base64");
    }
  }
  return { apiVersion: "admission.k8s.io/v1", kind: "AdmissionReview", response };
}
