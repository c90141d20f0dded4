// Conditions as Kubernetes objects carry them: one per type, with a
// lastTransitionTime that changes only when the status does.

import { kubeTime } from "../client/types.ts";

export interface ConditionLike {
  type: string;
  status: "True" | "False" | "Unknown";
  reason?: string;
  message?: string;
  lastProbeTime?: string | null;
  lastTransitionTime?: string | null;
}

export function findCondition<C extends ConditionLike>(
  conditions: readonly C[] | undefined,
  type: string,
): C | undefined {
  return conditions?.find((c) => c.type === type);
}

/**
 * The conditions with `condition` set: kept as they are when nothing but the
 * time would change, so that setting the same condition twice writes nothing.
 */
export function setCondition<C extends ConditionLike>(
  conditions: readonly C[] | undefined,
  condition: Omit<C, "lastTransitionTime" | "lastProbeTime">,
  now: Date,
): C[] {
  const list = [...(conditions ?? [])];
  const index = list.findIndex((c) => c.type === condition.type);
  const existing = index >= 0 ? list[index] : undefined;
  if (
    existing &&
    existing.status === condition.status &&
    existing.reason === condition.reason &&
    existing.message === condition.message
  )
    return list;
  const lastTransitionTime =
    existing && existing.status === condition.status ? existing.lastTransitionTime : kubeTime(now);
  const next = { ...condition, lastProbeTime: null, lastTransitionTime } as C;
  if (index >= 0) list[index] = next;
  else list.push(next);
  return list;
}

export function removeCondition<C extends ConditionLike>(conditions: readonly C[] | undefined, type: string): C[] {
  return (conditions ?? []).filter((c) => c.type !== type);
}
