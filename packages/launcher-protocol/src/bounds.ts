import type { z } from "zod";

// How much a launcher may say. Its pod is the tenant's (anyone with `edit`
// in the namespace can exec into it, or run a pod with its labels), and its
// answers are multiplied: into the handler's memory, the API's, the VMI's
// status (the guest's OS names, the access credentials' message) and the
// labels of the handler's Prometheus metrics (interface and drive names).
// The line limit (MAX_RESPONSE_LINE_BYTES) bounds one answer; these bound
// every string and every list in it, whatever the method, so that an answer
// within the line limit still cannot put kilobytes into one status field or
// thousands of label sets into /metrics. Every result schema is checked with
// them (protocol.ts), and an answer past one is a protocol violation: the
// call fails and the connection is dropped.

export const ANSWER_BOUNDS = {
  /**
   * Any string not named below: the guest OS's names and versions, a host or user name, a device or interface name, a
   * timestamp.
   */
  stringLength: 256,
  /**
   * Strings that are longer by nature, by their property's name: a failure's reason, a message, a guest's mount point
   * (PATH_MAX).
   */
  longStrings: { failureReason: 2048, message: 1024, mountPoint: 4096 } as Readonly<Record<string, number>>,
  /**
   * Any list: a domain's interfaces and disks, the guest's file systems, users and agent commands, and its vCPUs (the
   * most a VMI may have, kubevirt-api's MAX_VCPUS).
   */
  items: 512,
} as const;

/** What in `value` is past ANSWER_BOUNDS: each with its path and what is wrong, at most `most` of them. */
export function overBounds(value: unknown, most = 5): { path: (string | number)[]; message: string }[] {
  const found: { path: (string | number)[]; message: string }[] = [];
  const walk = (v: unknown, path: (string | number)[], key: string | undefined): void => {
    if (found.length >= most) return;
    if (typeof v === "string") {
      const max = (key === undefined ? undefined : ANSWER_BOUNDS.longStrings[key]) ?? ANSWER_BOUNDS.stringLength;
      if (v.length > max)
        found.push({
          path,
          message: `is ${String(v.length)} characters long, over the ${String(max)} a launcher may answer`,
        });
    } else if (Array.isArray(v)) {
      if (v.length > ANSWER_BOUNDS.items)
        found.push({
          path,
          message: `has ${String(v.length)} items, over the ${String(ANSWER_BOUNDS.items)} a launcher may answer`,
        });
      else
        v.forEach((item, i) => {
          walk(item, [...path, i], key);
        });
    } else if (typeof v === "object" && v !== null) {
      for (const [k, item] of Object.entries(v)) walk(item, [...path, k], k);
    }
  };
  walk(value, [], undefined);
  return found;
}

/** The schema, with every string and list of what it accepts held to ANSWER_BOUNDS. */
export function bounded<T extends z.ZodType>(schema: T): T {
  return schema.superRefine((value, ctx) => {
    for (const { path, message } of overBounds(value)) ctx.addIssue({ code: "custom", path, message });
  });
}
