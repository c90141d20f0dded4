import { ConsoleServer } from "@kubevirt-ts/node-contract";
import { baseEnv, metricsAuthorizationEnv, parseEnv } from "@kubevirt-ts/runtime";
import { z } from "zod";
import { DEFAULT_HEARTBEAT_INTERVAL_SECONDS } from "./heartbeat.ts";

export const env = parseEnv(
  z.object({
    ...baseEnv(9101),
    ...metricsAuthorizationEnv,
    /** The node this handler serves: the DaemonSet passes its pod's spec.nodeName. */
    NODE_NAME: z.string().min(1, "must name this handler's node (the chart passes spec.nodeName)"),
    /** The release namespace, where the KubeVirt CR is: the chart passes the pod's namespace. */
    POD_NAMESPACE: z.string().min(1).default("kubevirt-ts"),
    /** The kubelet's pod folders, mounted from the node. */
    KUBELET_PODS_DIR: z.string().default("/var/lib/kubelet/pods"),
    // Each VMI is looked at every few seconds and a sync waits for its domain to start: enough workers that the polls
    // do not hold a new VMI back.
    WORKERS: z.coerce.number().int().min(1).max(32).default(10),
    /** The console server's port (KubeVirt's 8186). */
    CONSOLE_PORT: z.coerce.number().int().min(1).max(65535).default(ConsoleServer.port),
    /** ca.crt, tls.crt and tls.key of the console server; the chart mounts them from a Secret it manages. */
    CONSOLE_TLS_DIR: z.string().default("/etc/kubevirt-ts/console-tls"),
    /** The certificate names (CN) allowed to open consoles: the API's. */
    CONSOLE_CLIENTS: z
      .string()
      .default(ConsoleServer.apiIdentity)
      .transform((v) =>
        v
          .split(",")
          .map((s) => s.trim())
          .filter(Boolean),
      ),
    /**
     * This handler's address, which other handlers send migrating guests to: the chart passes its pod's IP. Unset: no
     * migrations.
     */
    HANDLER_ADDRESS: z.string().optional(),
    /** The migration proxy's port (mutual TLS with the console server's certificate, which every handler shares). */
    MIGRATION_PORT: z.coerce.number().int().min(1).max(65535).default(8187),
    /**
     * How often the handler labels its node schedulable and stamps its heartbeat (KubeVirt's 60 s; chart:
     * nodeHeartbeat.intervalSeconds).
     */
    NODE_HEARTBEAT_INTERVAL_SECONDS: z.coerce
      .number()
      .int()
      .min(1)
      .max(3600)
      .default(DEFAULT_HEARTBEAT_INTERVAL_SECONDS),
    /**
     * Where the node labeller's init container wrote libvirt's capabilities (the chart mounts an emptyDir); nothing
     * there, no CPU labels.
     */
    NODE_LABELLER_DIR: z.string().default("/var/lib/kubevirt-ts/node-labeller"),
    /**
     * The kubelet's device-plugins folder, mounted from the node: the handler serves devices.kubevirt.io/kvm, tun and
     * vhost-net there. Unset: no device plugins.
     */
    DEVICE_PLUGINS_DIR: z.string().min(1).optional(),
    /** The node's /dev, mounted read-only: where the device plugins look for the node's devices. */
    NODE_DEV_DIR: z.string().min(1).default("/node/dev"),
  }),
);
