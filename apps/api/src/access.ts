import { type KubeClient, type KubeObject, resources } from "@kubevirt-ts/kube";

// Whether the signed-in user may do something, asked of the API server with
// the user's own token (a SelfSubjectAccessReview): the API's own account
// never answers for a user.

export interface Check {
  verb: string;
  /** kubevirt.io unless named. */
  group?: string;
  resource: string;
  subresource?: string;
}

interface AccessReview extends KubeObject {
  status?: { allowed: boolean; reason?: string };
}

export async function mayI(client: KubeClient, namespace: string, check: Check, name?: string): Promise<boolean> {
  const review = await client.create<AccessReview>(resources.selfSubjectAccessReviews, undefined, {
    apiVersion: "authorization.k8s.io/v1",
    kind: "SelfSubjectAccessReview",
    metadata: {},
    spec: { resourceAttributes: { namespace, verb: check.verb, group: check.group ?? "kubevirt.io", resource: check.resource, subresource: check.subresource, name } },
  } as AccessReview);
  return review.status?.allowed === true;
}

/** A check in words: "get on virtualmachineinstances/console (subresources.kubevirt.io)". */
export function describeCheck(check: Check): string {
  return `${check.verb} on ${check.resource}${check.subresource ? `/${check.subresource}` : ""} (${check.group ?? "kubevirt.io"})`;
}
