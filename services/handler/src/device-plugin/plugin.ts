import { stat, rm } from "node:fs/promises";
import { join } from "node:path";
import {
  type ServerWritableStream,
  Server,
  ServerCredentials,
  type ServiceError,
  credentials,
  status,
} from "@grpc/grpc-js";
import { deviceResourceName } from "@kubevirt-ts/node-contract";
import type { Logger } from "@kubevirt-ts/runtime";
import {
  type AllocateRequest,
  DEVICE_PLUGIN_API_VERSION,
  DevicePluginService,
  type Device,
  KUBELET_SOCKET,
  type PreferredAllocationRequest,
  type RegisterRequest,
  RegistrationService,
} from "./api.ts";
import {
  AllocationRefused,
  NODE_DEVICES,
  type NodeDevice,
  UNITS_PER_DEVICE,
  allocate,
  deviceUnits,
  preferredAllocation,
  socketName,
} from "./devices.ts";

// The handler's device plugins: one gRPC server per node device on a unix
// socket in the kubelet's device-plugins folder, registered with the kubelet
// through kubelet.sock there. Every few seconds each checks the node's
// device (a character device under the node's /dev, mounted read-only) and
// tells the kubelet when it appears or goes; and it registers again when the
// kubelet restarted (kubelet.sock is a new file, or the kubelet removed the
// plugin's socket, as it does to every plugin's when it starts).

/** The largest message the kubelet may send a plugin: its requests list at most UNITS_PER_DEVICE short IDs. */
export const MAX_KUBELET_MESSAGE_BYTES = 64 * 1024;
const REGISTER_TIMEOUT_MS = 5000;

export interface DevicePluginOptions {
  device: NodeDevice;
  /** The kubelet's device-plugins folder, as the handler sees it (/var/lib/kubelet/device-plugins). */
  pluginsDir: string;
  /** The node's /dev, as the handler sees it: the device is `<nodeDevDir>/<path without /dev/>`. */
  nodeDevDir: string;
  units?: number;
  /** How often the device and the kubelet's socket are checked. */
  checkIntervalMs?: number;
  log: Logger;
}

/** A file's identity: a kubelet that restarted made a new kubelet.sock. */
async function identity(path: string): Promise<string | undefined> {
  const s = await stat(path).catch(() => undefined);
  return s ? `${String(s.ino)}:${String(s.ctimeMs)}` : undefined;
}

