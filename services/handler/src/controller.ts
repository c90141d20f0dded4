import {
  Informer, type KubeClient, type KubeObject, type Reconcile, WorkQueue, createControllerMetrics, createWorkQueueMetrics, keyOf, resources,
  runController, writeStatusIfChanged,
} from "@kubevirt-ts/kube";
import { Label, LabelValue, type VirtualMachineInstance, VmiPhase } from "@kubevirt-ts/kubevirt-api";
import type { Logger } from "@kubevirt-ts/runtime";
import type { Registry } from "prom-client";
import { ConsoleRefusal, type ConsoleTarget } from "./console-server.ts";
import type { Launchers } from "./launchers.ts";
import { type ObservedDomain, type ObservedGuestOs, handlerStatus } from "./status.ts";

// The handler's loop over the VMIs of its node: for each VMI the controller
// has handed over, it makes sure the launcher runs the domain, and reports
// the domain's state in the VMI's status. The domain's state is one more
// input: every VMI is looked at again every few seconds.

const DOMAIN_POLL_MS = 2_000;
/** How long to wait before asking a guest's agent again after it did not answer. */
const AGENT_RETRY_MS = 20_000;

interface LauncherPod extends KubeObject {
  spec?: { nodeName?: string };
  status?: { phase?: string; podIP?: string; podIPs?: { ip: string }[] };
}

export interface HandlerConfig {
  client: KubeClient;
  log: Logger;
  registry: Registry;
  nodeName: string;
  launchers: Launchers;
  workers: number;
  now?: () => Date;
}

export function createHandler(config: HandlerConfig) {
  const { client, log, registry, nodeName, launchers } = config;
  const now = config.now ?? (() => new Date());
  const queue = new WorkQueue({ name: "handler-vmis", metrics: createWorkQueueMetrics(registry) });
  const vmis: Informer<VirtualMachineInstance> = new Informer<VirtualMachineInstance>({ client, type: resources.virtualMachineInstances, log, labelSelector: `${Label.NodeName}=${nodeName}` });
  const pods: Informer<LauncherPod> = new Informer<LauncherPod>({
    client,
    type: resources.pods,
    log,
    labelSelector: `${Label.App}=${LabelValue.Launcher}`,
    fieldSelector: `spec.nodeName=${nodeName}`,
    indexers: {
      vmiUid: (pod) => {
        const uid = pod.metadata.labels?.[Label.CreatedBy];
        return uid ? [uid] : [];
      },
    },
  });
  // When each VMI's guest agent was last asked in vain, by VMI uid.
  const agentSilentSince = new Map<string, number>();
  const guestOs = async (vmi: VirtualMachineInstance, launcher: Awaited<ReturnType<Launchers["get"]>>): Promise<ObservedGuestOs> => {
    if (vmi.status?.guestOSInfo) return vmi.status.guestOSInfo;
    const uid = vmi.metadata.uid ?? "";
    if (Date.now() - (agentSilentSince.get(uid) ?? 0) < AGENT_RETRY_MS) return undefined;
    try {
      const info = (await launcher.call("guestOsInfo", undefined, 15_000)) as ObservedGuestOs;
      agentSilentSince.delete(uid);
      return info;
    } catch {
      // Most guests have no agent, and a booting one has not started it yet.
      agentSilentSince.set(uid, Date.now());
      return undefined;
    }
  };
  /** The launcher pod running the VMI's domain on this node. */
  const runningLauncherPod = (vmi: VirtualMachineInstance) =>
    pods.byIndex("vmiUid", vmi.metadata.uid ?? "").find((p) => !p.metadata.deletionTimestamp && p.status?.phase === "Running");
  const enqueue = (vmi: VirtualMachineInstance) => {
    queue.add(keyOf(vmi));
  };
  vmis.addHandler({ add: enqueue, update: (_, v) => { enqueue(v); }, delete: enqueue });
  pods.addHandler({
    delete: (pod) => {
      launchers.forget(pod.metadata.uid ?? "");
      agentSilentSince.delete(pod.metadata.labels?.[Label.CreatedBy] ?? "");
    },
  });

  const reconcile: Reconcile = async (key) => {
    const vmi = vmis.get(key);
    if (!vmi) return undefined;
    const phase = vmi.status?.phase;
    // Only VMIs handed to this node and not finished; deletion stops the launcher through its pod.
    if ((phase !== VmiPhase.Scheduled && phase !== VmiPhase.Running) || vmi.status?.nodeName !== nodeName || vmi.metadata.deletionTimestamp) return undefined;
    const pod = runningLauncherPod(vmi);
    if (!pod) return { requeueAfterMs: DOMAIN_POLL_MS };
    const launcher = await launchers.get(pod.metadata.uid ?? "");
    let domain: ObservedDomain = await launcher.state();
    if (domain.state === "NoDomain") domain = (await launcher.call("sync", vmi)) as ObservedDomain;
    const os = domain.state === "Running" ? await guestOs(vmi, launcher) : undefined;
    await writeStatusIfChanged(client, resources.virtualMachineInstances, vmi, handlerStatus(vmi, domain, pod.status ?? {}, now(), os));
    return { requeueAfterMs: DOMAIN_POLL_MS };
  };

  const informers = [vmis, pods] as unknown as Informer<KubeObject>[];
  return {
    /** The VMI of this node with that name, and the launcher pod running it. */
    consoleTarget: (namespace: string, name: string): ConsoleTarget => {
      const vmi = vmis.get(`${namespace}/${name}`);
      if (!vmi || vmi.status?.nodeName !== nodeName) throw new ConsoleRefusal(404, `no VMI ${namespace}/${name} runs on node ${nodeName}`);
      const pod = runningLauncherPod(vmi);
      if (!pod?.metadata.uid) throw new ConsoleRefusal(409, `the VMI ${namespace}/${name} has no running launcher pod; wait until it is Running`);
      return { vmi, podUid: pod.metadata.uid };
    },
    hasSynced: () => informers.every((i) => i.hasSynced()),
    run: async (signal: AbortSignal) => {
      const running = informers.map((i) => i.run(signal));
      await Promise.race([Promise.all(informers.map((i) => i.waitForSync())), new Promise((resolve) => { signal.addEventListener("abort", resolve, { once: true }); })]);
      signal.addEventListener("abort", () => void queue.shutDownWithDrain(), { once: true });
      if (!signal.aborted) {
        // After a restart, every running guest is looked at again: nothing is restarted, only reported.
        for (const vmi of vmis.list()) enqueue(vmi);
        await runController({ name: "handler", queue, reconcile, workers: config.workers, log, metrics: createControllerMetrics(registry) });
      }
      await Promise.all(running);
    },
  };
}
