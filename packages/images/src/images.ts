import { createHash } from "node:crypto";
import { chmod, copyFile, cp, mkdir, mkdtemp, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { REPO_ROOT } from "@kubevirt-ts/control-plane";
import {
  DISK_COPY_NAME,
  DISK_COPY_PATH,
  LAUNCHER_NODE_FLAGS,
  PROBE_CLIENT_NAME,
  PROBE_CLIENT_PATH,
} from "@kubevirt-ts/node-contract";
import { LAUNCHER_UID } from "@kubevirt-ts/kubevirt-api";
import { type ImageConfig, type Layer, contentTag, tarDirectory, writeDockerArchive } from "./archive.ts";
import { env } from "./env.ts";
import { exists, log, run } from "./exec.ts";
import { buildDebianGuestDisk } from "./guest/debian.ts";
import { buildTinyGuest } from "./guest/tiny.ts";
import { buildRootfs } from "./rootfs.ts";
import { componentLabels } from "./version.ts";

// The images of kubevirt-ts, built from a Debian root filesystem, the pinned
// Node (the one running this build) and each component's build output.
// Tags are content digests, so an image is rebuilt and re-imported exactly
// when something in it changed.

export const REGISTRY = "kubevirt-ts.local";

export interface BuiltImage {
  /** The component, e.g. virt-controller. */
  name: string;
  reference: string;
  /** More names the archive carries, e.g. a stable tag beside the content tag. */
  aliases?: string[];
  archive: string;
}

const BASE_PACKAGES = ["ca-certificates"];
/**
 * What the launcher runs besides Node: QEMU, the libvirt daemons (libvirtd and virtlogd: bookworm ships no modular
 * virtqemud), and tools for disks and seed ISOs.
 */
const LAUNCHER_PACKAGES = [
  ...BASE_PACKAGES,
  "qemu-system-x86",
  "qemu-utils",
  // EFI firmware, with and without secure boot, and the descriptors libvirt chooses it by.
  "ovmf",
  // An emulated TPM 2.0 for devices.tpm: libvirt starts swtpm, and swtpm_setup makes its state.
  "swtpm",
  "swtpm-tools",
  "libvirt-daemon",
  "libvirt-daemon-driver-qemu",
  "libvirt-clients",
  "genisoimage",
  // What network-setup, the launcher pod's init container, makes the guest's way onto the pod network with.
  "iproute2",
  "nftables",
  // PID 1 of the launcher container: reaps the orphans QEMU's capability probes leave (see the entrypoint).
  "tini",
];
const LAUNCHER_USER = `${String(LAUNCHER_UID)}:${String(LAUNCHER_UID)}`;
/** The launcher's user needs a name: libvirt's clients look it up. */
const LAUNCHER_USER_HOOK =
  `echo 'kubevirt-ts-qemu:x:${LAUNCHER_USER}:kubevirt-ts ` +
  `launcher:/var/run/kubevirt-ts/launcher:/usr/sbin/nologin' >> "$1/etc/passwd" && ` +
  `echo 'kubevirt-ts-qemu:x:${String(LAUNCHER_UID)}:' >> "$1/etc/group"`;

async function layerOf(
  name: string,
  build: (dir: string) => Promise<void>,
  options: { keepOwners?: boolean } = {},
): Promise<Layer> {
  const dir = await mkdtemp(join(tmpdir(), `kubevirt-ts-layer-${name}-`));
  try {
    await build(dir);
    return await tarDirectory(dir, join(env.KUBEVIRT_TS_CACHE, "layers", `${name}.tar`), options);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** /usr/local/bin/node: the same Node 24 the project runs on. */
function nodeLayer(): Promise<Layer> {
  return layerOf("node", async (dir) => {
    await mkdir(join(dir, "usr/local/bin"), { recursive: true });
    await copyFile(process.execPath, join(dir, "usr/local/bin/node"));
  });
}

/**
 * The image's docker-archive, written only when no archive of the same
 * reference and content is in the cache yet.
 */
async function archiveOnce(
  name: string,
  reference: string,
  layers: Layer[],
  config: ImageConfig,
  aliases: string[] = [],
): Promise<BuiltImage> {
  const key = createHash("sha256")
    .update([reference, ...aliases].join(" "))
    .update(contentTag(layers, config))
    .digest("hex")
    .slice(0, 16);
  const archive = join(env.KUBEVIRT_TS_CACHE, "images", `${name}-${key}.tar`);
  if (!(await exists(archive))) {
    log(`writing ${reference}`);
    await writeDockerArchive(archive, [reference, ...aliases], layers, config);
  }
  return { name, reference, archive, ...(aliases.length > 0 ? { aliases } : {}) };
}

/** An image tagged by its content: the tag changes exactly when a layer or the configuration does. */
function save(name: string, layers: Layer[], config: ImageConfig): Promise<BuiltImage> {
  return archiveOnce(name, `${REGISTRY}/${name}:${contentTag(layers, config)}`, layers, config);
}

/** Compiles one of tools/*.c into a static binary at `target`, which runs in any image. */
async function compileStatic(source: string, target: string): Promise<void> {
  await mkdir(dirname(target), { recursive: true });
  await run("gcc", ["-static", "-Os", "-s", "-o", target, join(REPO_ROOT, "packages/images/tools", source)]);
  await chmod(target, 0o755);
}

/** The pod sandbox image, under the name containerd's configuration gives it. */
export async function buildPauseImage(reference: string): Promise<BuiltImage> {
  const layer = await layerOf("pause", (dir) => compileStatic("pause.c", join(dir, "pause")));
  return archiveOnce("pause", reference, [layer], { entrypoint: ["/pause"], user: "65535:65535" });
}

interface NodeComponent {
  name: string;
  /** The component's workspace folder. */
  workspace: string;
  /** What of the build output goes to /app, and how it starts. */
  files: { from: string; to: string }[];
  entrypoint: string[];
  launcherBase?: boolean;
  user?: string;
  env?: string[];
}

const SERVICE_USER = "65532:65532";
/** The containerDisk copier (buildTools), in the images whose pods copy disks out of other images. */
const DISK_COPY_BUILT = join(REPO_ROOT, "packages/images/build", DISK_COPY_NAME);
const diskCopyFile = { from: `../../packages/images/build/${DISK_COPY_NAME}`, to: DISK_COPY_PATH.slice(1) };
/** The probe client (buildTools), in the launcher's image. */
const PROBE_CLIENT_BUILT = join(REPO_ROOT, "packages/images/build", PROBE_CLIENT_NAME);
const probeClientFile = {
  from: `../../packages/images/build/${PROBE_CLIENT_NAME}`,
  to: PROBE_CLIENT_PATH.slice(1),
};

export const COMPONENTS: NodeComponent[] = [
  {
    name: "virt-controller",
    workspace: "services/controller",
    files: [{ from: "dist", to: "app" }],
    entrypoint: ["node", "/app/main.js"],
    user: SERVICE_USER,
  },
  // With the chart's CRDs, which the chart's CRD hook applies from this image (ADR 32).
  {
    name: "virt-api",
    workspace: "apps/api",
    files: [
      { from: "dist", to: "app" },
      { from: "../../charts/kubevirt-ts/crds", to: "app/crds" },
    ],
    entrypoint: ["node", "/app/main.js"],
    user: SERVICE_USER,
  },
  // The handler runs privileged as root: it reaches into launcher pods' sockets on the node.
  {
    name: "virt-handler",
    workspace: "services/handler",
    files: [{ from: "dist", to: "app" }],
    entrypoint: ["node", "/app/main.js"],
    user: "0:0",
  },
  // As KubeVirt's launcher, it runs as the qemu user.
  {
    name: "virt-launcher",
    workspace: "services/launcher",
    files: [
      { from: "dist", to: "app" },
      diskCopyFile,
      probeClientFile,
      // The libvirt addon, compiled against Debian bookworm's libvirt like the image's, and what it loads.
      ...["@unraid/libvirt", "xml2js", "sax", "xmlbuilder"].map((pkg) => ({
        from: `../../node_modules/${pkg}`,
        to: `app/node_modules/${pkg}`,
      })),
    ],
    // Node as PID 1 never reaps orphans: libvirt's QEMU capability probes, re-parented to it, stay
    // zombies, and libvirt waits on each until it gives up (about 20 s apiece) before a domain starts.
    // tini reaps them (KubeVirt's virt-launcher-monitor does the same) and passes signals to Node alone,
    // so SIGTERM still means an ACPI shutdown, not a signal to QEMU.
    entrypoint: ["/usr/bin/tini", "--", "node", ...LAUNCHER_NODE_FLAGS, "/app/main.js"],
    launcherBase: true,
    user: LAUNCHER_USER,
  },
  // CDI's importer role: qemu-img from the launcher's base, and the containerDisk copier for registry sources.
  {
    name: "importer",
    workspace: "services/importer",
    files: [{ from: "dist", to: "app" }, diskCopyFile],
    entrypoint: ["node", "/app/main.js"],
    launcherBase: true,
    user: LAUNCHER_USER,
  },
  {
    name: "web",
    workspace: "apps/web",
    files: [
      { from: ".next/standalone", to: "app" },
      { from: "gateway", to: "app/apps/web/gateway" },
    ],
    // The gateway in front of Next.js: one origin for the dashboard and the API.
    entrypoint: ["node", "/app/apps/web/gateway/main.ts"],
    user: SERVICE_USER,
    env: ["NODE_ENV=production", "HOSTNAME=0.0.0.0", "PORT=3000"],
  },
];

/** Tools the images carry besides their component: the containerDisk copier and the launcher's probe client. */
export async function buildTools(): Promise<void> {
  await compileStatic("disk-copy.c", DISK_COPY_BUILT);
  await buildProbeClient();
}

/** The launcher's probe client, compiled where the launcher's image takes it from; its path. */
export async function buildProbeClient(): Promise<string> {
  await compileStatic("probe.c", PROBE_CLIENT_BUILT);
  return PROBE_CLIENT_BUILT;
}

export async function buildComponentImage(component: NodeComponent, base: Layer, node: Layer): Promise<BuiltImage> {
  const app = await layerOf(component.name, async (dir) => {
    for (const { from, to } of component.files) {
      const source = join(REPO_ROOT, component.workspace, from);
      await stat(source).catch(() => {
        throw new Error(`${source} is missing: build ${component.workspace} first (npm run build)`);
      });
      await cp(source, join(dir, to), { recursive: true, dereference: true });
    }
  });
  return save(component.name, [base, node, app], {
    entrypoint: component.entrypoint,
    user: component.user,
    workingDir: "/app",
    env: [...(component.env ?? []), "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"],
    labels: componentLabels(component.name),
  });
}

/**
 * A KubeVirt containerDisk image: one layer holding the disk under /disk/,
 * readable by the launcher's user, as KubeVirt's containerdisks are.
 */
export async function buildContainerDiskImage(
  reference: string,
  writeDisk: (path: string) => Promise<void>,
  fileName = "disk.img",
  aliases: string[] = [],
): Promise<BuiltImage> {
  const name =
    reference
      .split("/")
      .pop()
      ?.replace(/[:@].*$/, "") ?? "containerdisk";
  const layer = await layerOf(
    `containerdisk-${name}`,
    async (dir) => {
      await mkdir(join(dir, "disk"));
      await writeDisk(join(dir, "disk", fileName));
      await run("chown", ["-R", LAUNCHER_USER, join(dir, "disk")]);
      await chmod(join(dir, "disk", fileName), 0o440);
    },
    { keepOwners: true },
  );
  return archiveOnce(name, reference, [layer], {}, aliases);
}

/** The Debian guest's stable name, for manifests people write by hand (examples/vm-debian.yaml). */
export const DEBIAN_GUEST_IMAGE = `${REGISTRY}/debian-guest:12`;

/** The Debian guest (systemd, cloud-init, a serial getty) as a containerDisk, tagged by its disk's content. */
export async function buildDebianGuestImage(): Promise<BuiltImage> {
  const disk = await buildDebianGuestDisk();
  const tag =
    disk
      .split("/")
      .pop()
      ?.replace(/^debian-|\.qcow2$/g, "") ?? "latest";
  return buildContainerDiskImage(`${REGISTRY}/debian-guest:${tag}`, (path) => copyFile(disk, path), "disk.qcow2", [
    DEBIAN_GUEST_IMAGE,
  ]);
}

/**
 * The tiny guest as a kernel boot image (/boot/vmlinuz, /boot/initrd.gz, readable
 * by the launcher's user), tagged by its content.
 */
export async function buildTinyGuestImage(): Promise<BuiltImage> {
  const guest = await buildTinyGuest();
  const layer = await layerOf(
    "tiny-guest",
    async (dir) => {
      await mkdir(join(dir, "boot"));
      await copyFile(guest.kernel, join(dir, "boot", "vmlinuz"));
      await copyFile(guest.initrd, join(dir, "boot", "initrd.gz"));
      await run("chown", ["-R", LAUNCHER_USER, join(dir, "boot")]);
      for (const file of ["vmlinuz", "initrd.gz"]) await chmod(join(dir, "boot", file), 0o440);
    },
    { keepOwners: true },
  );
  return save("tiny-guest", [layer], {});
}

/** A blank 1 MiB raw disk as a containerDisk: for tests of everything up to booting a guest. */
export const BLANK_DISK_IMAGE = `${REGISTRY}/blank-disk:1`;

export function buildBlankDiskImage(): Promise<BuiltImage> {
  return buildContainerDiskImage(BLANK_DISK_IMAGE, (path) => writeFile(path, Buffer.alloc(2 ** 20)));
}

/**
 * The local cluster's storage helper: the base root filesystem alone (a shell, mkdir and rm), which
 * local-path-provisioner runs to make and remove a claim's folder on the node.
 */
export async function buildLocalPathHelperImage(): Promise<BuiltImage> {
  const base = await buildRootfs({ name: "base", packages: BASE_PACKAGES });
  return save("local-path-helper", [base], { entrypoint: ["/bin/sh"] });
}

/** Builds the images of the given components (all when none are named). */
export async function buildImages(names: string[] = []): Promise<BuiltImage[]> {
  const wanted = names.length === 0 ? COMPONENTS : COMPONENTS.filter((c) => names.includes(c.name));
  await buildTools();
  const [base, launcherBase, node] = await Promise.all([
    buildRootfs({ name: "base", packages: BASE_PACKAGES }),
    wanted.some((c) => c.launcherBase)
      ? buildRootfs({ name: "launcher", packages: LAUNCHER_PACKAGES, hooks: [LAUNCHER_USER_HOOK] })
      : undefined,
    nodeLayer(),
  ]);
  const images: BuiltImage[] = [];
  for (const component of wanted) {
    images.push(
      await buildComponentImage(component, component.launcherBase && launcherBase ? launcherBase : base, node),
    );
  }
  return images;
}
