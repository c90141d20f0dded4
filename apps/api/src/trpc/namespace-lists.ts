import type { KubeObject, ListOptions, ObjectList } from "@kubevirt-ts/kube";
import { dnsLabelProblem } from "@kubevirt-ts/kubevirt-api";
import { z } from "zod";

// What the procedures that list a VM's objects (its snapshots, restores, clones) share: the input naming the VM, each
// name checked as the API server would, and a namespace's list read in pages and bounded, so that a namespace with
// many objects costs a bounded read and answer.

/** Objects read per page of a namespace's list. */
const PAGE = 250;
/** The most objects of a kind read from one namespace for one answer. */
export const MAX_SCANNED = 2_000;
/** The most objects of a kind of one VM (snapshots, restores, clones) a list answers: the newest. */
export const MAX_LISTED = 100;

/** A string field checked by `check`, its problem named after `field`. */
export const named = (check: (value: string) => string | undefined, field: string) =>
  z.string().superRefine((value, ctx) => {
    const problem = check(value);
    if (problem) ctx.addIssue({ code: "custom", message: `${field} ${problem}` });
  });
/** The input naming a VM: its namespace and name. */
export const vm = z.object({ namespace: named(dnsLabelProblem, "namespace"), name: named(dnsLabelProblem, "name") });

/** A namespace's objects of one kind, page by page, at most MAX_SCANNED; whether some were left unread. */
export async function bounded<T>(
  list: (options: ListOptions) => Promise<ObjectList<T>>,
): Promise<{ items: T[]; truncated: boolean }> {
  const items: T[] = [];
  let next: string | undefined;
  do {
    const page = await list({ limit: PAGE, ...(next ? { continue: next } : {}) });
    items.push(...page.items.slice(0, MAX_SCANNED - items.length));
    next = page.metadata.continue === "" ? undefined : page.metadata.continue;
  } while (next !== undefined && items.length < MAX_SCANNED);
  return { items, truncated: next !== undefined };
}

const created = (o: KubeObject) => o.metadata.creationTimestamp ?? "";
export const newestFirst = <T extends KubeObject>(objects: T[]) =>
  [...objects].sort((a, b) => created(b).localeCompare(created(a)));
