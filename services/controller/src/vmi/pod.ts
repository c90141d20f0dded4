import type { KubeObject } from "@kubevirt-ts/kube";
import { API_VERSION, Annotation, Kind, Label, LabelValue, type VirtualMachineInstance } from "@kubevirt-ts/kubevirt-api";
import { controllerRef } from "../common/owner.ts";
import { guestMemoryBytes, memoryOverheadBytes, toMebibytes } from "./resources.ts";

// The launcher pod of a VMI, as a pure function of the VMI and the
// controller's configuration.

export interface LauncherPodConfig {
  launcherImage: string;
  imagePullPolicy: "Always" | "IfNotPresent" | "Never";
  /** The launcher's operations port, probed for readiness. */
  opsPort: number;
}

/** The launcher's user and group, as KubeVirt's: qemu (107). */
export const LAUNCHER_UID = 107;
/** Where the launcher puts its sockets; the handler reaches them through the pod's volume on the node. */
export const SOCKETS_DIR = "/var/run/kubevirt-ts/sockets";
export const SOCKETS_VOLUME = "sockets";
export const DEFAULT_GRACE_PERIOD_SECONDS = 30;

export interface Pod extends KubeObject {
  spec?: Record<string, unknown> & { nodeName?: string; containers?: (Record<string, unknown> & { name: string; image?: string })[] };
  status?: {
    phase?: string;
    reason?: string;
    message?: string;
    conditions?: { type: string; status: string; reason?: string; message?: string }[];
    containerStatuses?: { name: string; ready: boolean; state?: { waiting?: { reason?: string; message?: string }; terminated?: { exitCode?: number; reason?: string } } }[];
  };
}

export function launcherPod(vmi: VirtualMachineInstance, config: LauncherPodConfig): Pod {
  const { name = "", namespace, uid = "" } = vmi.metadata;
  const spec = vmi.spec;
  const memoryRequest = guestMemoryBytes(vmi) + memoryOverheadBytes(vmi);
  const limits = spec.domain.resources?.limits;
  const memoryLimit = limits?.memory !== undefined ? memoryRequest : undefined;
  const cpuRequest = spec.domain.resources?.requests?.cpu;
  const grace = spec.terminationGracePeriodSeconds ?? DEFAULT_GRACE_PERIOD_SECONDS;
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      generateName: `virt-launcher-${name}-`,
      namespace,
      labels: {
        ...vmi.metadata.labels,
        [Label.App]: LabelValue.Launcher,
        [Label.CreatedBy]: uid,
        [Label.VmName]: vmi.metadata.labels?.[Label.VmName] ?? name,
      },
      annotations: { [Annotation.Domain]: name },
      ownerReferences: [controllerRef({ apiVersion: API_VERSION, kind: Kind.VirtualMachineInstance, metadata: vmi.metadata })],
    },
    spec: {
      restartPolicy: "Never",
      // The guest gets its own grace period to shut down; the launcher needs a little more to clean up after it.
      terminationGracePeriodSeconds: grace + 15,
      automountServiceAccountToken: false,
      enableServiceLinks: false,
      hostname: spec.hostname ?? name,
      ...(spec.subdomain ? { subdomain: spec.subdomain } : {}),
      ...(spec.nodeSelector ? { nodeSelector: { ...spec.nodeSelector } } : {}),
      ...(spec.tolerations ? { tolerations: spec.tolerations.map((t) => ({ ...t })) } : {}),
      ...(spec.affinity ? { affinity: structuredClone(spec.affinity) } : {}),
      securityContext: {
        runAsUser: LAUNCHER_UID,
        runAsGroup: LAUNCHER_UID,
        fsGroup: LAUNCHER_UID,
        runAsNonRoot: true,
        seccompProfile: { type: "RuntimeDefault" },
      },
      containers: [
        {
          name: "compute",
          image: config.launcherImage,
          imagePullPolicy: config.imagePullPolicy,
          env: [
            { name: "VMI_NAME", value: name },
            { name: "VMI_NAMESPACE", value: namespace ?? "" },
            { name: "VMI_UID", value: uid },
            { name: "OPS_PORT", value: String(config.opsPort) },
            { name: "SOCKETS_DIR", value: SOCKETS_DIR },
          ],
          ports: [{ name: "ops", containerPort: config.opsPort }],
          resources: {
            requests: { memory: toMebibytes(memoryRequest), ...(cpuRequest !== undefined ? { cpu: cpuRequest } : {}) },
            ...(memoryLimit !== undefined || limits?.cpu !== undefined
              ? { limits: { ...(memoryLimit !== undefined ? { memory: toMebibytes(memoryLimit) } : {}), ...(limits?.cpu !== undefined ? { cpu: limits.cpu } : {}) } }
              : {}),
          },
          readinessProbe: { httpGet: { path: "/readyz", port: "ops" }, periodSeconds: 2, failureThreshold: 3 },
          securityContext: {
            allowPrivilegeEscalation: false,
            runAsNonRoot: true,
            capabilities: { drop: ["ALL"], add: ["NET_BIND_SERVICE"] },
          },
          volumeMounts: [{ name: SOCKETS_VOLUME, mountPath: SOCKETS_DIR }],
        },
      ],
      volumes: [{ name: SOCKETS_VOLUME, emptyDir: {} }],
    },
  };
}
