import { mkdtemp, rm, stat, symlink, unlink } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  type ClientReadableStream,
  Server,
  ServerCredentials,
  type ServiceError,
  credentials,
  status,
} from "@grpc/grpc-js";
import { createLogger } from "@kubevirt-ts/runtime";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  type Device,
  DevicePluginService,
  KUBELET_SOCKET,
  type RegisterRequest,
  RegistrationService,
} from "../src/device-plugin/api.ts";
import { DevicePlugin, MAX_KUBELET_MESSAGE_BYTES } from "../src/device-plugin/plugin.ts";
import { NODE_DEVICES, type NodeDevice } from "../src/device-plugin/devices.ts";

// The device plugin against the kubelet's side of the API, over real unix
// sockets: a Registration server standing in for the kubelet's, and a
// DevicePlugin client calling ListAndWatch and Allocate as the kubelet does.
// The node's /dev is a folder where a device appears as a link to /dev/null
// (a character device) and goes when the link is removed.

const [kvm] = NODE_DEVICES as [NodeDevice];
const log = createLogger({ component: "device-plugin-test", level: "error" });

/** The kubelet's registration socket: what each Register carried. */
async function fakeKubelet(dir: string) {
  const registered: RegisterRequest[] = [];
  const server = new Server();
  server.addService(RegistrationService.service, {
    Register: (call: { request: RegisterRequest }, done: (e: null, v: object) => void) => {
      registered.push(call.request);
      done(null, {});
    },
  });
  await new Promise<void>((resolve, reject) => {
    server.bindAsync(`unix://${join(dir, KUBELET_SOCKET)}`, ServerCredentials.createInsecure(), (e) => {
      if (e) reject(e);
      else resolve();
    });
  });
  return {
    registered,
    stop: () =>
      new Promise<void>((resolve) => {
        server.tryShutdown(() => {
          resolve();
        });
      }),
  };
}

async function until<T>(what: () => T | undefined | Promise<T | undefined>, timeoutMs = 10_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const value = await what();
    if (value !== undefined) return value;
    if (Date.now() > end) throw new Error("timed out");
    await new Promise((r) => setTimeout(r, 50));
  }
}

interface Allocated {
  container_responses: { devices: object[] }[];
}
interface PluginClient {
  ListAndWatch(request: object): ClientReadableStream<{ devices: Device[] }>;
  Allocate(request: object, done: (e: ServiceError | null, v?: Allocated) => void): void;
  close(): void;
}

const allocate = (c: PluginClient, ids: string[]) =>
  new Promise<Allocated | undefined>((resolve, reject) => {
    c.Allocate({ container_requests: [{ devices_ids: ids }] }, (e, v) => {
      if (e) reject(e);
      else resolve(v);
    });
  });

describe("the kvm device plugin", () => {
  let dir: string;
  let pluginsDir: string;
  let nodeDev: string;
  let plugin: DevicePlugin | undefined;

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), "dp-"));
    pluginsDir = dir;
    nodeDev = await mkdtemp(join(tmpdir(), "dp-dev-"));
  });
  afterEach(async () => {
    await plugin?.close();
    await rm(dir, { recursive: true, force: true });
    await rm(nodeDev, { recursive: true, force: true });
  });

  const client = () =>
    new DevicePluginService(
      `unix://${join(pluginsDir, "kubevirt-kvm.sock")}`,
      credentials.createInsecure(),
    ) as unknown as PluginClient;

  it("registers, lists its units as the node's device comes and goes, and allocates /dev/kvm", async () => {
    const kubelet = await fakeKubelet(pluginsDir);
    plugin = new DevicePlugin({ device: kvm, pluginsDir, nodeDevDir: nodeDev, units: 4, checkIntervalMs: 100, log });
    await plugin.start();
    expect(kubelet.registered).toEqual([
      {
        version: "v1beta1",
        endpoint: "kubevirt-kvm.sock",
        resource_name: "devices.kubevirt.io/kvm",
        options: { pre_start_required: false, get_preferred_allocation_available: true },
      },
    ]);

    const c = client();
    const lists: Device[][] = [];
    const stream = c.ListAndWatch({});
    stream.on("data", (m: { devices: Device[] }) => lists.push(m.devices));
    stream.on("error", () => undefined);
    // The node has no /dev/kvm yet: every unit is unhealthy, so the node's allocatable count is 0.
    await until(() => lists[0]);
    expect(lists[0]?.map((d) => d.health)).toEqual(["Unhealthy", "Unhealthy", "Unhealthy", "Unhealthy"]);
    await symlink("/dev/null", join(nodeDev, "kvm"));
    await until(() => lists.find((l) => l.every((d) => d.health === "Healthy")));
    await unlink(join(nodeDev, "kvm"));
    await until(() => (lists.length >= 3 && lists.at(-1)?.every((d) => d.health === "Unhealthy") ? true : undefined));

    const allocated = await allocate(c, ["kvm0"]);
    expect(allocated?.container_responses).toHaveLength(1);
    expect(allocated?.container_responses[0]?.devices).toEqual([
      { container_path: "/dev/kvm", host_path: "/dev/kvm", permissions: "rw" },
    ]);

    const refused = await allocate(c, ["gpu0"]).then(
      () => undefined,
      (e: unknown) => e as ServiceError,
    );
    expect(refused?.code).toBe(status.INVALID_ARGUMENT);
    expect(refused?.details).toMatch(/devices_ids: "gpu0" is not a unit of devices.kubevirt.io\/kvm/);

    // A request larger than any the kubelet sends is refused before the plugin reads it.
    const huge = await allocate(c, ["k".repeat(MAX_KUBELET_MESSAGE_BYTES)]).then(
      () => undefined,
      (e: unknown) => e as ServiceError,
    );
    expect(huge?.code).toBe(status.RESOURCE_EXHAUSTED);
    // Closing, while the kubelet's side still holds its connection and stream, takes the socket away.
    await plugin.close();
    plugin = undefined;
    await expect(stat(join(pluginsDir, "kubevirt-kvm.sock"))).rejects.toMatchObject({ code: "ENOENT" });
    stream.cancel();
    c.close();
    await kubelet.stop();
  });

  it("registers again when the kubelet restarts and removes the plugins' sockets", async () => {
    let kubelet = await fakeKubelet(pluginsDir);
    plugin = new DevicePlugin({ device: kvm, pluginsDir, nodeDevDir: nodeDev, units: 2, checkIntervalMs: 100, log });
    await plugin.start();
    expect(kubelet.registered).toHaveLength(1);
    await kubelet.stop();
    // A starting kubelet removes every socket in its folder, then makes its own.
    await rm(join(pluginsDir, "kubevirt-kvm.sock"), { force: true });
    await rm(join(pluginsDir, KUBELET_SOCKET), { force: true });
    kubelet = await fakeKubelet(pluginsDir);
    await until(() => (kubelet.registered.length === 1 ? true : undefined));
    // And the plugin serves again on its socket.
    const c = client();
    const first = await new Promise<Device[]>((resolve, reject) => {
      const stream = c.ListAndWatch({});
      stream.on("data", (m: { devices: Device[] }) => {
        resolve(m.devices);
        stream.cancel();
      });
      stream.on("error", (e: ServiceError) => {
        if (e.code !== status.CANCELLED) reject(e);
      });
    });
    expect(first.map((d) => d.ID)).toEqual(["kvm0", "kvm1"]);
    c.close();
    await kubelet.stop();
  });
});
