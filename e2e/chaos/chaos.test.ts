import { writeFile } from "node:fs/promises";
import { setTimeout as sleep } from "node:timers/promises";
import { ApiException, type V1Pod } from "@kubernetes/client-node";
import {
  NAMESPACE,
  type HostComponent,
  hostComponentServes,
  killAndRestartHostComponent,
  killContainer,
} from "@kubevirt-ts/local-cluster";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { coordination, core, custom, imageOf, suiteNamespace } from "../cluster/cluster.ts";
import { tinyVm } from "../manifests.ts";
import { type RunStrategy, type Verdict, judge } from "./convergence.ts";

// Every component killed with SIGKILL, one at a time, while VMs are created,
// deleted, started and stopped: afterwards no VM is lost or doubled, nothing
// is orphaned, and every VM reaches its run strategy within 60 s of the
// component being back. The table of what happened is printed and written
// to e2e/chaos/RESULTS.md.

const { name: namespace } = suiteNamespace("e2e-chaos");
const image = imageOf("tiny-guest");
const CONVERGE_MS = 60_000;
const FIRST_VMS = 10;
/** The VMs the test expects, with their run strategies; the cluster must come to agree with it. */
const expected = new Map<string, RunStrategy>();
let made = 0;

interface Row {
  component: string;
  kills: number;
  backSeconds: number;
  convergeSeconds: number | undefined;
  verdict: Verdict;
}
const rows: Row[] = [];
const CONVERGED: Verdict = { converged: true, lost: [], duplicated: [], orphans: [], pending: [] };

/** Retries a call while the cluster is being killed; only a 404 ends a delete early. */
async function persist<T>(what: string, call: () => Promise<T>, timeoutMs = 120_000): Promise<T | undefined> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await call();
    } catch (error) {
      if (error instanceof ApiException && (error.code === 404 || error.code === 409)) return undefined;
      if (Date.now() > deadline)
        throw new Error(`${what} did not succeed within ${String(timeoutMs / 1000)} s`, { cause: error });
      await sleep(500);
    }
  }
}

const vms = { group: "kubevirt.io", version: "v1", namespace, plural: "virtualmachines" };

async function createVm(strategy: RunStrategy): Promise<void> {
  const name = `chaos-${String(made++)}`;
  const body = tinyVm(name, image, namespace);
  body.spec.runStrategy = strategy;
  expected.set(name, strategy);
  await persist(`creating ${name}`, () => custom.createNamespacedCustomObject({ ...vms, body }));
}

async function deleteVm(name: string): Promise<void> {
  expected.delete(name);
  await persist(`deleting ${name}`, () => custom.deleteNamespacedCustomObject({ ...vms, name }));
}

async function setStrategy(name: string, strategy: RunStrategy): Promise<void> {
  expected.set(name, strategy);
  await persist(`setting ${name} to ${strategy}`, () =>
    custom.patchNamespacedCustomObject({
      ...vms,
      name,
      body: [{ op: "replace", path: "/spec/runStrategy", value: strategy }],
    }),
  );
}

/** The load during each kill: one VM deleted, one created, one started or stopped. */
async function churn(): Promise<void> {
  const names = [...expected.keys()];
  const flip = names[names.length - 1] ?? "";
  await Promise.all([
    deleteVm(names[0] ?? ""),
    createVm("Always"),
    setStrategy(flip, expected.get(flip) === "Always" ? "Halted" : "Always"),
  ]);
}

async function waitConverged(timeoutMs = CONVERGE_MS): Promise<{ ms: number | undefined; verdict: Verdict }> {
  const start = Date.now();
  let verdict: Verdict = { converged: false, lost: [], duplicated: [], orphans: [], pending: ["not looked at yet"] };
  while (Date.now() - start < timeoutMs) {
    verdict = (await judge(namespace, expected).catch(() => undefined)) ?? verdict;
    if (verdict.converged) return { ms: Date.now() - start, verdict };
    await sleep(500);
  }
  return { ms: undefined, verdict };
}

