import { readFile, readdir } from "node:fs/promises";
import { setTimeout as sleep } from "node:timers/promises";
import { parseQuantity } from "@kubevirt-ts/kubevirt-api";

// What the benchmark reads of this machine's kernel: the CPU time of the
// whole machine (/proc/stat) and of each process and thread
// (/proc/<pid>/stat, /proc/<pid>/task/<tid>/stat), the processes of a pod (by
// the pod uid in their cgroup) and a process's resident memory by mapping
// (/proc/<pid>/smaps). The local cluster's nodes are namespaces of this
// machine (docs/local-cluster.md), so this machine is the node(s). Parsers are
// pure and unit-tested (proc.test.ts); the readers are thin.

/** USER_HZ: the unit of /proc's CPU times (`getconf CLK_TCK`, 100 on Linux everywhere but a few old ports). */
export const CLOCK_TICKS = 100;

/**
 * CPU ticks the whole machine spent busy: the first "cpu" line's user, nice, system, irq, softirq and steal (guest
 * time is in user).
 */
export function machineBusyTicks(procStat: string): number {
  const line = procStat.split("\n").find((l) => l.startsWith("cpu "));
  if (!line) throw new Error('/proc/stat has no "cpu" line');
  const fields = line.trim().split(/\s+/).slice(1).map(Number);
  const [user = 0, nice = 0, system = 0, , , irq = 0, softirq = 0, steal = 0] = fields;
  return user + nice + system + irq + softirq + steal;
}

/**
 * A process's or thread's name and CPU ticks (utime + stime) from its stat line, and those of its children it has
 * waited for (cutime + cstime); the name may hold spaces and ( ).
 */
export function taskTicks(stat: string): { comm: string; ticks: number; children: number } {
  const open = stat.indexOf("(");
  const close = stat.lastIndexOf(")");
  if (open < 0 || close < open) throw new Error(`not a /proc stat line: ${stat.slice(0, 80)}`);
  // After the name: field 3 (state) onwards; utime, stime, cutime and cstime are fields 14 to 17.
  const fields = stat
    .slice(close + 2)
    .trim()
    .split(/\s+/)
    .map(Number);
  const [utime = 0, stime = 0, cutime = 0, cstime = 0] = fields.slice(11, 15);
  return { comm: stat.slice(open + 1, close), ticks: utime + stime, children: cutime + cstime };
}

/** QEMU's vCPU threads are named "CPU <n>/TCG" under emulation and "CPU <n>/KVM" with KVM. */
export const isVcpuThread = (comm: string) => /^CPU \d+\/(TCG|KVM)$/.test(comm);

/** CPU ticks from one sample to the next, by key; a key that is new counts from zero, one that is gone nothing. */
export function ticksBetween(before: ReadonlyMap<number, number>, after: ReadonlyMap<number, number>): number {
  let sum = 0;
  for (const [key, ticks] of after) sum += Math.max(0, ticks - (before.get(key) ?? 0));
  return sum;
}

export interface Residency {
  /** The sum of every mapping's Rss. */
  rss: number;
  /** The mappings exactly the guest's size: its RAM (QEMU only). */
  guest: number;
  /** The writable and executable private mappings: QEMU's translation cache, cut into regions by guard pages. */
  tbCache: number;
}

/** A process's resident bytes from its smaps, with the guest's RAM and QEMU's translation cache apart. */
export function residency(smaps: string, guestBytes: number): Residency {
  const r: Residency = { rss: 0, guest: 0, tbCache: 0 };
  let size = 0;
  let executable = false;
  for (const line of smaps.split("\n")) {
    const mapping = /^[0-9a-f]+-[0-9a-f]+ (\S+) /.exec(line);
    if (mapping) executable = mapping[1] === "rwxp";
    const field = /^(Size|Rss):\s+(\d+) kB$/.exec(line);
    if (!field) continue;
    const bytes = Number(field[2]) * 1024;
    if (field[1] === "Size") {
      size = bytes;
      continue;
    }
    r.rss += bytes;
    // The guest's RAM is never executable; the cache may be as large as the guest.
    if (executable) r.tbCache += bytes;
    else if (size === guestBytes) r.guest += bytes;
  }
  return r;
}

interface ContainerResources {
  restartPolicy?: string;
  resources?: { requests?: Record<string, string | number> };
}

