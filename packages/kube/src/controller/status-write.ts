import { isDeepStrictEqual } from "node:util";
import type { ResourceType } from "../client/resources.ts";
import type { KubeClient } from "../client/rest.ts";
import type { KubeObject } from "../client/types.ts";

/** Drops undefined members, as the API server's JSON does, so that equal statuses compare equal. */
export function normalized<T>(value: T): T {
  return value === undefined ? value : (JSON.parse(JSON.stringify(value)) as T);
}

/** The labels with these set, and those given as undefined removed. */
function withLabels(
  labels: Record<string, string> | undefined,
  changes: Record<string, string | undefined>,
): Record<string, string> {
  const merged = Object.entries({ ...labels, ...changes });
  return Object.fromEntries(merged.filter((entry): entry is [string, string] => entry[1] !== undefined));
}

/**
 * Writes a status, with the resourceVersion the controller read (a conflict
 * means it decided on stale data and will try again), and only when it
 * differs from what is stored: through the status subresource, or, for a kind
 * without one, as an update of the object that can carry labels too (one
 * write for both).
 */
export async function writeStatusIfChanged<T extends KubeObject & { status?: unknown }>(
  client: KubeClient,
  type: ResourceType,
  object: T,
  status: T["status"],
  labels?: Record<string, string | undefined>,
): Promise<T | undefined> {
  const labelled = labels === undefined ? object.metadata.labels : withLabels(object.metadata.labels, labels);
  const labelsChanged = !isDeepStrictEqual(labelled ?? {}, object.metadata.labels ?? {});
  if (!labelsChanged && isDeepStrictEqual(normalized(object.status), normalized(status))) return undefined;
  if (type.statusSubresource === false) {
    // A new top-level object: the cached one (frozen) is never changed, and the body is only serialized.
    return client.update<T>(type, { ...object, metadata: { ...object.metadata, labels: labelled }, status });
  }
  if (labelsChanged)
    throw new Error(`${type.plural} keep their status in a subresource: labels cannot be written with it`);
  return client.update<T>(type, { ...object, status }, "status");
}
