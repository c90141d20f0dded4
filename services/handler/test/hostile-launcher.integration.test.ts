import { chown, mkdir, mkdtemp, rename, rm } from "node:fs/promises";
import { type Server, type Socket, createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { freePort } from "@kubevirt-ts/control-plane";
import { startServiceProcess, test, tlsSecretDir } from "@kubevirt-ts/control-plane/testing";
import { type Event, KubeClient, type KubeObject, resources } from "@kubevirt-ts/kube";
import { ConsoleServer } from "@kubevirt-ts/node-contract";
import {
  LAUNCHER_UID,
  Label,
  LabelValue,
  type VirtualMachineInstance,
  defaultVmiSpec,
  kubevirtResources,
} from "@kubevirt-ts/kubevirt-api";
import { type DomainChange, type DomainStatus, RpcError, serveConnection } from "@kubevirt-ts/launcher-protocol";
import { expect } from "vitest";
import { SocketName, podVolumePath } from "../src/pod-volume.ts";

// The handler as its own process against the real API server, with two VMIs
// on its node: one whose launcher socket is hostile (a line of garbage, a
// line that never ends, answers of the wrong shape, in turns) and one whose
// launcher speaks the protocol (a stand-in: the package's own server with
// handlers that keep a domain's state, as no kubelet runs pods here). The
// hostile one must cost only its own VMI a condition; the other VMI runs,
// and the handler stays up.

const NODE = "test-node";

let sockets = 0;

/** The reasons of the events the handler recorded on a VMI, sorted (events within a second come in no order). */
async function handlerEvents(client: KubeClient, namespace: string, name: string): Promise<string[]> {
  const events = (await client.list<Event>(resources.events, namespace)).items;
  return events
    .filter((e) => e.involvedObject.name === name && e.source?.component === "virt-handler")
    .map((e) => `${e.type ?? ""} ${e.reason ?? ""}`)
    .sort();
}

async function listen(path: string, onConnection: (socket: Socket) => void): Promise<Server> {
  await mkdir(join(path, ".."), { recursive: true });
  const server = createServer((socket) => {
    socket.on("error", () => socket.destroy());
    onConnection(socket);
  });
  // A socket's address is limited to 107 bytes, which a kubelet pod folder exceeds: bind it
  // at a short path and move it in, as the launcher's is reached through its pod's volume.
  const short = join(tmpdir(), `hl-${String(process.pid)}-${String(sockets++)}.sock`);
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(short, resolve);
  });
  await rename(short, path);
  // The handler talks only to a socket of the launcher's user.
  await chown(path, LAUNCHER_UID, LAUNCHER_UID);
  return server;
}

/** Each connection misbehaves in the next way; the count of connections shows the handler coming back. */
function hostile(connections: { count: number }) {
  return (socket: Socket) => {
    const turn = connections.count++ % 3;
    socket.once("data", () => {
      if (turn === 0) socket.write("this is not JSON\n");
      if (turn === 1) {
        const chunk = Buffer.alloc(64 * 1024, "x");
        const flood = () => {
          while (!socket.destroyed && socket.write(chunk));
          if (!socket.destroyed) socket.once("drain", flood);
        };
        flood();
      }
      if (turn === 2) socket.write(`{"id":1,"result":{"state":"Running","extra":"${"y".repeat(2000)}"}}\n`);
    });
  };
}

/** What the good launcher's guest agent tells of its OS: every field the handler writes to guestOSInfo. */
const GUEST_OS = {
  id: "debian",
  name: "Debian GNU/Linux",
  prettyName: "Debian GNU/Linux 12 (bookworm)",
  version: "12 (bookworm)",
  versionId: "12",
  kernelRelease: "6.1.0-28-cloud-amd64",
  kernelVersion: "#1 SMP PREEMPT_DYNAMIC Debian 6.1.119-1",
  machine: "x86_64",
};

/** A stand-in launcher's domain: its status, its revision, and the watches waiting for its next change. */
class StandInDomain {
  status: DomainStatus = { state: "NoDomain" };
  private revision = 1;
  private readonly waiting = new Set<() => void>();

  set(status: DomainStatus): void {
    this.status = status;
    this.revision++;
    for (const answer of this.waiting) answer();
    this.waiting.clear();
  }

  watch(since: number, timeoutSeconds: number): Promise<DomainChange> {
    return new Promise((resolve) => {
      const answer = () => {
        clearTimeout(timer);
        this.waiting.delete(answer);
        resolve({ revision: this.revision, status: this.status });
      };
      const timer = setTimeout(answer, timeoutSeconds * 1000);
      if (since !== this.revision) answer();
      else this.waiting.add(answer);
    });
  }
}