async function componentPods(name: string): Promise<V1Pod[]> {
  return (await core.listNamespacedPod({ namespace: NAMESPACE, labelSelector: `app.kubernetes.io/name=${name}` }))
    .items;
}

const containerId = (pod: V1Pod | undefined) => pod?.status?.containerStatuses?.[0]?.containerID ?? "";
const restarts = (pod: V1Pod | undefined) => pod?.status?.containerStatuses?.[0]?.restartCount ?? 0;
const ready = (pod: V1Pod | undefined) =>
  pod?.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True") ?? false;

/** Kills the one container of a component's pod and waits until the kubelet has it running and Ready again. */
async function killPodComponent(pod: V1Pod): Promise<void> {
  const { name = "", namespace: podNamespace = "" } = pod.metadata ?? {};
  await killContainer(containerId(pod));
  await expect
    .poll(
      async () => {
        const now = await core.readNamespacedPod({ name, namespace: podNamespace });
        return restarts(now) > restarts(pod) && ready(now);
      },
      { timeout: 120_000, interval: 500 },
    )
    .toBe(true);
}

async function apiServerAnswers(): Promise<void> {
  await expect
    .poll(
      () =>
        core.listNamespace({ limit: 1 }).then(
          () => true,
          () => false,
        ),
      { timeout: 120_000, interval: 500 },
    )
    .toBe(true);
}

const kills: Record<string, () => Promise<void>> = {
  "controller leader": async () => {
    const lease = await coordination.readNamespacedLease({ name: "virt-controller", namespace: NAMESPACE });
    const leader = lease.spec?.holderIdentity ?? "";
    const pod = (await componentPods("virt-controller")).find((p) => p.metadata?.name === leader);
    expect(pod, `the lease names ${leader}, which is no controller pod`).toBeDefined();
    const killedAt = Date.now();
    await killContainer(containerId(pod));
    // A leader serves again: the other replica once the lease has run out, or the killed one, which the kubelet
    // restarts in the same pod and so under the same identity (its pod's name), takes its own lease back at once.
    // Either way the lease is renewed after the kill by a process that was not killed.
    await expect
      .poll(
        async () => {
          const spec = (await coordination.readNamespacedLease({ name: "virt-controller", namespace: NAMESPACE })).spec;
          if (!spec?.renewTime || new Date(spec.renewTime).getTime() <= killedAt + 500) return false;
          const holder = (await componentPods("virt-controller")).find((p) => p.metadata?.name === spec.holderIdentity);
          return holder !== undefined && (spec.holderIdentity !== leader || restarts(holder) > restarts(pod));
        },
        { timeout: 120_000, interval: 500 },
      )
      .toBe(true);
  },
  handler: async () => {
    const [pod] = await componentPods("virt-handler");
    if (!pod) throw new Error("no handler pod");
    await killPodComponent(pod);
  },
  launcher: async () => {
    const running = [...expected].filter(([, s]) => s === "Always").map(([n]) => n);
    const pods = (await core.listNamespacedPod({ namespace, labelSelector: "kubevirt.io=virt-launcher" })).items;
    const pod = pods.find(
      (p) => p.status?.phase === "Running" && running.some((n) => p.metadata?.name?.startsWith(`virt-launcher-${n}-`)),
    );
    if (!pod) throw new Error("no running launcher pod to kill");
    // The launcher's pod does not restart: its VMI fails, and the VM's run strategy makes a new one.
    await killContainer(containerId(pod));
  },
  api: async () => {
    const [pod] = await componentPods("virt-api");
    if (!pod) throw new Error("no virt-api pod");
    await killPodComponent(pod);
  },
  ...Object.fromEntries(
    (["kube-apiserver", "etcd", "containerd", "kubelet"] satisfies HostComponent[]).map((component) => [
      component,
      async () => {
        // A second of downtime, as a crashed process under a supervisor would have.
        await killAndRestartHostComponent(component, 1_000);
        await apiServerAnswers();
        // Back means serving: etcd takes a write, containerd answers on its socket, the kubelet's healthz is ok.
        if (component === "etcd")
          await persist("a write through etcd", () =>
            core.createNamespacedConfigMap({ namespace, body: { metadata: { generateName: "etcd-back-" } } }),
          );
        if (component === "containerd" || component === "kubelet") {
          await expect.poll(() => hostComponentServes(component), { timeout: 120_000, interval: 250 }).toBe(true);
        }
      },
    ]),
  ),
};

