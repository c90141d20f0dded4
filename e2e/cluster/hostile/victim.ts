import { setTimeout as sleep } from "node:timers/promises";
import { tinyVm } from "../../manifests.ts";
import { imageOf, undefinedIfNotFound } from "../cluster.ts";
import { inGuest } from "../console.ts";
import { type Tenant, trpcQuery } from "./tenants.ts";

// What the other tenant does while an attack runs, as a user of the
// cluster would: creates a VM with the tiny guest, types on its serial
// console and sees the answer, reads its serial log through virt-api, and
// stops it. Each step is bounded; the whole is timed.

const vms = (namespace: string) => ({ group: "kubevirt.io", version: "v1", namespace, plural: "virtualmachines" });

/** Polls until the check passes, at most the timeout; else fails saying what did not happen. */
export async function until(
  check: () => Promise<boolean>,
  timeoutMs: number,
  what: string,
  intervalMs = 1_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() >= deadline) throw new Error(`${what} within ${String(timeoutMs / 1000)} s`);
    await sleep(intervalMs);
  }
}

const vmiOf = (victim: Tenant, name: string) =>
  victim.custom
    .getNamespacedCustomObject({
      group: "kubevirt.io",
      version: "v1",
      namespace: victim.namespace,
      plural: "virtualmachineinstances",
      name,
    })
    .then((o) => o as { status?: { phase?: string } }, undefinedIfNotFound);

/** The victim's whole cycle on a new VM (on the node given, where the attacker's VM runs); its duration in ms. */
export async function victimCycle(victim: Tenant, name: string, nodeName: string | undefined): Promise<number> {
  const started = Date.now();
  const vm = tinyVm(name, imageOf("tiny-guest"), victim.namespace);
  if (nodeName) Object.assign(vm.spec.template.spec, { nodeSelector: { "kubernetes.io/hostname": nodeName } });
  await victim.custom.createNamespacedCustomObject({ ...vms(victim.namespace), body: vm });
  try {
    await until(
      async () => (await vmiOf(victim, name))?.status?.phase === "Running",
      180_000,
      `the other tenant's VMI ${name} was not Running`,
    );
    const product = `victim-${name}-${String(6 * 7)}`;
    await inGuest(
      victim.namespace,
      name,
      `echo victim-${name}-$((6*7))`,
      product,
      { timeout: 120_000, interval: 1_000 },
      { token: victim.token },
    );
    const log = await trpcQuery("vms.serialLog", { namespace: victim.namespace, name }, victim.token, 20_000);
    if (log.status !== 200 || !log.text.includes(product))
      throw new Error(
        `the other tenant's serial log of ${name} answered ${String(log.status)}: ${log.text.slice(0, 300)}`,
      );
    await victim.custom.patchNamespacedCustomObject({
      ...vms(victim.namespace),
      name,
      body: [{ op: "replace", path: "/spec/runStrategy", value: "Halted" }],
    });
    await until(
      async () => (await vmiOf(victim, name)) === undefined,
      120_000,
      `the other tenant's VMI ${name} did not stop`,
    );
    return Date.now() - started;
  } finally {
    await victim.custom.deleteNamespacedCustomObject({ ...vms(victim.namespace), name }).catch(undefinedIfNotFound);
  }
}
