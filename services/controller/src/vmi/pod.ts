import { createHash } from "node:crypto";
import type { Pod, PodSpec } from "@kubevirt-ts/kube";
import {
  type ClaimObject,
  backendStorageClaimName,
  claimDevicePath,
  claimVolumes,
  guestMemoryBytes,
  memoryOverheadBytes,
  needsBackendStorage,
} from "@kubevirt-ts/vm-rules";
import {
  type EvictionStrategy,
  API_VERSION,
  DEFAULT_GRACE_PERIOD_SECONDS,
  Annotation,
  Kind,
  LAUNCHER_OPS_PORT,
  LAUNCHER_UID,
  Label,
  LabelValue,
  LAUNCHER_OPS_PORT_NAME,
  DEFAULT_CPU_ALLOCATION_RATIO,
  DEFAULT_MEMORY_OVERCOMMIT,
  launcherCpuRequest,
  overcommittedGuestBytes,
  type VirtualMachineInstance,
  launcherContainerProbe,
  podNetworkPorts,
  controllerRef,
} from "@kubevirt-ts/kubevirt-api";
import {
  GUEST_CONSOLE_LOG_CONTAINER,
  LAUNCHER_CLEANUP_SECONDS,
  LAUNCHER_CONTAINER,
  SocketsVolume,
  keepsSerialLog,
  LauncherDir,
  LauncherVolume,
  launcherVerbosity,
  accessCredentialMounts,
  launcherNodeSelector,
  cloudInitSecretMounts,
  configVolumes,
  launcherDeviceLimits,
  launcherServiceAccount,
  launcherEnv,
  NETWORK_NOTES_ENV,
  NETWORK_RULES_ENV,
  NETWORK_SETUP_CONTAINER,
  NodeDevices,
  PROBE_CLIENT_PATH,
  type PodNetworkPlan,
  deviceResourceName,
  guestNetworkOf,
  networkSetupScript,
  podNetworkPlan,
  podNetworkRules,
} from "@kubevirt-ts/node-contract";
import { type DiskCopy, diskCopyInitContainers } from "../common/disk-copy.ts";
import { toMebibytes, vcpus } from "./resources.ts";

// The launcher pod of a VMI, as a pure function of the VMI and the
// controller's configuration. Its folders, volumes, sockets, environment and
// port are node-contract's launcher layout (launcher-layout.ts), which the
// launcher and the handler use too.

export interface LauncherPodConfig {
  launcherImage: string;
  imagePullPolicy: "Always" | "IfNotPresent" | "Never";
  /** KubeVirt's useEmulation: guests may run with QEMU's emulation where KVM is unusable. */
  allowEmulation: boolean;
  /** The cluster's eviction strategy, for VMIs that name none (whether a PodDisruptionBudget protects the pod). */
  evictionStrategy: EvictionStrategy;
  /** KubeVirt's cpuAllocationRatio: vCPUs per requested CPU, for a VMI that requests none (10 when unset). */
  cpuAllocationRatio?: number;
  /** KubeVirt's memoryOvercommit: the guest's memory against the pod's request, in percent (100 when unset). */
  memoryOvercommit?: number;
  /** KubeVirt's defaultRuntimeClass: the pod's RuntimeClass. */
  runtimeClassName?: string;
  /** The cluster's virtLauncher log verbosity; a VMI's logVerbosity label wins. */
  launcherVerbosity?: number;
}

const { tools: TOOLS_DIR, containerDisks: CONTAINER_DISKS_DIR, kernelBoot: KERNEL_BOOT_DIR } = LauncherDir;

/** KubeVirt's pull policy for a containerDisk that names none: Always for :latest or no tag, IfNotPresent otherwise. */
export function defaultPullPolicy(image: string): "Always" | "IfNotPresent" {
  if (image.includes("@")) return "IfNotPresent";
  const lastPart = image.slice(image.lastIndexOf("/") + 1);
  const tag = lastPart.includes(":") ? lastPart.slice(lastPart.indexOf(":") + 1) : "";
  return tag === "" || tag === "latest" ? "Always" : "IfNotPresent";
}

