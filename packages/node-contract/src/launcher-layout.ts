import { type Ipv4Network, LAUNCHER_OPS_PORT, cidrOf, logLevelOf, type PortForward } from "@kubevirt-ts/kubevirt-api";
import { CLOUD_INIT_SECRETS_DIR } from "./cloud-init-secrets.ts";
import { ACCESS_CREDENTIALS_DIR } from "./access-credentials.ts";
import { CLAIM_DEVICES_DIR, CLAIM_DISKS_DIR } from "@kubevirt-ts/vm-rules";
import { CONFIG_VOLUMES_DIR } from "./config-volumes.ts";

// The launcher pod's layout: the folders, volumes, sockets, environment and
// port that the controller builds into the pod, the launcher uses inside it,
// and the handler reaches on the node. Each is spelled here and nowhere else.

const ROOT = "/var/run/kubevirt-ts";

/**
 * The containerDisk copier: a static binary in the launcher and importer images, handed to an image that holds only
 * its disk (no shell, no cp) so that it copies the disk out (packages/images/tools/disk-copy.c).
 */
export const DISK_COPY_NAME = "kubevirt-ts-disk-copy";
export const DISK_COPY_PATH = `/usr/local/bin/${DISK_COPY_NAME}`;
/**
 * The launcher image's probe client (packages/images/tools/probe.c): the kubelet's exec probe when the guest took the
 * pod's address (the bridge binding), which asks the launcher on loopback what an HTTP probe would have asked it.
 */
export const PROBE_CLIENT_NAME = "kubevirt-ts-probe";
export const PROBE_CLIENT_PATH = `/usr/local/bin/${PROBE_CLIENT_NAME}`;

/**
 * One folder of the launcher pod: where the launcher container finds it, the pod volume it is when it is one of its
 * own, and the variable that tells the launcher where it is when the launcher reads one.
 */
export interface LauncherFolder {
  readonly dir: string;
  readonly volume?: string;
  readonly env?: string;
}

/**
 * The launcher pod's folders, each spelled here once: LauncherDir, LauncherVolume, the launcher's environment
 * (launcherEnv) and the launcher's own defaults (services/launcher/src/env.ts) are read from this table.
 */
export const LauncherFolders = {
  /** The launcher's sockets (see SocketsVolume); the handler reaches them through the pod's volume on the node. */
  sockets: { dir: `${ROOT}/sockets`, volume: "sockets", env: "SOCKETS_DIR" },
  /** The launcher's own writable folder: libvirt's state, disk overlays, seed ISOs. */
  state: { dir: `${ROOT}/launcher`, volume: "launcher-state", env: "STATE_DIR" },
  /** Where the containerDisk copier is put for the containerDisk images to run. */
  tools: { dir: `${ROOT}/tools`, volume: "tools" },
  /** Where each containerDisk's files land, one folder per volume, for the launcher to boot from. */
  containerDisks: { dir: `${ROOT}/container-disks`, volume: "container-disks", env: "CONTAINER_DISKS_DIR" },
  /** Where a kernel boot's kernel and initrd land. */
  kernelBoot: { dir: `${ROOT}/kernel-boot`, volume: "kernel-boot", env: "KERNEL_BOOT_DIR" },
  /** Where the cloud-init Secrets are mounted (see cloud-init-secrets.ts). */
  cloudInitSecrets: { dir: CLOUD_INIT_SECRETS_DIR, env: "CLOUD_INIT_SECRETS_DIR" },
  /** Where ConfigMaps, Secrets, a ServiceAccount's token and downwardAPI files are mounted (see config-volumes.ts). */
  configVolumes: { dir: CONFIG_VOLUMES_DIR, env: "CONFIG_VOLUMES_DIR" },
  /** Where the access credentials' Secrets are mounted (see access-credentials.ts). */
  accessCredentials: { dir: ACCESS_CREDENTIALS_DIR, env: "ACCESS_CREDENTIALS_DIR" },
  /** Where Filesystem-mode claims are mounted, and where Block-mode claims' devices are (see claims.ts). */
  claimDisks: { dir: CLAIM_DISKS_DIR, env: "CLAIM_DISKS_DIR" },
  claimDevices: { dir: CLAIM_DEVICES_DIR, env: "CLAIM_DEVICES_DIR" },
  /** Where the VM's backend-storage claim is mounted, when it has one (see backend-storage.ts). */
  vmState: { dir: `${ROOT}/vm-state`, volume: "vm-state", env: "VM_STATE_DIR" },
} as const satisfies Record<string, LauncherFolder>;

