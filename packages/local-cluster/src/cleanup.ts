import { readFile, readdir, rm, rmdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import {
  BROWSER_LINK,
  BROWSER_NETNS,
  KUBELET_DIR,
  NODE_BRIDGE,
  NODE_NAME,
  POD_BRIDGE,
  RUN_DIR,
  STATE_DIR,
} from "./config.ts";
import { log, run, tryRun } from "./exec.ts";
import { processesMatching } from "./proc.ts";

// Removing every trace of the local cluster, also what a killed run left:
// processes, pod cgroups, mounts, network namespaces, links, iptables chains
// and state. cluster-up runs this first; cluster-down runs only this.

const OWN_PATHS = [STATE_DIR, RUN_DIR];
const CGROUP_ROOT = "/sys/fs/cgroup";
const LOG_PATHS = ["/var/log/pods", "/var/log/containers"];

async function pidsMatching(predicate: (cmdline: string) => boolean): Promise<number[]> {
  return (await processesMatching((argv) => predicate(argv.join(" ")))).map((p) => p.pid);
}

/** Every process of the cluster names one of its state folders in its arguments. */
function clusterProcesses(): Promise<number[]> {
  return pidsMatching((cmdline) => OWN_PATHS.some((p) => cmdline.includes(p)));
}

/**
 * The cgroups of the cluster's pods: the first node's kubepods, and each further node's cgroup root (config.ts's
 * clusterNode).
 */
async function cgroupDirs(): Promise<string[]> {
  const dirs: string[] = [];
  for (const controller of await readdir(CGROUP_ROOT).catch(() => [])) {
    const hierarchy = join(CGROUP_ROOT, controller);
    const roots = [
      "kubepods",
      ...(await readdir(hierarchy).catch(() => [])).filter((name) => name.startsWith(`${NODE_NAME}-`)),
    ];
    for (const root of roots)
      if ((await readdir(join(hierarchy, root)).catch(() => undefined)) !== undefined) dirs.push(join(hierarchy, root));
  }
  return dirs;
}

/** Directories of a tree, deepest first. */
async function treeDeepestFirst(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
  const children = await Promise.all(
    entries.filter((e) => e.isDirectory()).map((e) => treeDeepestFirst(join(dir, e.name))),
  );
  return [...children.flat(), dir];
}

/** The processes of pods, which sit in the kubepods cgroups whatever happened to their shims. */
async function podProcesses(): Promise<number[]> {
  const pids = new Set<number>();
  for (const root of await cgroupDirs()) {
    for (const dir of await treeDeepestFirst(root)) {
      const procs = await readFile(join(dir, "cgroup.procs"), "utf8").catch(() => "");
      for (const line of procs.split("\n")) if (line) pids.add(Number(line));
    }
  }
  return [...pids];
}

function signal(pids: number[], sig: NodeJS.Signals): void {
  for (const pid of pids) {
    try {
      process.kill(pid, sig);
    } catch {
      // Already gone.
    }
  }
}

async function stopProcesses(): Promise<void> {
  const initial = [...(await clusterProcesses()), ...(await podProcesses())];
  if (initial.length > 0) {
    log(`stopping ${initial.length} processes`);
    signal(initial, "SIGTERM");
    for (let i = 0; i < 50; i++) {
      await sleep(200);
      if ((await clusterProcesses()).length === 0 && (await podProcesses()).length === 0) break;
    }
    // Whatever is left, including anything restarted meanwhile.
    for (let i = 0; i < 20; i++) {
      const left = [...(await clusterProcesses()), ...(await podProcesses())];
      if (left.length === 0) break;
      signal(left, "SIGKILL");
      await sleep(200);
    }
  }
  // The pods' cgroups even when their processes were gone already (a cluster whose processes a reboot or kill took).
  for (const root of await cgroupDirs()) {
    for (const dir of await treeDeepestFirst(root)) await rmdir(dir).catch(() => undefined);
  }
}

async function unmountAll(): Promise<void> {
  const mountinfo = await readFile("/proc/self/mountinfo", "utf8");
  const prefixes = [KUBELET_DIR, STATE_DIR, RUN_DIR, "/run/netns/cni-", "/var/run/netns/cni-"];
  const points = mountinfo
    .split("\n")
    .map((line) => line.split(" ")[4] ?? "")
    .map((p) => p.replace(/\\040/g, " "))
    .filter((p) =>
      prefixes.some((prefix) => p === prefix || p.startsWith(prefix.endsWith("-") ? prefix : `${prefix}/`)),
    );
  // Deepest first, so that nothing is busy because of a mount inside it.
  const unique = [...new Set(points)].sort((a, b) => b.length - a.length);
  if (unique.length > 0) log(`unmounting ${unique.length} mounts`);
  for (const point of unique) {
    if ((await tryRun("umount", [point])) === undefined) await tryRun("umount", ["-l", point]);
  }
}

async function deleteNetworkNamespaces(): Promise<void> {
  const names = (await readdir("/run/netns").catch(() => [])).filter(isClusterNetns);
  for (const name of names) {
    await tryRun("ip", ["netns", "delete", name]);
    await rm(join("/run/netns", name), { force: true });
  }
}

/**
 * A further node's network namespace, and the machine's end of its link, are named kvts-node<n> (config.ts's
 * clusterNode).
 */
const isNodeNamespace = (name: string) => /^kvts-node\d+$/.test(name);

function isClusterNetns(name: string): boolean {
  return name.startsWith("cni-") || name === BROWSER_NETNS || isNodeNamespace(name);
}

function isClusterLink(link: { ifname: string; master?: string }): boolean {
  return (
    [POD_BRIDGE, NODE_BRIDGE, BROWSER_LINK].includes(link.ifname) ||
    link.master === POD_BRIDGE ||
    isNodeNamespace(link.ifname)
  );
}

async function deleteLinks(): Promise<void> {
  const links = JSON.parse((await tryRun("ip", ["-j", "link", "show"])) ?? "[]") as {
    ifname: string;
    master?: string;
  }[];
  for (const link of links) {
    if (link.master === POD_BRIDGE || link.ifname === BROWSER_LINK || isNodeNamespace(link.ifname))
      await tryRun("ip", ["link", "delete", link.ifname]);
  }
  for (const bridge of [POD_BRIDGE, NODE_BRIDGE]) {
    if (links.some((l) => l.ifname === bridge)) await tryRun("ip", ["link", "delete", bridge]);
  }
}

/** Drops the chains kube-proxy, the kubelet and the CNI plugins made, and every rule that jumps to them. */
export function withoutClusterRules(dump: string): string {
  const ours = /(^|\s|:)(KUBE-|CNI-)/;
  return dump
    .split("\n")
    .filter((line) => !ours.test(line))
    .join("\n");
}

async function deleteIptablesChains(): Promise<void> {
  for (const [save, restore] of [
    ["iptables-save", "iptables-restore"],
    ["ip6tables-save", "ip6tables-restore"],
  ] as const) {
    const dump = await tryRun(save, []);
    if (dump === undefined) continue;
    const cleaned = withoutClusterRules(dump);
    if (cleaned !== dump) await run(restore, [], cleaned);
  }
}

const HOST_SETTINGS = join(STATE_DIR, "host-settings.json");

/**
 * Writes kernel settings the cluster needs (e.g. IP forwarding), remembering
 * the values found so that cleanup restores them.
 */
export async function applyHostSettings(settings: Record<string, string>): Promise<void> {
  const before: Record<string, string> = {};
  for (const path of Object.keys(settings)) before[path] = (await readFile(path, "utf8")).trim();
  await writeFile(HOST_SETTINGS, JSON.stringify(before));
  for (const [path, value] of Object.entries(settings)) await writeFile(path, `${value}\n`);
}

async function restoreHostSettings(): Promise<void> {
  const saved = await readFile(HOST_SETTINGS, "utf8").catch(() => undefined);
  if (saved === undefined) return;
  for (const [path, value] of Object.entries(JSON.parse(saved) as Record<string, string>))
    await writeFile(path, `${value}\n`);
}

/**
 * The loop devices backed by files under the folder: the kubelet's block-volume maps, or the block storage's volumes.
 */
async function loopDevicesUnder(dir: string): Promise<string[]> {
  const listed = (await tryRun("losetup", ["--json", "--list"])) ?? "";
  const { loopdevices = [] } = (listed.trim() ? JSON.parse(listed) : {}) as {
    loopdevices?: { name: string; "back-file"?: string | null }[];
  };
  return loopdevices.filter((d) => (d["back-file"] ?? "").startsWith(`${dir}/`)).map((d) => d.name);
}

async function detachLoopDevices(): Promise<void> {
  // The kubelet's maps first: they hold the block storage's devices open.
  for (const dir of [KUBELET_DIR, STATE_DIR])
    for (const device of await loopDevicesUnder(dir)) await tryRun("losetup", ["--detach", device]);
}

export async function cleanUp(): Promise<void> {
  await stopProcesses();
  await unmountAll();
  await detachLoopDevices();
  await deleteNetworkNamespaces();
  await deleteLinks();
  await deleteIptablesChains();
  await restoreHostSettings();
  for (const dir of [STATE_DIR, RUN_DIR, KUBELET_DIR, ...LOG_PATHS]) await rm(dir, { recursive: true, force: true });
}

/** What is left of the cluster on this machine; empty after cleanUp. */
export async function leftovers(): Promise<string[]> {
  const found: string[] = [];
  const processes = [...(await clusterProcesses()), ...(await podProcesses())];
  if (processes.length > 0) found.push(`processes ${processes.join(", ")}`);
  const mountinfo = await readFile("/proc/self/mountinfo", "utf8");
  for (const line of mountinfo.split("\n")) {
    const point = line.split(" ")[4] ?? "";
    if ([KUBELET_DIR, STATE_DIR, RUN_DIR].some((p) => point.startsWith(p)) || point.includes("/netns/cni-"))
      found.push(`mount ${point}`);
  }
  for (const name of await readdir("/run/netns").catch(() => [])) if (isClusterNetns(name)) found.push(`netns ${name}`);
  for (const dir of [KUBELET_DIR, STATE_DIR])
    for (const device of await loopDevicesUnder(dir)) found.push(`loop device ${device}`);
  const links = JSON.parse((await tryRun("ip", ["-j", "link", "show"])) ?? "[]") as {
    ifname: string;
    master?: string;
  }[];
  for (const link of links) if (isClusterLink(link)) found.push(`link ${link.ifname}`);
  for (const save of ["iptables-save", "ip6tables-save"]) {
    const dump = (await tryRun(save, [])) ?? "";
    for (const line of dump.split("\n"))
      if (line.startsWith(":KUBE-") || line.startsWith(":CNI-"))
        found.push(`${save.replace("-save", "")} chain ${line.slice(1).split(" ")[0] ?? ""}`);
  }
  for (const root of await cgroupDirs()) found.push(`cgroup ${root}`);
  return found;
}