/**
 * containerDisk images hold only their disk: each copies it into a volume the launcher reads, as does a kernel boot's
 * image its kernel and initrd.
 */
function containerDiskInitContainers(
  vmi: VirtualMachineInstance,
  config: LauncherPodConfig,
): NonNullable<PodSpec["initContainers"]> {
  const disks: DiskCopy[] = (vmi.spec.volumes ?? []).flatMap((v) =>
    v.containerDisk
      ? [
          {
            name: `volume-${v.name}`,
            image: v.containerDisk.image,
            imagePullPolicy: v.containerDisk.imagePullPolicy ?? defaultPullPolicy(v.containerDisk.image),
            from: v.containerDisk.path ?? "/disk",
            volume: LauncherVolume.containerDisks,
            mountPath: CONTAINER_DISKS_DIR,
            to: `${CONTAINER_DISKS_DIR}/${v.name}`,
          },
        ]
      : [],
  );
  const kernel = vmi.spec.domain.firmware?.kernelBoot?.container;
  const kernelFiles: DiskCopy[] = (kernel ? [kernel.kernelPath, kernel.initrdPath] : [])
    .filter((p): p is string => p !== undefined)
    .map((path, i) => ({
      name: `kernel-boot-${String(i)}`,
      image: kernel?.image ?? "",
      imagePullPolicy: kernel?.imagePullPolicy ?? defaultPullPolicy(kernel?.image ?? ""),
      from: path,
      volume: LauncherVolume.kernelBoot,
      mountPath: KERNEL_BOOT_DIR,
    }));
  return diskCopyInitContainers(
    { image: config.launcherImage, imagePullPolicy: config.imagePullPolicy },
    { volume: LauncherVolume.tools, mountPath: TOOLS_DIR },
    [...disks, ...kernelFiles],
  );
}

/**
 * The serial log as the pod's log, as KubeVirt's guest-console-log container: it waits for the log, then prints it
 * from its start and follows it across virtlogd's rotation. A native sidecar (an init container that keeps running),
 * so the pod ends when the launcher does and its phase is the launcher's; tail's notices of rotation stay out of the
 * log. tini is its PID 1 and passes SIGTERM on: a tail that were PID 1 would ignore it and hold the pod's deletion for
 * the whole grace period.
 */
function guestConsoleLogSidecar(
  vmi: VirtualMachineInstance,
  config: LauncherPodConfig,
): NonNullable<PodSpec["initContainers"]> {
  if (!keepsSerialLog(vmi.spec)) return [];
  const log = `${LauncherDir.sockets}/${SocketsVolume.serialLog}`;
  return [
    {
      name: GUEST_CONSOLE_LOG_CONTAINER,
      image: config.launcherImage,
      imagePullPolicy: config.imagePullPolicy,
      restartPolicy: "Always",
      command: [
        "/usr/bin/tini",
        "--",
        "/bin/sh",
        "-c",
        `until [ -e ${log} ]; do sleep 1; done; exec tail -n +1 -F ${log} 2>/dev/null`,
      ],
      resources: { requests: { cpu: "5m", memory: "35M" }, limits: { cpu: "15m", memory: "60M" } },
      securityContext: {
        allowPrivilegeEscalation: false,
        runAsNonRoot: true,
        readOnlyRootFilesystem: true,
        capabilities: { drop: ["ALL"] },
      },
      volumeMounts: [{ name: LauncherVolume.sockets, mountPath: LauncherDir.sockets, readOnly: true }],
    },
  ];
}

/**
 * The guest's way onto the pod network (node-contract's pod-network.ts, ADRs 33 and 34): an init container, root with
 * NET_ADMIN alone in the pod's own network namespace, makes the bridge, the launcher's tap and the binding's rules, and
 * ends before the launcher starts. It runs the launcher's image (ip and nft) and a script of the controller's, which
 * names no tenant's string: the ports are numbers and the MAC a MAC, as the API validated them. Under the bridge
 * binding it notes the pod interface for the launcher in the launcher's state folder.
 */
