import type { KubeObject } from "@kubevirt-ts/kube";
import { API_VERSION, Annotation, Kind, LAUNCHER_UID, Label, LabelValue, type VirtualMachineInstance } from "@kubevirt-ts/kubevirt-api";
import { controllerRef } from "../common/owner.ts";
import { guestMemoryBytes, memoryOverheadBytes, toMebibytes } from "./resources.ts";

// The launcher pod of a VMI, as a pure function of the VMI and the
// controller's configuration.

export interface LauncherPodConfig {
  launcherImage: string;
  imagePullPolicy: "Always" | "IfNotPresent" | "Never";
  /** The launcher's operations port, probed for readiness. */
  opsPort: number;
  /** KubeVirt's useEmulation: guests may run with QEMU's emulation where KVM is unusable. */
  allowEmulation: boolean;
}

/** Where the launcher puts its sockets; the handler reaches them through the pod's volume on the node. */
export const SOCKETS_DIR = "/var/run/kubevirt-ts/sockets";
export const SOCKETS_VOLUME = "sockets";
/** The launcher's own writable folder: libvirt's state, disk overlays, seed ISOs. */
export const LAUNCHER_STATE_DIR = "/var/run/kubevirt-ts/launcher";
export const DEFAULT_GRACE_PERIOD_SECONDS = 30;
/** Where the containerDisk copier is put for the containerDisk images to run. */
export const TOOLS_DIR = "/var/run/kubevirt-ts/tools";
/** Where each containerDisk's files land, one folder per volume, for the launcher to boot from. */
export const CONTAINER_DISKS_DIR = "/var/run/kubevirt-ts/container-disks";
/** Where a kernel boot's kernel and initrd land. */
export const KERNEL_BOOT_DIR = "/var/run/kubevirt-ts/kernel-boot";
const DISK_COPY = "kubevirt-ts-disk-copy";

/** KubeVirt's pull policy for a containerDisk that names none: Always for :latest or no tag, IfNotPresent otherwise. */
export function defaultPullPolicy(image: string): "Always" | "IfNotPresent" {
  if (image.includes("@")) return "IfNotPresent";
  const lastPart = image.slice(image.lastIndexOf("/") + 1);
  const tag = lastPart.includes(":") ? lastPart.slice(lastPart.indexOf(":") + 1) : "";
  return tag === "" || tag === "latest" ? "Always" : "IfNotPresent";
}

const restrictedContainer = { allowPrivilegeEscalation: false, runAsNonRoot: true, capabilities: { drop: ["ALL"] } };
const smallResources = { requests: { cpu: "10m", memory: "16Mi" }, limits: { memory: "64Mi" } };

/**
 * containerDisk images hold only their disk, so a static copier from the
 * launcher image is handed to them first; each then copies its disk into a
 * volume the launcher reads.
 */
function containerDiskInitContainers(vmi: VirtualMachineInstance, config: LauncherPodConfig): Record<string, unknown>[] {
  const disks = (vmi.spec.volumes ?? []).flatMap((v) => (v.containerDisk ? [{ name: v.name, disk: v.containerDisk }] : []));
  const kernel = vmi.spec.domain.firmware?.kernelBoot?.container;
  if (disks.length === 0 && !kernel) return [];
  // A kernel boot's image is handled like a containerDisk: its kernel and initrd are copied out.
  const kernelFiles = kernel ? [kernel.kernelPath, kernel.initrdPath].filter((p): p is string => p !== undefined) : [];
  return [
    {
      name: "container-disk-binary",
      image: config.launcherImage,
      imagePullPolicy: config.imagePullPolicy,
      command: ["cp", `/usr/local/bin/${DISK_COPY}`, `${TOOLS_DIR}/${DISK_COPY}`],
      resources: smallResources,
      securityContext: restrictedContainer,
      volumeMounts: [{ name: "tools", mountPath: TOOLS_DIR }],
    },
    ...disks.map(({ name, disk }) => ({
      name: `volume-${name}`,
      image: disk.image,
      imagePullPolicy: disk.imagePullPolicy ?? defaultPullPolicy(disk.image),
      command: [`${TOOLS_DIR}/${DISK_COPY}`, disk.path ?? "/disk", `${CONTAINER_DISKS_DIR}/${name}`],
      resources: smallResources,
      securityContext: restrictedContainer,
      volumeMounts: [
        { name: "tools", mountPath: TOOLS_DIR, readOnly: true },
        { name: "container-disks", mountPath: CONTAINER_DISKS_DIR },
      ],
    })),
    ...kernelFiles.map((path, i) => ({
      name: `kernel-boot-${String(i)}`,
      image: kernel?.image ?? "",
      imagePullPolicy: kernel?.imagePullPolicy ?? defaultPullPolicy(kernel?.image ?? ""),
      command: [`${TOOLS_DIR}/${DISK_COPY}`, path, KERNEL_BOOT_DIR],
      resources: smallResources,
      securityContext: restrictedContainer,
      volumeMounts: [
        { name: "tools", mountPath: TOOLS_DIR, readOnly: true },
        { name: "kernel-boot", mountPath: KERNEL_BOOT_DIR },
      ],
    })),
  ];
}

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
  const initContainers = containerDiskInitContainers(vmi, config);
  const hasContainerDisks = initContainers.length > 0;
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
      ...(hasContainerDisks ? { initContainers } : {}),
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
            { name: "STATE_DIR", value: LAUNCHER_STATE_DIR },
            { name: "CONTAINER_DISKS_DIR", value: CONTAINER_DISKS_DIR },
            { name: "KERNEL_BOOT_DIR", value: KERNEL_BOOT_DIR },
            { name: "ALLOW_EMULATION", value: String(config.allowEmulation) },
            { name: "GRACE_PERIOD_SECONDS", value: String(grace) },
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
          volumeMounts: [
            { name: SOCKETS_VOLUME, mountPath: SOCKETS_DIR },
            { name: "launcher-state", mountPath: LAUNCHER_STATE_DIR },
            ...(hasContainerDisks
              ? [
                  { name: "container-disks", mountPath: CONTAINER_DISKS_DIR, readOnly: true },
                  { name: "kernel-boot", mountPath: KERNEL_BOOT_DIR, readOnly: true },
                ]
              : []),
          ],
        },
      ],
      volumes: [
        { name: SOCKETS_VOLUME, emptyDir: {} },
        { name: "launcher-state", emptyDir: {} },
        ...(hasContainerDisks ? [{ name: "tools", emptyDir: { sizeLimit: "16Mi" } }, { name: "container-disks", emptyDir: {} }, { name: "kernel-boot", emptyDir: {} }] : []),
      ],
    },
  };
}
