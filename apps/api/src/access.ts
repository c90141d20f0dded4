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
  namespace,
  verb: check.verb,
  group: check.group ?? "kubevirt.io",
  version: check.version,
  resource: check.resource,
  subresource: check.subresource,
  name,
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
export async function mayUser(
  own: KubeClient,
  user: { user: string; groups: string[]; extra: Record<string, string[]> },
  namespace: string,
  check: Check,
  name?: string,
): Promise<{ allowed: boolean; reason?: string }> {
  const review = await own.create<AccessReview>(resources.subjectAccessReviews, undefined, {
    apiVersion: "authorization.k8s.io/v1",
    kind: "SubjectAccessReview",
    metadata: {},
    spec: {
      user: user.user,
      groups: user.groups,
      extra: user.extra,
      resourceAttributes: resourceAttributes(namespace, check, name),
    },
  } as AccessReview);
  return {
    allowed: review.status?.allowed === true,
    ...(review.status?.reason ? { reason: review.status.reason } : {}),
  };
}

/** A check in words: "get on virtualmachineinstances/console (subresources.kubevirt.io)". */
export function describeCheck(check: Check): string {
  return (
    `${check.verb} on ${check.resource}${check.subresource ? `/${check.subresource}` : ""} ` +
    `(${check.group === undefined ? "kubevirt.io" : check.group || "core"})`
  );
}

/**
 * Whoever asks for an action, and how to ask the API server whether they may: the dashboard's signed-in user
 * (their own token, a SelfSubjectAccessReview) or a user the API server named on a subresource request (a
 * SubjectAccessReview with the API's account). A refusal is worded for each: the dashboard's user reads what to
 * ask for, a kubectl or virtctl user reads the API server's own words.
 */
export interface Requester {
  may(namespace: string, check: Check, name: string): Promise<{ allowed: boolean; reason?: string }>;
  refusal(namespace: string, check: Check, name: string, reason?: string): string;
}

export function tokenRequester(client: KubeClient): Requester {
  return {
    may: async (namespace, check, name) => ({ allowed: await mayI(client, namespace, check, name) }),
    refusal: (namespace, check, name) =>
      `You may not ${check.subresource ?? check.verb} ${name} in ${namespace}: it takes ${describeCheck(check)}.`,
  };
}

export function remoteRequester(
  own: KubeClient,
  who: { user: string; groups: string[]; extra: Record<string, string[]> },
): Requester {
  return {
    may: (namespace, check, name) => mayUser(own, who, namespace, check, name),
    refusal: (namespace, check, name, reason) => {
      // The API server's own words for a refused request.
      const group = check.group ?? "kubevirt.io";
      const resource = check.subresource ? `${check.resource}/${check.subresource}` : check.resource;
      return (
        `${check.resource}.${group} "${name}" is forbidden: User "${who.user}" cannot ${check.verb} ` +
        `resource "${resource}" in API group "${group}" in the namespace ` +
        `"${namespace}"${reason ? `: ${reason}` : ""}`
      );
    },
  };
}

/** Who the client's token belongs to, as the API server authenticates it (a SelfSubjectReview). */
export async function whoAmI(client: KubeClient): Promise<{ username: string; groups: string[] }> {
  const review = await client.create<KubeObject & { status?: { userInfo?: { username?: string; groups?: string[] } } }>(
    resources.selfSubjectReviews,
    undefined,
    {
      apiVersion: "authentication.k8s.io/v1",
      kind: "SelfSubjectReview",
      metadata: {},
    },
  );
  return { username: review.status?.userInfo?.username ?? "", groups: review.status?.userInfo?.groups ?? [] };
}