function networkSetupInitContainer(
  plan: PodNetworkPlan | undefined,
  config: LauncherPodConfig,
): NonNullable<PodSpec["initContainers"]> {
  if (!plan) return [];
  const bridged = plan.binding === "bridge";
  return [
    {
      name: NETWORK_SETUP_CONTAINER,
      image: config.launcherImage,
      imagePullPolicy: config.imagePullPolicy,
      command: ["/bin/sh", "-c", networkSetupScript(plan)],
      env: [
        { name: NETWORK_RULES_ENV, value: podNetworkRules(plan) },
        ...(bridged ? [{ name: NETWORK_NOTES_ENV, value: LauncherDir.state }] : []),
      ],
      ...(bridged ? { volumeMounts: [{ name: LauncherVolume.state, mountPath: LauncherDir.state }] } : {}),
      resources: {
        requests: { cpu: "5m", memory: "20M" },
        limits: { cpu: "100m", memory: "40M", [deviceResourceName(NodeDevices.tun)]: "1" },
      },
      securityContext: {
        runAsUser: 0,
        runAsGroup: 0,
        runAsNonRoot: false,
        allowPrivilegeEscalation: false,
        readOnlyRootFilesystem: true,
        capabilities: { drop: ["ALL"], add: ["NET_ADMIN"] },
      },
    },
  ];
}

/** Files only the launcher's group (the pod's fsGroup) may read: what the pod mounts from Secrets. */
const LAUNCHER_GROUP_ONLY = 0o440;

/** A Secret as a pod volume, readable by the launcher's group alone. */
const secretVolume = (name: string, secretName: string, optional?: boolean) => ({
  name,
  secret: { secretName, defaultMode: LAUNCHER_GROUP_ONLY, ...(optional !== undefined ? { optional } : {}) },
});

/** How long a projected ServiceAccount token lasts (the kubelet's default for a pod's own token). */
const TOKEN_SECONDS = 3607;

/**
 * The pod volumes of the VMI's configMap, secret, serviceAccount and downwardAPI volumes, each the same kind of pod
 * volume, for the kubelet to fill (node-contract's config-volumes.ts).
 */
function configPodVolumes(vmi: VirtualMachineInstance): NonNullable<PodSpec["volumes"]> {
  const volumes = new Map((vmi.spec.volumes ?? []).map((v) => [v.name, v]));
  type PodVolume = NonNullable<PodSpec["volumes"]>[number];
  return configVolumes(vmi.spec).flatMap(({ volume, podVolume }): PodVolume[] => {
    const source = volumes.get(volume);
    if (source?.configMap)
      return [
        {
          name: podVolume,
          configMap: {
            name: source.configMap.name,
            ...(source.configMap.optional !== undefined ? { optional: source.configMap.optional } : {}),
          },
        },
      ];
    // Readable by the launcher's group (the pod's fsGroup) only.
    if (source?.secret) return [secretVolume(podVolume, source.secret.secretName, source.secret.optional)];
    if (source?.serviceAccount) {
      // What a pod's own token volume holds: the token, the cluster's CA and the namespace.
      return [
        {
          name: podVolume,
          projected: {
            defaultMode: LAUNCHER_GROUP_ONLY,
            sources: [
              { serviceAccountToken: { path: "token", expirationSeconds: TOKEN_SECONDS } },
              { configMap: { name: "kube-root-ca.crt", items: [{ key: "ca.crt", path: "ca.crt" }] } },
              {
                downwardAPI: {
                  items: [{ path: "namespace", fieldRef: { apiVersion: "v1", fieldPath: "metadata.namespace" } }],
                },
              },
            ],
          },
        },
      ];
    }
    if (source?.downwardAPI) {
      const items = (source.downwardAPI.fields ?? []).map((f) => ({
        path: f.path,
        ...(f.fieldRef
          ? { fieldRef: { apiVersion: f.fieldRef.apiVersion ?? "v1", fieldPath: f.fieldRef.fieldPath } }
          : {}),
        ...(f.resourceFieldRef
          ? {
              resourceFieldRef: {
                containerName: f.resourceFieldRef.containerName ?? LAUNCHER_CONTAINER,
                resource: f.resourceFieldRef.resource,
                ...(f.resourceFieldRef.divisor !== undefined ? { divisor: String(f.resourceFieldRef.divisor) } : {}),
              },
            }
          : {}),
        ...(f.mode !== undefined ? { mode: f.mode } : {}),
      }));
      return [{ name: podVolume, downwardAPI: { items } }];
    }
    return [];
  });
}

