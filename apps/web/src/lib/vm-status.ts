import type { VirtualMachineInstance } from "@kubevirt-ts/kubevirt-api";
import { type ActionAvailability, migrationRefusal } from "@kubevirt-ts/vm-rules";

// How a VM's state reads to a person, besides vm-rules' vm-view.ts (the
// status in words, its tone and reason, conditions in words): whether an
// action's button is enabled and why not, and how long ago something happened.

export function age(timestamp: string | undefined, now: number): string {
  if (!timestamp) return "";
  const seconds = Math.max(0, Math.floor((now - Date.parse(timestamp)) / 1000));
  if (seconds < 60) return `${String(seconds)}s`;
  if (seconds < 3600) return `${String(Math.floor(seconds / 60))}m`;
  if (seconds < 86400) return `${String(Math.floor(seconds / 3600))}h`;
  return `${String(Math.floor(seconds / 86400))}d`;
}

/** A reason in words as a sentence: "the VM is already running" reads "The VM is already running." */
export function sentence(words: string): string {
  return `${words.charAt(0).toUpperCase()}${words.slice(1)}.`;
}

/**
 * Whether an action's button is enabled, and why not: the user's permission
 * (the permissions query) first, then what the VM's state allows now
 * (availableActions); undefined while either is still loading.
 */
export function actionAllowed(
  permission: { allowed: boolean; reason?: string } | undefined,
  state: ActionAvailability | undefined,
): { allowed: boolean | undefined; reason: string | undefined } {
  if (permission && !permission.allowed) return { allowed: false, reason: permission.reason };
  if (!permission || !state) return { allowed: undefined, reason: undefined };
  return state.available ? { allowed: true, reason: undefined } : { allowed: false, reason: sentence(state.reason) };
}

/**
 * One permission over several namespaces (the VMs chosen in the list of every namespace): allowed only where allowed in
 * each.
 */
export function inEveryNamespace(
  permissions: readonly ({ allowed: boolean; reason?: string } | undefined)[],
): { allowed: boolean; reason?: string } | undefined {
  const refused = permissions.find((p) => p && !p.allowed);
  if (refused) return refused;
  if (permissions.length === 0 || permissions.some((p) => p === undefined)) return undefined;
  return { allowed: true };
}

/** One action on several VMs: available when it is for any of them; otherwise why not, for each. */
export function forAnyOf(
  states: readonly (readonly [name: string, state: ActionAvailability])[],
): ActionAvailability | undefined {
  if (states.length === 0) return undefined;
  if (states.some(([, state]) => state.available)) return { available: true };
  return {
    available: false,
    by: "state",
    reason: states.map(([name, state]) => `${name}: ${state.available ? "" : state.reason}`).join("; "),
  };
}

/** Whether the VM can be live migrated now, by the rule virt-api refuses with (vm-rules' migrationRefusal). */
export function migrationAvailability(vmi: VirtualMachineInstance | undefined): ActionAvailability {
  if (!vmi) return { available: false, by: "state", reason: "the VM is not running" };
  const refusal = migrationRefusal(vmi);
  return refusal === undefined ? { available: true } : { available: false, by: "state", reason: refusal };
}