/**
 * A launcher that keeps to the protocol: no domain until the VMI is synced, then a running one. With `pushes`, it
 * answers `watch` as today's launcher does; without, as one from before `watch` (an unknown method is a BadRequest).
 */
function correct(calls: { state: number; synced: string[] }, domain = new StandInDomain(), pushes = false) {
  const running: DomainStatus = { state: "Running", domainType: "qemu" };
  return (socket: Socket) => {
    serveConnection(socket, {
      sync: (vmi) => {
        calls.synced.push(vmi.metadata.name ?? "");
        domain.set(running);
        return Promise.resolve(domain.status);
      },
      state: () => {
        calls.state++;
        return Promise.resolve(domain.status);
      },
      watch: ({ since, timeoutSeconds }) =>
        pushes
          ? domain.watch(since, timeoutSeconds)
          : Promise.reject(new RpcError("BadRequest", "not a request: request.method: Invalid option")),
      pause: () => Promise.resolve(domain.status),
      unpause: () => Promise.resolve(domain.status),
      softReboot: () => Promise.resolve(domain.status),
      reset: () => Promise.resolve(domain.status),
      kill: () => Promise.resolve(domain.status),
      guestOsInfo: () => Promise.resolve(GUEST_OS),
      guestAgentInfo: () => Promise.reject(new RpcError("Failed", "the guest has no agent")),
      screenshot: () => Promise.reject(new RpcError("Failed", "no display")),
      domainStats: () => Promise.reject(new RpcError("Failed", "no stats")),
      freeze: () => Promise.reject(new RpcError("Failed", "the guest has no agent")),
      unfreeze: () => Promise.reject(new RpcError("Failed", "the guest has no agent")),
      portForward: () =>
        Promise.reject(new RpcError("BadRequest", "the VMI has no interface on the pod network to forward to")),
      prepareMigrationTarget: () => Promise.reject(new RpcError("BadRequest", "not a migration target")),
      migrate: () => Promise.reject(new RpcError("BadRequest", "no migration")),
      migrationState: () => Promise.resolve({ phase: "None" }),
      abortMigration: () => Promise.reject(new RpcError("BadRequest", "no outgoing migration to abort")),
    });
  };
}

/**
 * A VMI handed to this node, and the launcher pod the controller would have made for it, Running; with `startedAt`,
 * its launcher container says when it started, as the kubelet's status does.
 */
