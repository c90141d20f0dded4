import type { VirtualMachineInstance, VmiSpec } from "@kubevirt-ts/kubevirt-api";
import { describe, expect, it } from "vitest";
import { guestVcpus, memoryOverheadBytes, tbCacheBytes } from "./memory-overhead.ts";

const MiB = 2 ** 20;
const GiB = 2 ** 30;

function vmi(domain: Partial<VmiSpec["domain"]>, rest: Partial<VmiSpec> = {}): VirtualMachineInstance {
  const spec = { domain: { devices: {}, ...domain }, ...rest };
  return { apiVersion: "kubevirt.io/v1", kind: "VirtualMachineInstance", metadata: { name: "v" }, spec };
}

const exec = { exec: { command: ["true"] } };
const GIB_REQUEST = { resources: { requests: { memory: "1Gi" } } };
/** KubeVirt's share of a 1 GiB guest with 1 vCPU and a display: 2 MiB of page tables, 220 + 8 + 8 + 32 MiB. */
const ONE_GIB_KVM = 2 * MiB + (220 + 8 + 8 + 32) * MiB;

describe("memoryOverheadBytes with KVM, KubeVirt's GetMemoryOverhead", () => {
  // KubeVirt's figures, worked from its formula: page tables are floor(ceil(request / 1000) × 1000 / 512) bytes; its
  // processes 25 + 100 + 25 + 40 + 30 = 220 MiB; 8 MiB a vCPU; 8 MiB for an IO thread; 32 MiB of video RAM.
  it.each<[string, VirtualMachineInstance, number]>([
    ["1 GiB, 1 vCPU, a display", vmi(GIB_REQUEST), ONE_GIB_KVM],
    ["64 MiB, 1 vCPU, a display", vmi({ memory: { guest: "64Mi" } }), 131_072 + (220 + 8 + 8 + 32) * MiB],
    [
      "2 GiB, 2 sockets × 2 cores, no display, a TPM",
      vmi({
        resources: { requests: { memory: "2Gi" } },
        cpu: { sockets: 2, cores: 2 },
        devices: { autoattachGraphicsDevice: false, tpm: {} },
      }),
      4 * MiB + (220 + 4 * 8 + 8 + 53) * MiB,
    ],
    [
      "1 GiB with liveness and readiness exec probes",
      vmi(GIB_REQUEST, { livenessProbe: exec, readinessProbe: exec }),
      ONE_GIB_KVM + (100 + 2 * 10) * MiB,
    ],
    [
      "Guaranteed QoS: 1 GiB and 2 CPUs requested as their limits, 2 vCPUs by the CPU limit",
      vmi({ resources: { requests: { memory: "1Gi", cpu: "2" }, limits: { memory: "1Gi", cpu: "2" } } }),
      2 * MiB + (220 + 2 * 8 + 8 + 32 + 100) * MiB,
    ],
    ["a disabled TPM", vmi({ ...GIB_REQUEST, devices: { tpm: { enabled: false } } }), ONE_GIB_KVM],
    ["1 GB, page tables as KubeVirt rounds", vmi({ resources: { requests: { memory: "1G" } } }), 268 * MiB + 1_953_125],
  ])("%s", (_name, given, bytes) => {
    expect(memoryOverheadBytes(given, false)).toBe(bytes);
  });
});

describe("memoryOverheadBytes under emulation", () => {
  it("takes the launcher's measured 180 MiB in place of KubeVirt's 220, and adds QEMU's translation cache", () => {
    const given = vmi({ memory: { guest: "1Gi" } });
    expect(memoryOverheadBytes(given, true)).toBe(2 * MiB + (180 + 128 + 8 + 8 + 32) * MiB);
    expect(memoryOverheadBytes(given, true) - memoryOverheadBytes(given, false)).toBe(tbCacheBytes(GiB) - 40 * MiB);
  });
});

describe("tbCacheBytes", () => {
  it.each([
    [64 * MiB, 64 * MiB],
    [512 * MiB, 64 * MiB],
    [GiB, 128 * MiB],
    [1.5 * GiB, 192 * MiB],
    [2 * GiB, 256 * MiB],
    [64 * GiB, 256 * MiB],
    [1000 * 1000 * 1000, 120 * MiB],
  ])("gives a guest of %i bytes %i bytes: an eighth in whole MiB, from 64 to 256 MiB", (guest, cache) => {
    expect(tbCacheBytes(guest)).toBe(cache);
  });
});

describe("guestVcpus", () => {
  it("counts the topology, else the CPU limit or request rounded up, and at least 1", () => {
    expect(guestVcpus(vmi({ cpu: { sockets: 2, cores: 3, threads: 2 } }))).toBe(12);
    expect(guestVcpus(vmi({ resources: { limits: { cpu: "3" }, requests: { cpu: "1" } } }))).toBe(3);
    expect(guestVcpus(vmi({ resources: { requests: { cpu: "1500m" } } }))).toBe(2);
    expect(guestVcpus(vmi({}))).toBe(1);
  });
});
