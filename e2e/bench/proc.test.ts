import { describe, expect, it } from "vitest";
import {
  type ProcessCpu,
  isVcpuThread,
  machineBusyTicks,
  podRequest,
  residency,
  splitCpu,
  taskTicks,
  tbSizeBytes,
  ticksBetween,
} from "./proc.ts";

describe("/proc/stat", () => {
  it("counts user, nice, system, irq, softirq and steal as busy; idle and iowait not", () => {
    const stat = "cpu  100 2 30 5000 40 6 7 8 9 0\ncpu0 50 1 15 2500 20 3 3 4 0 0\nintr 1 2 3\n";
    expect(machineBusyTicks(stat)).toBe(100 + 2 + 30 + 6 + 7 + 8);
  });

  it("refuses a file with no cpu line", () => {
    expect(() => machineBusyTicks("intr 1\n")).toThrow(/no "cpu" line/);
  });
});

describe("a process's stat line", () => {
  it("gives utime + stime, with a name holding spaces and parentheses", () => {
    // Fields after the name: state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime ...
    const stat = "4242 (CPU 0/TCG) S 1 2 3 0 -1 4194560 10 0 0 0 1234 56 0 0 20 0 3 0 100 0 0\n";
    expect(taskTicks(stat)).toEqual({ comm: "CPU 0/TCG", ticks: 1290, children: 0 });
    const parent = "9 (containerd-shim) S 1 2 3 0 -1 0 0 0 0 0 10 20 300 400 20 0 3 0 100 0 0";
    expect(taskTicks(parent)).toEqual({ comm: "containerd-shim", ticks: 30, children: 700 });
    expect(taskTicks("7 (a (b) c) R 1 2 3 0 -1 0 0 0 0 0 5 6 0 0").comm).toBe("a (b) c");
  });

  it("names QEMU's vCPU threads, emulated or not, and no other thread", () => {
    expect(isVcpuThread("CPU 0/TCG")).toBe(true);
    expect(isVcpuThread("CPU 12/KVM")).toBe(true);
    expect(isVcpuThread("qemu-system-x86")).toBe(false);
    expect(isVcpuThread("IO mon_iothread")).toBe(false);
  });
});

describe("CPU between samples", () => {
  it("counts a new key from zero and a gone key not at all", () => {
    expect(
      ticksBetween(
        new Map([
          [1, 10],
          [2, 50],
        ]),
        new Map([
          [1, 25],
          [3, 7],
        ]),
      ),
    ).toBe(15 + 7);
  });

  const proc = (pid: number, comm: string, ticks: number, threads: [number, string, number][] = []): ProcessCpu => ({
    pid,
    comm,
    ticks,
    threads: new Map(threads.map(([tid, name, t]) => [tid, { comm: name, ticks: t }])),
  });

  it("puts the handler apart, QEMU's vCPU threads apart from its others, the launcher's processes by command", () => {
    const before = new Map([
      [1, { uid: "handler", cpu: proc(1, "node", 100) }],
      [
        2,
        {
          uid: "vm-a",
          cpu: proc(2, "qemu-system-x86", 1000, [
            [2, "qemu-system-x86", 100],
            [5, "CPU 0/TCG", 800],
          ]),
        },
      ],
      [3, { uid: "vm-a", cpu: proc(3, "node", 40) }],
      [4, { uid: "vm-a", cpu: proc(4, "libvirtd", 10) }],
    ]);
    const after = new Map([
      [1, { uid: "handler", cpu: proc(1, "node", 130) }],
      [
        2,
        {
          uid: "vm-a",
          cpu: proc(2, "qemu-system-x86", 1600, [
            [2, "qemu", 150],
            [5, "CPU 0/TCG", 1300],
          ]),
        },
      ],
      [3, { uid: "vm-a", cpu: proc(3, "node", 45) }],
      [6, { uid: "vm-a", cpu: proc(6, "node", 2) }],
    ]);
    const split = splitCpu(before, after, new Set(["handler"]));
    expect(split.handler).toBe(30);
    expect(split.vcpu).toBe(500);
    expect(split.qemu).toBe(100);
    expect(split.launcher).toEqual(new Map([["node", 7]]));
  });
});

describe("smaps", () => {
  const GUEST = 128 * 2 ** 20;
  const mapping = (range: string, perms: string, sizeKiB: number, rssKiB: number) =>
    `${range} ${perms} 00000000 00:00 0\n` +
    `Size:           ${String(sizeKiB)} kB\nRss:            ${String(rssKiB)} kB\nPss:  1 kB\n`;

  it("sums Rss, with the guest's RAM (a mapping of its size) and the translation cache (rwxp) apart", () => {
    const smaps =
      mapping("7f0000000000-7f0008000000", "rw-p", 131072, 20000) +
      mapping("7f1000000000-7f1004000000", "rwxp", 65536, 3000) +
      mapping("7f2000000000-7f2000001000", "---p", 4, 0) +
      mapping("7f3000000000-7f3008000000", "rwxp", 131072, 1000) +
      mapping("5600000000-5600100000", "r-xp", 1024, 900);
    const rss = (20000 + 3000 + 1000 + 900) * 1024;
    expect(residency(smaps, GUEST)).toEqual({ rss, guest: 20000 * 1024, tbCache: 4000 * 1024 });
  });

  it("reads the translation cache's size from QEMU's command line", () => {
    expect(tbSizeBytes("qemu-system-x86_64\x00-accel\x00tcg,tb-size=64\x00-m\x00128")).toBe(64 * 2 ** 20);
    expect(tbSizeBytes("qemu-system-x86_64\x00-accel\x00kvm\x00")).toBeUndefined();
  });
});

describe("a pod's requests as the scheduler counts them", () => {
  const c = (cpu: string, memory: string, restartPolicy?: string) => ({
    resources: { requests: { cpu, memory } },
    ...(restartPolicy ? { restartPolicy } : {}),
  });

  it("is its containers and sidecars together when that is more than any init container's", () => {
    const initContainers = [c("10m", "16Mi"), c("10m", "16Mi"), c("5m", "35M", "Always")];
    const spec = { initContainers, containers: [c("100m", "300Mi")] };
    expect(podRequest(spec, "cpu")).toBeCloseTo(0.105, 9);
    expect(podRequest(spec, "memory")).toBe(35e6 + 300 * 2 ** 20);
  });

  it("is an init container's with the sidecars before it when that is more", () => {
    const spec = { initContainers: [c("1", "1Gi", "Always"), c("2", "1Gi")], containers: [c("100m", "1Mi")] };
    expect(podRequest(spec, "cpu")).toBe(3);
    expect(podRequest(spec, "memory")).toBe(2 * 2 ** 30);
  });
});