type Folders = typeof LauncherFolders;
/** The folders that have a volume, or a variable, of their own. */
type FolderWith<F extends "volume" | "env"> = {
  [K in keyof Folders]: Folders[K] extends Record<F, string> ? K : never;
}[keyof Folders];
/** The variables that tell the launcher where its folders are. */
export type LauncherFolderEnv = Folders[FolderWith<"env">]["env"];

/** One field of each folder that has it, by folder. */
function folderField(field: keyof LauncherFolder): Record<string, string> {
  const folders: [string, LauncherFolder][] = Object.entries(LauncherFolders);
  return Object.fromEntries(
    folders.flatMap(([key, folder]) => (folder[field] === undefined ? [] : [[key, folder[field]]])),
  );
}

/** Where the launcher container finds each folder. */
export const LauncherDir = folderField("dir") as Readonly<Record<keyof Folders, string>>;

/** The pod's volume names. */
export const LauncherVolume = folderField("volume") as Readonly<Record<FolderWith<"volume">, string>>;

/** The variable of each folder the launcher reads. */
const FolderEnv = folderField("env") as Readonly<Record<FolderWith<"env">, string>>;

/**
 * The sockets volume's folder below a pod's folder on the node
 * (`<kubelet pods dir>/<pod uid>/volumes/<this>`), as the kubelet lays out an emptyDir.
 */
export const SOCKETS_VOLUME_ON_NODE = `kubernetes.io~empty-dir/${LauncherVolume.sockets}`;

/**
 * What the launcher keeps in its sockets volume, for the handler: its RPC
 * socket, QEMU's serial console and VNC sockets, the serial log, and the
 * guest agent's channel.
 */
export const SocketsVolume = {
  launcher: "launcher.sock",
  serial: "virt-serial0",
  vnc: "virt-vnc",
  serialLog: "serial0.log",
  guestAgent: "guest-agent.sock",
  /** The display's last screenshot, as PNG, which the launcher writes when asked and the handler serves. */
  screenshot: "screenshot.png",
} as const;

/**
 * The socket through which the launcher tunnels to a port of its guest,
 * made when the handler first asks for that port (the launcher protocol's portForward).
 */
export const portForwardSocket = (forward: PortForward): string =>
  `portforward-${forward.protocol}-${String(forward.port)}.sock`;

/** The launcher container's name. */
export const LAUNCHER_CONTAINER = "compute";
/**
 * Node's flags for the launcher, a small process that lives as long as its VM and makes little garbage: V8's young
 * generation at 1 MiB a half, not the up to 16 MiB V8 grows it to (10 MiB less resident, measured by
 * services/launcher/test/memory.integration.test.ts).
 */
export const LAUNCHER_NODE_FLAGS: readonly string[] = ["--max-semi-space-size=1"];
/** The container that prints the serial log, so `kubectl logs -c guest-console-log` reads it, as KubeVirt's. */
export const GUEST_CONSOLE_LOG_CONTAINER = "guest-console-log";

/**
 * Whether a VMI's serial console output is kept in the serial log: it has a serial console and does not turn the log
 * off.
 */