/**
 * The grace period a launcher pod is deleted with: its own (undefined), unless the VMI's was shortened after the pod
 * was made, as a forced stop does (KubeVirt's stop with gracePeriod 0). The pod then ends within the new one, and
 * its guest with it: past the period the kubelet kills the launcher, libvirt and QEMU alike.
 */
export function launcherDeletionGrace(
  vmi: Pick<VirtualMachineInstance, "spec">,
  pod: Pick<Pod, "metadata" | "spec">,
): number | undefined {
  const wanted = vmi.spec.terminationGracePeriodSeconds;
  // A pod already being deleted has the grace period it was deleted with; deleting it again with a shorter one hurries
  // it.
  const made = pod.metadata.deletionTimestamp
    ? (pod.metadata.deletionGracePeriodSeconds ?? pod.spec?.terminationGracePeriodSeconds)
    : pod.spec?.terminationGracePeriodSeconds;
  if (wanted === undefined || made === undefined || wanted + LAUNCHER_CLEANUP_SECONDS >= made) return undefined;
  // 0 would remove the pod from the API at once, before its processes are gone; 1 lets the kubelet stop them first.
  return Math.max(1, wanted);
}

/**
 * The VMI's claims in the pod, as KubeVirt's: each a pod volume of the claim (read-only when the volume asks), mounted
 * at its folder under LauncherDir.claimDisks when the claim is in Filesystem mode, or given as a device under
 * LauncherDir.claimDevices in Block mode. `claims` are the claims found, by name (the controller makes no pod before
 * each is there).
 */
function claimParts(vmi: VirtualMachineInstance, claims: ReadonlyMap<string, ClaimObject>) {
  const volumes = claimVolumes(vmi.spec);
  const block = (claimName: string) => claims.get(claimName)?.spec?.volumeMode === "Block";
  return {
    volumes: volumes.map((c) => ({
      name: c.podVolume,
      persistentVolumeClaim: { claimName: c.claimName, ...(c.readOnly ? { readOnly: true } : {}) },
    })),
    mounts: volumes
      .filter((c) => !block(c.claimName))
      .map((c) => ({
        name: c.podVolume,
        mountPath: `${LauncherDir.claimDisks}/${c.volume}`,
        ...(c.readOnly ? { readOnly: true } : {}),
      })),
    devices: volumes
      .filter((c) => block(c.claimName))
      .map((c) => ({ name: c.podVolume, devicePath: claimDevicePath(c.volume) })),
  };
}

/** A label value is at most 63 characters (a DNS-1035 label's length, as KubeVirt measures it). */
const LABEL_VALUE_MAX = 63;
const ID_HASH_CHARS = 8;

/**
 * The launcher pod's `vmi.kubevirt.io/id` label, as KubeVirt computes it so that `virtctl expose` finds the pod: the
 * VMI's name, or for a longer name its first 54 characters, a dash and the first 8 hex digits of the name's SHA-1.
 */
export function vmiIdLabelValue(vmiName: string): string {
  if (vmiName.length <= LABEL_VALUE_MAX) return vmiName;
  const hash = createHash("sha1").update(vmiName).digest("hex").slice(0, ID_HASH_CHARS);
  return `${vmiName.slice(0, LABEL_VALUE_MAX - ID_HASH_CHARS - 1)}-${hash}`;
}