async function scheduledVmi(client: KubeClient, namespace: string, name: string, startedAt?: Date): Promise<string> {
  const vmi = await client.create<VirtualMachineInstance>(kubevirtResources.virtualMachineInstances, namespace, {
    apiVersion: "kubevirt.io/v1",
    kind: "VirtualMachineInstance",
    metadata: { name, namespace, labels: { [Label.NodeName]: NODE } },
    spec: defaultVmiSpec({ domain: { memory: { guest: "128Mi" }, devices: {} } }),
  });
  const uid = vmi.metadata.uid ?? "";
  const pod = await client.create<KubeObject & { spec: unknown; status?: unknown }>(resources.pods, namespace, {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name: `virt-launcher-${name}`,
      namespace,
      labels: { [Label.App]: LabelValue.Launcher, [Label.CreatedBy]: uid },
      ownerReferences: [
        {
          apiVersion: "kubevirt.io/v1",
          kind: "VirtualMachineInstance",
          name,
          uid,
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
    },
    spec: { nodeName: NODE, containers: [{ name: "compute", image: "kubevirt-ts.local/virt-launcher:test" }] },
  });
  const containerStatuses = startedAt
    ? [
        {
          name: "compute",
          image: "kubevirt-ts.local/virt-launcher:test",
          imageID: "",
          ready: true,
          restartCount: 0,
          started: true,
          state: { running: { startedAt: startedAt.toISOString().replace(/\.\d+Z$/, "Z") } },
        },
      ]
    : undefined;
  await client.update(
    resources.pods,
    {
      ...pod,
      status: {
        phase: "Running",
        podIP: "198.18.0.9",
        podIPs: [{ ip: "198.18.0.9" }],
        ...(containerStatuses ? { containerStatuses } : {}),
      },
    },
    "status",
  );
  const podUid = pod.metadata.uid ?? "";
  await client.update(kubevirtResources.virtualMachineInstances, {
    ...vmi,
    status: { phase: "Scheduled", nodeName: NODE, activePods: { [podUid]: NODE } },
  });
  return podUid;
}

test(
  "a hostile launcher costs only its own VMI a condition: the other VMI runs and the handler stays up",
  { timeout: 180_000 },
  async ({ kubeConfig, namespace }) => {
    const client = await KubeClient.fromKubeConfig(kubeConfig);
    const podsDir = await mkdtemp(join(tmpdir(), "kubelet-pods-"));
    const hostileConnections = { count: 0 };
    const calls = { state: 0, synced: [] as string[] };
    const servers: Server[] = [];
    const handler = await (async () => {
      servers.push(
        await listen(
          podVolumePath(podsDir, await scheduledVmi(client, namespace, "hostile"), SocketName.Launcher),
          hostile(hostileConnections),
        ),
      );
      servers.push(
        await listen(
          podVolumePath(podsDir, await scheduledVmi(client, namespace, "good"), SocketName.Launcher),
          correct(calls),
        ),
      );
      return startServiceProcess(fileURLToPath(new URL("../src/main.ts", import.meta.url)), {
        NODE_NAME: NODE,
        KUBELET_PODS_DIR: podsDir,
        CONSOLE_TLS_DIR: await tlsSecretDir(ConsoleServer.handlerIdentity, "server", [ConsoleServer.handlerIdentity]),
        CONSOLE_PORT: String(await freePort()),
      });
    })();
    const vmi = (name: string) =>
      client.get<VirtualMachineInstance>(kubevirtResources.virtualMachineInstances, namespace, name);
    const synchronized = async (name: string) =>
      (await vmi(name)).status?.conditions?.find((c) => c.type === "Synchronized");
    try {
      // The protocol-correct launcher gets its VMI, which the handler reports Running.
      await expect.poll(async () => (await vmi("good")).status?.phase, { timeout: 60_000 }).toBe("Running");
      expect(calls.synced).toEqual(["good"]);
      // The hostile one: its VMI says why, and stays Scheduled.
      await expect
        .poll(() => synchronized("hostile"), { timeout: 60_000 })
        .toMatchObject({ status: "False", reason: "LauncherProtocolViolation" });
      expect((await synchronized("hostile"))?.message).toMatch(
        /^the launcher broke the protocol \((InvalidJson|LineTooLong|InvalidResult)\)/,
      );
      expect((await vmi("hostile")).status?.phase).toBe("Scheduled");
      // The handler keeps coming back to it (every kind of garbage, with back-off), and keeps looking after the good
      // VMI meanwhile.
      await expect.poll(() => hostileConnections.count, { timeout: 60_000 }).toBeGreaterThanOrEqual(4);
      const statesBefore = calls.state;
      await expect.poll(() => calls.state, { timeout: 30_000 }).toBeGreaterThan(statesBefore + 2);
      expect((await vmi("good")).status?.conditions?.find((c) => c.type === "Ready")).toMatchObject({ status: "True" });
      // What the handler writes of the guest's OS comes back whole from the API server: no field is pruned by the CRD's
      // schema.
      await expect.poll(async () => (await vmi("good")).status?.guestOSInfo, { timeout: 30_000 }).toEqual(GUEST_OS);
      expect((await vmi("good")).status?.conditions?.find((c) => c.type === "AgentConnected")).toMatchObject({
        status: "True",
      });
      expect((await vmi("good")).status?.interfaces).toEqual([
        expect.objectContaining({ name: "default", ipAddress: "198.18.0.9" }),
      ]);
      expect(await synchronized("good")).toBeUndefined();
      // KubeVirt's SyncEvents: the good VMI's domain defined and started, once each; the hostile one's failure.
      expect(await handlerEvents(client, namespace, "good")).toEqual(["Normal Created", "Normal Started"]);
      const hostileEvents = await handlerEvents(client, namespace, "hostile");
      expect(hostileEvents).toContain("Warning SyncFailed");
      expect(hostileEvents.filter((e) => !e.endsWith("SyncFailed"))).toEqual([]);
      expect(await handler.probe("/healthz")).toBe(200);
      expect(handler.output()).not.toContain("uncaught");
      expect(handler.output()).not.toContain("unhandled");
    } finally {
      expect(await handler.terminate(), handler.output()).toBe(0);
      for (const server of servers) server.close();
      await rm(podsDir, { recursive: true, force: true });
    }
  },
);

test(
  "a VMI whose launcher is still starting waits for its socket without a failure, and runs once the socket appears",
  { timeout: 120_000 },
  async ({ kubeConfig, namespace }) => {
    const client = await KubeClient.fromKubeConfig(kubeConfig);
    const podsDir = await mkdtemp(join(tmpdir(), "kubelet-pods-"));
    const calls = { state: 0, synced: [] as string[] };
    // The kubelet makes the pod's volumes before its containers start; the launcher opens its socket later.
    const podUid = await scheduledVmi(client, namespace, "late", new Date());
    const socketPath = podVolumePath(podsDir, podUid, SocketName.Launcher);
    await mkdir(join(socketPath, ".."), { recursive: true });
    const handler = await startServiceProcess(fileURLToPath(new URL("../src/main.ts", import.meta.url)), {
      NODE_NAME: NODE,
      KUBELET_PODS_DIR: podsDir,
      CONSOLE_TLS_DIR: await tlsSecretDir(ConsoleServer.handlerIdentity, "server", [ConsoleServer.handlerIdentity]),
      CONSOLE_PORT: String(await freePort()),
    });
    const vmi = () => client.get<VirtualMachineInstance>(kubevirtResources.virtualMachineInstances, namespace, "late");
    let server: Server | undefined;
    try {
      // The handler has looked at the VMI and found no socket: it says nothing on the VMI, which stays as the
      // controller wrote it.
      await expect
        .poll(() => handler.output(), { timeout: 30_000 })
        .toContain("waiting for the launcher to open its socket");
      const waiting = await vmi();
      expect(waiting.status?.phase).toBe("Scheduled");
      expect(waiting.status?.conditions?.find((c) => c.type === "Synchronized")).toBeUndefined();
      server = await listen(socketPath, correct(calls));
      await expect.poll(async () => (await vmi()).status?.phase, { timeout: 30_000 }).toBe("Running");
      expect(calls.synced).toEqual(["late"]);
      expect((await vmi()).status?.conditions?.find((c) => c.type === "Synchronized")).toBeUndefined();
      expect(handler.output()).not.toContain("could not watch");
    } finally {
      expect(await handler.terminate(), handler.output()).toBe(0);
      server?.close();
      await rm(podsDir, { recursive: true, force: true });
    }
  },
);

test(
  "a launcher that pushes: the VMI says its guest powered itself off by the push, with no polling",
  { timeout: 120_000 },
  async ({ kubeConfig, namespace }) => {
    const client = await KubeClient.fromKubeConfig(kubeConfig);
    const podsDir = await mkdtemp(join(tmpdir(), "kubelet-pods-"));
    const calls = { state: 0, synced: [] as string[] };
    const domain = new StandInDomain();
    const server = await listen(
      podVolumePath(podsDir, await scheduledVmi(client, namespace, "pushed"), SocketName.Launcher),
      correct(calls, domain, true),
    );
    const handler = await startServiceProcess(fileURLToPath(new URL("../src/main.ts", import.meta.url)), {
      NODE_NAME: NODE,
      KUBELET_PODS_DIR: podsDir,
      CONSOLE_TLS_DIR: await tlsSecretDir(ConsoleServer.handlerIdentity, "server", [ConsoleServer.handlerIdentity]),
      CONSOLE_PORT: String(await freePort()),
    });
    const phase = async () =>
      (await client.get<VirtualMachineInstance>(kubevirtResources.virtualMachineInstances, namespace, "pushed")).status
        ?.phase;
    const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
    try {
      await expect.poll(phase, { timeout: 60_000 }).toBe("Running");
      // Once the watch is up the handler stops asking: the domain's state is not read again for a minute.
      await sleep(3_000);
      const states = calls.state;
      await sleep(5_000);
      expect(calls.state).toBe(states);
      // The guest turns itself off: the launcher's answer to the outstanding watch is the only way the handler learns
      // it.
      const pushed = performance.now();
      domain.set({ state: "Shutoff", domainType: "qemu" });
      while ((await phase()) !== "Succeeded" && performance.now() - pushed < 10_000) await sleep(20);
      expect(await phase()).toBe("Succeeded");
      // No interval reaches this: the handler's resync is 60 s and it has not polled for 5 s. (It takes milliseconds
      // on a quiet machine; the test asserts the path, not the time.)
      expect(performance.now() - pushed).toBeLessThan(10_000);
      expect(handler.output()).not.toContain("cannot push");
    } finally {
      expect(await handler.terminate(), handler.output()).toBe(0);
      server.close();
      await rm(podsDir, { recursive: true, force: true });
    }
  },
);
