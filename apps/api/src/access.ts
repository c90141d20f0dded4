import { type KubeClient, type KubeObject, resources } from "@kubevirt-ts/kube";

// Whether a user may do something, asked of the API server: the signed-in
// user with their own token (a SelfSubjectAccessReview), or the user the API
// server names on a subresource request (a SubjectAccessReview, ADR 6). The
// API never answers for a user itself.

export interface Check {
  verb: string;
  /** kubevirt.io unless named. */
  group?: string;
  /** Any version unless named. */
  version?: string;
  resource: string;
  subresource?: string;
}

interface AccessReview extends KubeObject {
  status?: { allowed: boolean; reason?: string };
}

const resourceAttributes = (namespace: string, check: Check, name?: string) => ({
  namespace, verb: check.verb, group: check.group ?? "kubevirt.io", version: check.version, resource: check.resource, subresource: check.subresource, name,
});

export async function mayI(client: KubeClient, namespace: string, check: Check, name?: string): Promise<boolean> {
  const review = await client.create<AccessReview>(resources.selfSubjectAccessReviews, undefined, {
    apiVersion: "authorization.k8s.io/v1",
    kind: "SelfSubjectAccessReview",
    metadata: {},
    spec: { resourceAttributes: resourceAttributes(namespace, check, name) },
  } as AccessReview);
  return review.status?.allowed === true;
}

/**
 * Whether another user may: a SubjectAccessReview asked with the API's own account, for the user the API server
 * named on a request of the subresource API (subresources/). The answer, and the reason the authorizer gave.
 */
export async function mayUser(own: KubeClient, user: { user: string; groups: string[]; extra: Record<string, string[]> }, namespace: string, check: Check, name?: string): Promise<{ allowed: boolean; reason?: string }> {
  const review = await own.create<AccessReview>(resources.subjectAccessReviews, undefined, {
    apiVersion: "authorization.k8s.io/v1",
    kind: "SubjectAccessReview",
    metadata: {},
    spec: { user: user.user, groups: user.groups, extra: user.extra, resourceAttributes: resourceAttributes(namespace, check, name) },
  } as AccessReview);
  return { allowed: review.status?.allowed === true, ...(review.status?.reason ? { reason: review.status.reason } : {}) };
}

/** A check in words: "get on virtualmachineinstances/console (subresources.kubevirt.io)". */
export function describeCheck(check: Check): string {
  return `${check.verb} on ${check.resource}${check.subresource ? `/${check.subresource}` : ""} (${check.group ?? "kubevirt.io"})`;
}