export function keepsSerialLog(spec: {
  domain: { devices: { autoattachSerialConsole?: boolean | undefined; logSerialConsole?: boolean | undefined } };
}): boolean {
  return spec.domain.devices.autoattachSerialConsole !== false && spec.domain.devices.logSerialConsole !== false;
}
/**
 * How long after its container started a launcher may take to open its socket (start Node, then libvirtd, which it
 * gives 30 s) before its handler reports it unreachable on the VMI. The VMI is handed to its node as soon as the
 * container runs, as KubeVirt's; the handler waits for the socket meanwhile, watching for it.
 */
export const LAUNCHER_SOCKET_WAIT_SECONDS = 120;
/**
 * What a launcher has past its guest's grace period to clean up after it (KubeVirt's padding of the launcher pod's
 * grace period): the pod's grace period is the guest's plus this, and the launcher gives its own shutdown as long.
 */
export const LAUNCHER_CLEANUP_SECONDS = 15;

/** KubeVirt's default verbosity of a launcher. */
const DEFAULT_LAUNCHER_VERBOSITY = 2;

/** The environment variables the launcher reads; the controller sets each of them on the launcher container. */
export const LauncherEnv = {
  /** The runtime's ops port variable (see @kubevirt-ts/runtime baseEnv). */
  opsPort: "OPS_PORT",
  /** Each folder's, by folder (LauncherFolders). */
  ...FolderEnv,
  /** KubeVirt's useEmulation: "true" lets the guest run with QEMU's emulation where KVM is unusable. */
  allowEmulation: "ALLOW_EMULATION",
  /** How long the guest has to shut down when the pod is asked to stop, in seconds. */
  gracePeriodSeconds: "GRACE_PERIOD_SECONDS",
  /**
   * The runtime's log level (see @kubevirt-ts/runtime baseEnv): from the VMI's logVerbosity label or the KubeVirt CR's
   * virtLauncher.
   */
  logLevel: "LOG_LEVEL",
  /** The guest network of the masquerade (pod-network.ts), which network-setup gave the bridge, as a CIDR. */
  guestNetwork: "GUEST_NETWORK",
} as const;

export interface LauncherSettings {
  allowEmulation: boolean;
  gracePeriodSeconds: number;
  /** KubeVirt's klog verbosity for this launcher (0-9); unset: info. */
  verbosity?: number | undefined;
  /** The guest network of the VMI's pod-network interface (guestNetworkOf). */
  guestNetwork: Ipv4Network;
}

/**
 * KubeVirt's label on a VM's template or a VMI: the verbosity (0-9) of its launcher, over the cluster's virtLauncher.
 */
export const LOG_VERBOSITY_LABEL = "logVerbosity";

/** The launcher's verbosity: the VMI's logVerbosity label when it is a number 0-9, else the cluster's. */
export function launcherVerbosity(
  labels: Readonly<Record<string, string>> | undefined,
  cluster: number | undefined,
): number | undefined {
  const label = labels?.[LOG_VERBOSITY_LABEL];
  return label !== undefined && /^[0-9]$/.test(label) ? Number(label) : cluster;
}

/** The launcher container's environment: the layout above and the VMI's settings. */
export function launcherEnv(settings: LauncherSettings): { name: string; value: string }[] {
  const values: Record<keyof typeof LauncherEnv, string> = {
    opsPort: String(LAUNCHER_OPS_PORT),
    ...(Object.fromEntries(Object.keys(FolderEnv).map((key) => [key, LauncherDir[key as FolderWith<"env">]])) as Record<
      FolderWith<"env">,
      string
    >),
    allowEmulation: String(settings.allowEmulation),
    gracePeriodSeconds: String(settings.gracePeriodSeconds),
    logLevel: logLevelOf(settings.verbosity ?? DEFAULT_LAUNCHER_VERBOSITY),
    guestNetwork: cidrOf(settings.guestNetwork),
  };
  return Object.entries(LauncherEnv).map(([key, name]) => ({ name, value: values[key as keyof typeof LauncherEnv] }));
}