describe("every component killed under load", () => {
  beforeAll(async () => {
    for (let i = 0; i < FIRST_VMS; i++) await createVm(i < 8 ? "Always" : "Halted");
    // Eight guests booting at once on two cores take longer than one VM's recovery.
    const { verdict } = await waitConverged(240_000);
    expect(verdict, "the first VMs did not all reach their run strategy").toEqual(CONVERGED);
  }, 300_000);

  afterAll(async () => {
    const table = [
      "| component | kills | back after (s) | converged after (s) | lost | duplicated | orphans |",
      "| --- | --- | --- | --- | --- | --- | --- |",
      ...rows.map((r) => {
        const converged =
          r.convergeSeconds === undefined ? `not within ${String(CONVERGE_MS / 1000)}` : r.convergeSeconds.toFixed(1);
        const { lost, duplicated, orphans } = r.verdict;
        const cells = [
          r.component,
          String(r.kills),
          r.backSeconds.toFixed(1),
          converged,
          String(lost.length),
          String(duplicated.length),
          String(orphans.length),
        ];
        return `| ${cells.join(" | ")} |`;
      }),
    ].join("\n");
    process.stdout.write(
      `\nChaos: ${String(FIRST_VMS)} tiny-guest VMs; per component one SIGKILL during a churn of one VM ` +
        `deleted, one created and one started or stopped\n${table}\n`,
    );
    await writeFile(
      new URL("./RESULTS.md", import.meta.url),
      `# Chaos results\n\nWritten by \`e2e/chaos/chaos.test.ts\` on ${new Date().toISOString()} (\`make ` +
        `test\` runs it). Method: ${String(FIRST_VMS)} VMs with the tiny guest (8 Always, 2 Halted); for each ` +
        "component, one VM is deleted, one created and one started or stopped while the component's process is " +
        "killed with SIGKILL (host processes are started again after 1 s, as a supervisor would; containers " +
        `are restarted by the kubelet). "Back after" is from the kill until the component serves again; ` +
        `"converged after" is from then until every VM matches its run strategy (VMI Running and Ready with ` +
        `QEMU running in its one launcher pod, or no VMI and Stopped) with nothing orphaned.\n\n${table}\n`,
    );
  });

  for (const [component, kill] of Object.entries(kills)) {
    it(
      `${component}: killed during a churn, nothing lost or orphaned, and ` + "every VM converges within 60 s",
      async () => {
        const started = Date.now();
        const load = churn();
        await sleep(1_000);
        await kill();
        const backSeconds = (Date.now() - started - 1_000) / 1000;
        await load;
        const { ms, verdict } = await waitConverged();
        rows.push({
          component,
          kills: 1,
          backSeconds,
          convergeSeconds: ms === undefined ? undefined : ms / 1000,
          verdict,
        });
        expect(verdict).toEqual(CONVERGED);
      },
      360_000,
    );
  }

  it("at the end, deleting every VM leaves nothing behind", async () => {
    await Promise.all([...expected.keys()].map((name) => deleteVm(name)));
    const { verdict } = await waitConverged();
    expect(verdict).toEqual(CONVERGED);
    const left = (await core.listNamespacedPod({ namespace, labelSelector: "kubevirt.io=virt-launcher" })).items;
    expect(left.map((p) => p.metadata?.name)).toEqual([]);
  }, 180_000);
});