/**
 * A pod's requests of one resource as the scheduler counts them: the larger of its containers' sum (with its sidecars,
 * the init containers that keep running) and, for each regular init container, its own request plus the sidecars
 * started before it.
 */
export function podRequest(
  spec: { initContainers?: ContainerResources[]; containers: ContainerResources[] },
  resource: "cpu" | "memory",
): number {
  const of = (c: ContainerResources) => parseQuantity(c.resources?.requests?.[resource] ?? 0) ?? 0;
  let sidecars = 0;
  let initPeak = 0;
  for (const c of spec.initContainers ?? []) {
    if (c.restartPolicy === "Always") sidecars += of(c);
    else initPeak = Math.max(initPeak, sidecars + of(c));
  }
  return Math.max(initPeak, sidecars + spec.containers.reduce((s, c) => s + of(c), 0));
}

// Readers.

/** CPU-seconds this machine has spent busy since it booted. */
export const machineBusySeconds = async () => machineBusyTicks(await readFile("/proc/stat", "utf8")) / CLOCK_TICKS;

/** The machine's busy CPU-seconds per second over `seconds` of waiting: what it spends while nothing is started. */
export async function machineRestRate(seconds: number): Promise<number> {
  const before = await machineBusySeconds();
  const t0 = performance.now();
  await sleep(seconds * 1000);
  return ((await machineBusySeconds()) - before) / ((performance.now() - t0) / 1000);
}

const numeric = async (dir: string) =>
  (await readdir(dir).catch(() => [] as string[])).filter((e) => /^\d+$/.test(e)).map(Number);

/** The processes on this machine whose cgroup names one of the pods (by uid), by uid. */
export async function podProcesses(uids: readonly string[]): Promise<Map<string, number[]>> {
  const patterns = uids.map((uid) => [uid, new RegExp(`pod${uid.replaceAll("-", "[-_]")}`)] as const);
  const found = new Map<string, number[]>(uids.map((uid) => [uid, []]));
  for (const pid of await numeric("/proc")) {
    const cgroup = await readFile(`/proc/${String(pid)}/cgroup`, "utf8").catch(() => "");
    const match = patterns.find(([, pattern]) => pattern.test(cgroup));
    if (match) found.get(match[0])?.push(pid);
  }
  return found;
}

export interface ProcessCpu {
  pid: number;
  comm: string;
  ticks: number;
  /** Each thread's ticks, by thread id, and their names. */
  threads: Map<number, { comm: string; ticks: number }>;
}

/** A process's CPU ticks (its dead threads' included) and each live thread's; undefined when it is gone. */
export async function processCpu(pid: number): Promise<ProcessCpu | undefined> {
  const stat = await readFile(`/proc/${String(pid)}/stat`, "utf8").catch(() => undefined);
  if (stat === undefined) return undefined;
  const { comm, ticks } = taskTicks(stat);
  const threads = new Map<number, { comm: string; ticks: number }>();
  for (const tid of await numeric(`/proc/${String(pid)}/task`)) {
    const text = await readFile(`/proc/${String(pid)}/task/${String(tid)}/stat`, "utf8").catch(() => undefined);
    if (text === undefined) continue;
    const thread = taskTicks(text);
    threads.set(tid, { comm: thread.comm, ticks: thread.ticks });
  }
  return { pid, comm, ticks, threads };
}

export async function processResidency(pid: number, guestBytes: number): Promise<{ comm: string } & Residency> {
  const comm = (await readFile(`/proc/${String(pid)}/comm`, "utf8").catch(() => "?")).trim();
  return { comm, ...residency(await readFile(`/proc/${String(pid)}/smaps`, "utf8").catch(() => ""), guestBytes) };
}

export interface CpuSplit {
  /** Ticks of the handler pods' processes. */
  handler: number;
  /** QEMU's vCPU threads: the guests' own CPU. */
  vcpu: number;
  /** QEMU's other threads (main loop, I/O, RCU). */
  qemu: number;
  /** The launcher pods' other processes, by command. */
  launcher: Map<string, number>;
}

type Sampled = ReadonlyMap<number, { uid: string; cpu: ProcessCpu }>;

