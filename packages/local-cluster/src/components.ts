import { spawn } from "node:child_process";
import { closeSync, openSync } from "node:fs";
import { readFile, readdir, readlink } from "node:fs/promises";
import { basename } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { CONTAINERD_SOCKET, NODES_DIR, NODES_RUN_DIR, RUN_DIR, STATE_DIR, readClusterNodes } from "./config.ts";
import { run, tryRun } from "./exec.ts";
import { processesMatching } from "./proc.ts";

// Killing the cluster's parts outright, for the chaos suite: a host process
// (etcd, kube-apiserver, containerd, kubelet) is killed with SIGKILL and
// started again exactly as it ran (its arguments, environment, working
// folder and log file, all read from /proc), as a supervisor would; a
// container is killed through containerd, and the kubelet restarts it.

export const HOST_COMPONENTS = ["etcd", "kube-apiserver", "containerd", "kubelet"] as const;
export type HostComponent = (typeof HOST_COMPONENTS)[number];

interface HostProcess {
  pid: number;
  argv: string[];
  env: NodeJS.ProcessEnv;
  cwd: string;
  logFile: string;
}

/**
 * The running process of a host component of the first node: its binary's name, and one of the cluster's state folders,
 * not a further node's, in its arguments.
 */
async function hostProcess(component: HostComponent): Promise<HostProcess> {
  const ofCluster = (a: string) => a.includes(STATE_DIR) || a.includes(RUN_DIR);
  const ofFurtherNode = (a: string) => a.includes(NODES_DIR) || a.includes(NODES_RUN_DIR);
  const [found] = await processesMatching(
    (argv) => basename(argv[0] ?? "") === component && argv.some(ofCluster) && !argv.some(ofFurtherNode),
  );
  if (!found)
    throw new Error(`no ${component} process of the local cluster runs; is the cluster up (make cluster-up)?`);
  const { pid, argv } = found;
  const environ = await readFile(`/proc/${String(pid)}/environ`, "utf8");
  const env = Object.fromEntries(
    environ
      .split("\0")
      .filter((e) => e.includes("="))
      .map((e) => [e.slice(0, e.indexOf("=")), e.slice(e.indexOf("=") + 1)]),
  );
  return {
    pid,
    argv,
    env,
    cwd: await readlink(`/proc/${String(pid)}/cwd`),
    logFile: await readlink(`/proc/${String(pid)}/fd/1`),
  };
}

/** A process's state letter and parent from /proc/<pid>/stat (the command may hold spaces and parentheses). */
async function procStat(pid: string): Promise<{ command: string; state: string; ppid: string } | undefined> {
  const stat = await readFile(`/proc/${pid}/stat`, "utf8").catch(() => undefined);
  if (stat === undefined) return undefined;
  const close = stat.lastIndexOf(")");
  const [state = "", ppid = ""] = stat.slice(close + 2).split(" ");
  return { command: stat.slice(stat.indexOf("(") + 1, close), state, ppid };
}

async function gone(pid: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    // A zombie is gone for this purpose: it holds no port, socket or lock any more.
    const stat = await procStat(String(pid));
    if (stat === undefined || stat.state === "Z") return;
    if (Date.now() > deadline)
      throw new Error(`process ${String(pid)} still runs ${String(timeoutMs / 1000)} s after SIGKILL`);
    await sleep(50);
  }
}

/** Kills a host component with SIGKILL and starts it again as it ran; resolves with the new PID. */
export async function killAndRestartHostComponent(component: HostComponent, downMs = 0): Promise<number> {
  const before = await hostProcess(component);
  process.kill(before.pid, "SIGKILL");
  await gone(before.pid, 10_000);
  if (downMs > 0) await sleep(downMs);
  const [command = "", ...args] = before.argv;
  const fd = openSync(before.logFile, "a");
  try {
    const child = spawn(command, args, { cwd: before.cwd, env: before.env, stdio: ["ignore", fd, fd], detached: true });
    if (child.pid === undefined) throw new Error(`could not start ${component} again (${command})`);
    child.unref();
    return child.pid;
  } finally {
    closeSync(fd);
  }
}

/**
 * Whether a host component serves again: containerd answers on its socket, the kubelet's healthz says ok; etcd and
 * kube-apiserver are judged through the API.
 */
export async function hostComponentServes(component: "containerd" | "kubelet"): Promise<boolean> {
  if (component === "containerd")
    return (await tryRun("ctr", ["--address", CONTAINERD_SOCKET, "version"])) !== undefined;
  const answer = await fetch("http://127.0.0.1:10248/healthz").then(
    (r) => r.text(),
    () => "",
  );
  return answer === "ok";
}

/**
 * Kills a container's main process with SIGKILL through the containerd of the node that runs it (whichever of the
 * cluster's nodes has it); the kubelet restarts it by the pod's restart policy.
 */
export async function killContainer(containerId: string): Promise<void> {
  const id = containerId.replace(/^containerd:\/\//, "");
  const refusals: string[] = [];
  for (const node of await readClusterNodes()) {
    try {
      await run("ctr", [
        "--address",
        node.containerdSocket,
        "--namespace",
        "k8s.io",
        "task",
        "kill",
        "--signal",
        "SIGKILL",
        id,
      ]);
      return;
    } catch (error) {
      refusals.push(`${node.name}: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
  throw new Error(`no node's containerd could kill container ${id}:\n${refusals.join("\n")}`);
}

/** The pod UIDs of the QEMU processes on this node, from their cgroups: which domains really run, and in which pod. */
export async function qemuPodUids(): Promise<string[]> {
  const uids: string[] = [];
  for (const { pid } of await processesMatching((argv) => basename(argv[0] ?? "").startsWith("qemu-system-"))) {
    const cgroup = await readFile(`/proc/${String(pid)}/cgroup`, "utf8").catch(() => "");
    const uid = /pod([0-9a-f]{8}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{12})/.exec(cgroup)?.[1];
    if (uid) uids.push(uid.replaceAll("_", "-"));
  }
  return uids;
}

/** Processes on this node that have exited but were never reaped, with their parent's command. */
export async function zombies(): Promise<{ pid: number; command: string; parent: string }[]> {
  const found: { pid: number; command: string; parent: string }[] = [];
  for (const entry of await readdir("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = await procStat(entry);
    if (stat?.state !== "Z") continue;
    const parent = (await readFile(`/proc/${stat.ppid}/cmdline`, "utf8").catch(() => "")).replaceAll("\0", " ").trim();
    found.push({ pid: Number(entry), command: stat.command, parent });
  }
  return found;
}
