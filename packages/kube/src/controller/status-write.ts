import { isDeepStrictEqual } from "node:util";
import type { ResourceType } from "../client/resources.ts";
import type { KubeClient } from "../client/rest.ts";
import type { KubeObject } from "../client/types.ts";

/** Drops undefined members, as the API server's JSON does, so that equal statuses compare equal. */
export function normalized<T>(value: T): T {
  return value === undefined ? value : (JSON.parse(JSON.stringify(value)) as T);
}

/**
 * Writes a status through the status subresource, with the resourceVersion
 * the controller read (a conflict means it decided on stale data and will
 * try again), and only when it differs from what is stored.
 */
export async function writeStatusIfChanged<T extends KubeObject & { status?: unknown }>(
  client: KubeClient,
  type: ResourceType,
  object: T,
  status: T["status"],
): Promise<T | undefined> {
  if (isDeepStrictEqual(normalized(object.status), normalized(status))) return undefined;
  // A new top-level object: the cached one (frozen) is never changed, and the body is only serialized.
  return client.update<T>(type, { ...object, status }, "status");
}