export function launcherPod(
  vmi: VirtualMachineInstance,
  config: LauncherPodConfig,
  claims: ReadonlyMap<string, ClaimObject> = new Map(),
): Pod & { spec: PodSpec } {
  const { name = "", namespace, uid = "" } = vmi.metadata;
  const diskCopies = containerDiskInitContainers(vmi, config);
  const hasContainerDisks = diskCopies.length > 0;
  const spec = vmi.spec;
  const network = podNetworkPlan(spec);
  // The kubelet's probes of the launcher reach the guest where it took the pod's address: they run the probe client.
  const probeClient = network?.binding === "bridge" ? PROBE_CLIENT_PATH : undefined;
  // The network is made and the disks are copied before the sidecar starts, and the sidecar before the launcher.
  const initContainers = [
    ...networkSetupInitContainer(network, config),
    ...diskCopies,
    ...guestConsoleLogSidecar(vmi, config),
  ];
  // What QEMU, libvirt and the launcher use besides the guest: KubeVirt's estimate with KVM, the launcher's measured
  // share and QEMU's translation cache where the cluster allows emulation (then no pod has KVM: ADR 23).
  const overhead = memoryOverheadBytes(vmi, config.allowEmulation);
  // overcommitGuestOverhead: the pod asks for the guest's memory alone, betting the overhead is there; a limit still
  // allows for it.
  const memoryNeeded = guestMemoryBytes(vmi) + overhead;
  // memoryOvercommit: the pod asks for a share of the guest's memory, betting the guest does not touch all of it; as
  // KubeVirt's mutator, only where the VMI asks for no memory itself.
  const overcommit =
    spec.domain.resources?.requests?.memory === undefined
      ? (config.memoryOvercommit ?? DEFAULT_MEMORY_OVERCOMMIT)
      : DEFAULT_MEMORY_OVERCOMMIT;
  const guestRequest = overcommittedGuestBytes(guestMemoryBytes(vmi), overcommit);
  const memoryRequest =
    spec.domain.resources?.overcommitGuestOverhead === true ? guestRequest : guestRequest + overhead;
  const limits = spec.domain.resources?.limits;
  const memoryLimit = limits?.memory !== undefined ? memoryNeeded : undefined;
  // A VMI that requests no CPU gets KubeVirt's share of one per vCPU (cpuAllocationRatio).
  const cpuRequest =
    spec.domain.resources?.requests?.cpu ??
    launcherCpuRequest(vcpus(vmi), config.cpuAllocationRatio ?? DEFAULT_CPU_ALLOCATION_RATIO);
  const grace = spec.terminationGracePeriodSeconds ?? DEFAULT_GRACE_PERIOD_SECONDS;
  // cloud-init Secrets reach the launcher as Secret volumes: the kubelet reads them in the VMI's namespace, no
  // component's account does.
  const secrets = cloudInitSecretMounts(spec);
  const guestPorts = podNetworkPorts(spec);
  const configs = configVolumes(spec);
  const credentials = accessCredentialMounts(spec);
  const serviceAccount = launcherServiceAccount(spec);
  const claimed = claimParts(vmi, claims);
  // The VM's backend-storage claim, for EFI variables and TPM state that outlive the pod (see backend-storage.ts).
  const vmState = needsBackendStorage(spec);
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
        [Label.VmiId]: vmiIdLabelValue(name),
      },
      annotations: { [Annotation.Domain]: name },
      ownerReferences: [
        controllerRef({ apiVersion: API_VERSION, kind: Kind.VirtualMachineInstance, metadata: vmi.metadata }),
      ],
    },
    spec: {
      restartPolicy: "Never",
      // The guest gets its own grace period to shut down; the launcher needs a little more to clean up after it.
      terminationGracePeriodSeconds: grace + LAUNCHER_CLEANUP_SECONDS,
      // The launcher talks to no API server: a serviceAccount volume's token goes to the guest alone, mounted where the
      // launcher reads it.
      automountServiceAccountToken: false,
      ...(serviceAccount !== undefined ? { serviceAccountName: serviceAccount } : {}),
      enableServiceLinks: false,
      hostname: spec.hostname ?? name,
      ...(spec.subdomain ? { subdomain: spec.subdomain } : {}),
      // A node whose handler beats and, for a named CPU model, whose labeller found it usable (KubeVirt's); the VMI's
      // own on top. KubeVirt's own selectors last, as its template renders them: a VMI cannot lift them (e.g. onto a
      // node whose handler is gone).
      nodeSelector: { ...spec.nodeSelector, ...launcherNodeSelector(spec.domain.cpu?.model) },
      ...(spec.tolerations ? { tolerations: spec.tolerations.map((t) => ({ ...t })) } : {}),
      ...(spec.affinity ? { affinity: structuredClone(spec.affinity) } : {}),
      ...(spec.topologySpreadConstraints
        ? { topologySpreadConstraints: structuredClone(spec.topologySpreadConstraints) }
        : {}),
      ...(spec.priorityClassName !== undefined ? { priorityClassName: spec.priorityClassName } : {}),
      ...(spec.schedulerName !== undefined ? { schedulerName: spec.schedulerName } : {}),
      ...(config.runtimeClassName !== undefined ? { runtimeClassName: config.runtimeClassName } : {}),
      ...(spec.dnsPolicy !== undefined ? { dnsPolicy: spec.dnsPolicy } : {}),
      ...(spec.dnsConfig ? { dnsConfig: structuredClone(spec.dnsConfig) } : {}),
      securityContext: {
        // The launcher, as its unprivileged user, answers the guest's DHCP on port 67, as KubeVirt's (a safe sysctl,
        // of the pod's own network).
        ...(network ? { sysctls: [{ name: "net.ipv4.ip_unprivileged_port_start", value: "0" }] } : {}),
        runAsUser: LAUNCHER_UID,
        runAsGroup: LAUNCHER_UID,
        fsGroup: LAUNCHER_UID,
        runAsNonRoot: true,
        seccompProfile: { type: "RuntimeDefault" },
      },
      ...(initContainers.length > 0 ? { initContainers } : {}),
      containers: [
        {
          name: LAUNCHER_CONTAINER,
          image: config.launcherImage,
          imagePullPolicy: config.imagePullPolicy,
          env: launcherEnv({
            allowEmulation: config.allowEmulation,
            gracePeriodSeconds: grace,
            verbosity: launcherVerbosity(vmi.metadata.labels, config.launcherVerbosity),
            guestNetwork: guestNetworkOf(spec),
          }),
          // The guest's declared ports on the pod's address, named as the VMI names them, so a Service can target them.
          ports: [
            { name: LAUNCHER_OPS_PORT_NAME, containerPort: LAUNCHER_OPS_PORT },
            ...guestPorts.map((p) => ({
              ...(p.name !== undefined ? { name: p.name } : {}),
              containerPort: p.port,
              protocol: p.protocol,
            })),
          ],
          resources: {
            requests: { memory: toMebibytes(memoryRequest), cpu: String(cpuRequest) },
            ...(memoryLimit !== undefined || limits?.cpu !== undefined || !config.allowEmulation || network
              ? {
                  limits: {
                    ...(memoryLimit !== undefined ? { memory: toMebibytes(memoryLimit) } : {}),
                    ...(limits?.cpu !== undefined ? { cpu: String(limits.cpu) } : {}),
                    ...launcherDeviceLimits({ allowEmulation: config.allowEmulation, tap: network !== undefined }),
                  },
                }
              : {}),
          },
          // No startup probe: the VMI is handed to its node once this container runs, and the handler waits for the
          // launcher's socket (LAUNCHER_SOCKET_WAIT_SECONDS), as KubeVirt's. The VMI's probes, which the launcher runs
          // against the guest when the kubelet asks; without a readiness probe the pod is ready while it runs, as
          // KubeVirt's.
          ...(spec.readinessProbe
            ? { readinessProbe: launcherContainerProbe(spec.readinessProbe, "readiness", probeClient) }
            : {}),
          ...(spec.livenessProbe
            ? { livenessProbe: launcherContainerProbe(spec.livenessProbe, "liveness", probeClient) }
            : {}),
          securityContext: {
            allowPrivilegeEscalation: false,
            runAsNonRoot: true,
            capabilities: { drop: ["ALL"], add: ["NET_BIND_SERVICE"] },
          },
          volumeMounts: [
            { name: LauncherVolume.sockets, mountPath: LauncherDir.sockets },
            { name: LauncherVolume.state, mountPath: LauncherDir.state },
            ...(hasContainerDisks
              ? [
                  { name: LauncherVolume.containerDisks, mountPath: CONTAINER_DISKS_DIR, readOnly: true },
                  { name: LauncherVolume.kernelBoot, mountPath: KERNEL_BOOT_DIR, readOnly: true },
                ]
              : []),
            ...secrets.map((m) => ({
              name: m.podVolume,
              mountPath: `${LauncherDir.cloudInitSecrets}/${m.relativeDir}`,
              readOnly: true,
            })),
            ...configs.map((c) => ({
              name: c.podVolume,
              mountPath: `${LauncherDir.configVolumes}/${c.relativeDir}`,
              readOnly: true,
            })),
            ...credentials.map((c) => ({
              name: c.podVolume,
              mountPath: `${LauncherDir.accessCredentials}/${c.relativeDir}`,
              readOnly: true,
            })),
            ...claimed.mounts,
            ...(vmState ? [{ name: LauncherVolume.vmState, mountPath: LauncherDir.vmState }] : []),
          ],
          ...(claimed.devices.length > 0 ? { volumeDevices: claimed.devices } : {}),
        },
      ],
      volumes: [
        { name: LauncherVolume.sockets, emptyDir: {} },
        { name: LauncherVolume.state, emptyDir: {} },
        ...(hasContainerDisks
          ? [
              { name: LauncherVolume.tools, emptyDir: { sizeLimit: "16Mi" } },
              { name: LauncherVolume.containerDisks, emptyDir: {} },
              { name: LauncherVolume.kernelBoot, emptyDir: {} },
            ]
          : []),
        // Readable by the launcher's group (the pod's fsGroup) only; the pod does not start until the Secret exists.
        ...secrets.map((m) => secretVolume(m.podVolume, m.secretName)),
        ...configPodVolumes(vmi),
        // SSH public keys: readable by the launcher's group alone, as the cloud-init Secrets are.
        ...credentials.map((c) => secretVolume(c.podVolume, c.secretName)),
        ...claimed.volumes,
        ...(vmState
          ? [{ name: LauncherVolume.vmState, persistentVolumeClaim: { claimName: backendStorageClaimName(vmi) } }]
          : []),
      ],
    },
  };
}

/**
 * Why the VMI waits, while its launcher pod has started nothing yet and
 * mounts Secrets: the kubelet holds a pod until each Secret it mounts
 * exists, and says so only in the pod's events. Undefined otherwise.
 */
export function secretsWaitMessage(pod: Pod): string | undefined {
  const secrets = (pod.spec?.volumes ?? []).flatMap((v) => (v.secret?.secretName ? [v.secret.secretName] : []));
  const statuses = [...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.containerStatuses ?? [])];
  const nothingStarted =
    pod.status?.phase === "Pending" && statuses.length > 0 && statuses.every((c) => c.state?.waiting !== undefined);
  if (!nothingStarted || secrets.length === 0) return undefined;
  const { name = "", namespace = "" } = pod.metadata;
  return (
    `The launcher pod ${name} has not started yet; it mounts the cloud-init ` +
    `Secret${secrets.length > 1 ? "s" : ""} ${secrets.join(", ")}, which must exist in ` +
    `namespace ${namespace}. If it stays so, create ${secrets.length > 1 ? "them" : "it"}; kubectl ` +
    `describe pod ${name} -n ${namespace} shows the kubelet's reason.`
  );
}