/** Whether the node has the device: a character device at its path under the node's /dev. */
async function nodeHas(nodeDevDir: string, device: NodeDevice): Promise<boolean> {
  const s = await stat(join(nodeDevDir, device.path.replace(/^\/dev\//, ""))).catch(() => undefined);
  return s?.isCharacterDevice() ?? false;
}

const refused = (error: unknown): Partial<ServiceError> =>
  error instanceof AllocationRefused
    ? { code: status.INVALID_ARGUMENT, details: error.message }
    : { code: status.INTERNAL, details: error instanceof Error ? error.message : String(error) };

export class DevicePlugin {
  private readonly o: Required<Omit<DevicePluginOptions, "log">> & { log: Logger };
  private server: Server | undefined;
  private readonly streams = new Set<ServerWritableStream<unknown, { devices: Device[] }>>();
  private present: boolean | undefined;
  /** The kubelet.sock this plugin registered with; undefined until it did. */
  private registeredWith: string | undefined;
  private timer: NodeJS.Timeout | undefined;
  private checking: Promise<void> = Promise.resolve();
  private closed = false;

  constructor(options: DevicePluginOptions) {
    this.o = { units: UNITS_PER_DEVICE, checkIntervalMs: 5000, ...options };
  }

  get socketPath(): string {
    return join(this.o.pluginsDir, socketName(this.o.device));
  }

  /** Whether the kubelet took this plugin's registration (and has not restarted since). */
  registered(): boolean {
    return this.registeredWith !== undefined;
  }

  /** Serves the plugin and registers it; a kubelet that is not there yet is registered with at the next check. */
  async start(): Promise<void> {
    await this.check();
    this.timer = setInterval(() => {
      this.checking = this.checking
        .then(() => this.check())
        .catch((error: unknown) => {
          this.o.log.warn("device plugin check failed", {
            resource: deviceResourceName(this.o.device),
            error: String(error),
          });
        });
    }, this.o.checkIntervalMs);
    this.timer.unref();
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.timer);
    await this.checking;
    await this.stopServer();
  }

  private async check(): Promise<void> {
    if (this.closed) return;
    const present = await nodeHas(this.o.nodeDevDir, this.o.device);
    if (present !== this.present) {
      if (this.present !== undefined)
        this.o.log.info(present ? "node device appeared" : "node device is gone", {
          resource: deviceResourceName(this.o.device),
          path: this.o.device.path,
        });
      this.present = present;
      for (const stream of this.streams) stream.write({ devices: this.units() });
    }
    // The kubelet removes every plugin's socket when it starts: serve again, then register again.
    if (this.server && (await identity(this.socketPath)) === undefined) await this.stopServer();
    if (!this.server) await this.serve();
    const kubelet = await identity(join(this.o.pluginsDir, KUBELET_SOCKET));
    if (kubelet !== undefined && kubelet !== this.registeredWith) await this.register(kubelet);
  }

  private units(): Device[] {
    return deviceUnits(this.o.device, this.present ?? false, this.o.units);
  }

  private async serve(): Promise<void> {
    await rm(this.socketPath, { force: true });
    const server = new Server({
      "grpc.max_receive_message_length": MAX_KUBELET_MESSAGE_BYTES,
      "grpc.max_concurrent_streams": 16,
    });
    const { device, units } = this.o;
    server.addService(DevicePluginService.service, {
      GetDevicePluginOptions: (_call: unknown, done: (e: null, v: unknown) => void) => {
        done(null, { pre_start_required: false, get_preferred_allocation_available: true });
      },
      ListAndWatch: (stream: ServerWritableStream<unknown, { devices: Device[] }>) => {
        this.streams.add(stream);
        stream.on("cancelled", () => this.streams.delete(stream));
        stream.on("close", () => this.streams.delete(stream));
        stream.write({ devices: this.units() });
      },
      GetPreferredAllocation: (
        call: { request: PreferredAllocationRequest },
        done: (e: Partial<ServiceError> | null, v?: unknown) => void,
      ) => {
        try {
          done(null, preferredAllocation(device, call.request, units));
        } catch (error) {
          done(refused(error));
        }
      },
      Allocate: (call: { request: AllocateRequest }, done: (e: Partial<ServiceError> | null, v?: unknown) => void) => {
        try {
          const answer = allocate(device, call.request, units);
          this.o.log.info("device allocated", {
            resource: deviceResourceName(device),
            containers: answer.container_responses.length,
          });
          done(null, answer);
        } catch (error) {
          this.o.log.warn("device allocation refused", { resource: deviceResourceName(device), error: String(error) });
          done(refused(error));
        }
      },
      PreStartContainer: (_call: unknown, done: (e: null, v: unknown) => void) => {
        done(null, {});
      },
    });
    await new Promise<void>((resolve, reject) => {
      server.bindAsync(`unix://${this.socketPath}`, ServerCredentials.createInsecure(), (error) => {
        if (error) reject(error);
        else resolve();
      });
    });
    this.server = server;
    this.registeredWith = undefined;
  }

  private async stopServer(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.server = undefined;
    this.registeredWith = undefined;
    for (const stream of this.streams) stream.end();
    this.streams.clear();
    // Not tryShutdown: it waits for the kubelet to close its connection, which it keeps open.
    server.forceShutdown();
    await rm(this.socketPath, { force: true });
  }

  private async register(kubelet: string): Promise<void> {
    const client = new RegistrationService(
      `unix://${join(this.o.pluginsDir, KUBELET_SOCKET)}`,
      credentials.createInsecure(),
      { "grpc.max_receive_message_length": MAX_KUBELET_MESSAGE_BYTES },
    );
    const request: RegisterRequest = {
      version: DEVICE_PLUGIN_API_VERSION,
      endpoint: socketName(this.o.device),
      resource_name: deviceResourceName(this.o.device),
      options: { pre_start_required: false, get_preferred_allocation_available: true },
    };
    try {
      await new Promise<void>((resolve, reject) => {
        client.Register(request, { deadline: Date.now() + REGISTER_TIMEOUT_MS }, (error: ServiceError | null) => {
          if (error) reject(error);
          else resolve();
        });
      });
      this.registeredWith = kubelet;
      this.o.log.info("device plugin registered with the kubelet", {
        resource: deviceResourceName(this.o.device),
        present: this.present,
      });
    } catch (error) {
      // Retried at the next check.
      this.o.log.warn("device plugin registration failed", {
        resource: deviceResourceName(this.o.device),
        error: error instanceof Error ? error.message : String(error),
      });
    } finally {
      client.close();
    }
  }
}

/** KubeVirt's three permanent device plugins, started; closing the result stops them and removes their sockets. */
export async function startDevicePlugins(
  options: Omit<DevicePluginOptions, "device">,
): Promise<{ plugins: DevicePlugin[]; close: () => Promise<void> }> {
  const plugins = NODE_DEVICES.map((device) => new DevicePlugin({ ...options, device }));
  // A plugin that cannot start must not leave the others serving with nothing to close them.
  const started = await Promise.allSettled(plugins.map((p) => p.start()));
  const failed = started.find((s): s is PromiseRejectedResult => s.status === "rejected");
  if (failed) {
    await Promise.allSettled(plugins.map((p) => p.close()));
    throw failed.reason;
  }
  return {
    plugins,
    close: async () => {
      await Promise.all(plugins.map((p) => p.close()));
    },
  };
}