/**
 * Where the CPU went from one sample of pods' processes to the next: the handler pods' (by uid) apart, QEMU's vCPU
 * threads apart from its other threads, the launchers' other processes by command. A process that started meanwhile
 * counts from zero; one that ended counts nothing.
 */
export function splitCpu(before: Sampled, after: Sampled, handlerUids: ReadonlySet<string>): CpuSplit {
  const split: CpuSplit = { handler: 0, vcpu: 0, qemu: 0, launcher: new Map() };
  for (const [pid, { uid, cpu }] of after) {
    const was = before.get(pid)?.cpu;
    const ticks = Math.max(0, cpu.ticks - (was?.ticks ?? 0));
    if (handlerUids.has(uid)) split.handler += ticks;
    else if (cpu.comm.startsWith("qemu")) {
      const vcpus = (sample: ProcessCpu | undefined) =>
        new Map([...(sample?.threads ?? [])].filter(([, t]) => isVcpuThread(t.comm)).map(([tid, t]) => [tid, t.ticks]));
      const vcpu = Math.min(ticks, ticksBetween(vcpus(was), vcpus(cpu)));
      split.vcpu += vcpu;
      split.qemu += ticks - vcpu;
    } else split.launcher.set(cpu.comm, (split.launcher.get(cpu.comm) ?? 0) + ticks);
  }
  return split;
}

/** The translation cache's size QEMU was given (`-accel tcg,tb-size=<MiB>`), in bytes; undefined when not given. */
export function tbSizeBytes(cmdline: string): number | undefined {
  const mib = /(?:^|[,\0\s])tb-size=(\d+)/.exec(cmdline)?.[1];
  return mib === undefined ? undefined : Number(mib) * 2 ** 20;
}

/** Every process of the pods (by uid) with its CPU. */
export async function samplePods(uids: readonly string[]): Promise<Map<number, { uid: string; cpu: ProcessCpu }>> {
  const sampled = new Map<number, { uid: string; cpu: ProcessCpu }>();
  for (const [uid, pids] of await podProcesses(uids)) {
    for (const pid of pids) {
      const cpu = await processCpu(pid);
      if (cpu) sampled.set(pid, { uid, cpu });
    }
  }
  return sampled;
}

/** The local cluster's own daemons on this machine, by command (as /proc shows it: 15 characters at most). */
const CLUSTER_DAEMONS = new Set([
  "etcd",
  "kube-apiserver",
  "kube-controller",
  "kube-scheduler",
  "containerd",
  "containerd-shim",
  "kubelet",
  "kube-proxy",
  "coredns",
]);
const CPUACCT = "/sys/fs/cgroup/cpuacct";

export interface ClusterCpu {
  /** Nanoseconds of every pod on every local node: the cpuacct usage of each node's kubepods cgroup. */
  podsNs: number;
  /** Each daemon's ticks, its reaped children's (a shim's runc, a kubelet's mount) included, by pid. */
  daemons: Map<number, number>;
}

/**
 * The CPU the local cluster has used: its pods' (cgroup v1 cpuacct of kubepods, the first node's at the root, the
 * others' under their own folder) and its daemons'. Unlike /proc/stat, other work on this machine is left out.
 */
export async function clusterCpu(): Promise<ClusterCpu> {
  const nodes = (await readdir(CPUACCT, { withFileTypes: true })).filter((e) => e.isDirectory());
  let podsNs = 0;
  for (const folder of [CPUACCT, ...nodes.map((e) => `${CPUACCT}/${e.name}`)]) {
    podsNs += Number(await readFile(`${folder}/kubepods/cpuacct.usage`, "utf8").catch(() => "0"));
  }
  const daemons = new Map<number, number>();
  for (const pid of await numeric("/proc")) {
    const stat = await readFile(`/proc/${String(pid)}/stat`, "utf8").catch(() => undefined);
    if (stat === undefined) continue;
    const { comm, ticks, children } = taskTicks(stat);
    if (CLUSTER_DAEMONS.has(comm)) daemons.set(pid, ticks + children);
  }
  return { podsNs, daemons };
}

/** CPU-seconds the local cluster used from one reading to the next. */
export const clusterSecondsBetween = (before: ClusterCpu, after: ClusterCpu) =>
  (after.podsNs - before.podsNs) / 1e9 + ticksBetween(before.daemons, after.daemons) / CLOCK_TICKS;
