import { domainStats } from "@kubevirt-ts/launcher-protocol";
import { describe, expect, it } from "vitest";
import { parseDomstats } from "./domstats.ts";

// The shape of `virsh domstats --raw` for a one-vCPU guest with one
// interface on QEMU's user network and two disks, as libvirt 9 prints it.
const TEXT = `Domain: 'default_web'
  cpu.time=2500000000
  cpu.user=1000000000
  cpu.system=500000000
  balloon.current=131072
  balloon.maximum=131072
  balloon.rss=180000
  vcpu.current=1
  vcpu.maximum=1
  vcpu.0.state=1
  vcpu.0.time=2000000000
  vcpu.0.wait=0
  vcpu.0.delay=1500
  net.count=1
  net.0.name=
  net.0.rx.bytes=4096
  net.0.rx.pkts=10
  net.0.rx.errs=0
  net.0.rx.drop=1
  net.0.tx.bytes=2048
  net.0.tx.pkts=5
  net.0.tx.errs=0
  net.0.tx.drop=0
  block.count=2
  block.0.name=vda
  block.0.rd.reqs=100
  block.0.rd.bytes=409600
  block.0.rd.times=3000000
  block.0.wr.reqs=7
  block.0.wr.bytes=28672
  block.0.wr.times=100000
  block.0.fl.reqs=2
  block.0.fl.times=5000
  block.1.name=vdb
  block.1.rd.reqs=3
  block.1.rd.bytes=1536
`;

describe("parseDomstats", () => {
  it("reads CPU, vCPUs, memory, interfaces and disks, named as the VMI names them", () => {
    const stats = parseDomstats(
      TEXT,
      ["default"],
      new Map([
        ["vda", "containerdisk"],
        ["vdb", "cloudinitdisk"],
      ]),
    );
    expect(domainStats.parse(stats)).toEqual(stats);
    expect(stats.cpu).toEqual({ timeNs: 2.5e9, userNs: 1e9, systemNs: 5e8 });
    expect(stats.vcpus).toEqual([{ id: 0, state: "RUNNING", timeNs: 2e9, waitNs: 0, delayNs: 1500 }]);
    // Without a balloon driver in the guest, libvirt knows only the domain's size and QEMU's resident set.
    expect(stats.memory).toEqual({ domainKiB: 131072, actualKiB: 131072, rssKiB: 180000 });
    expect(stats.interfaces).toEqual([
      {
        name: "default",
        rxBytes: 4096,
        rxPackets: 10,
        rxErrors: 0,
        rxDrops: 1,
        txBytes: 2048,
        txPackets: 5,
        txErrors: 0,
        txDrops: 0,
      },
    ]);
    expect(stats.disks.map((d) => [d.name, d.readBytes, d.writeRequests, d.flushTimeNs])).toEqual([
      ["containerdisk", 409600, 7, 5000],
      ["cloudinitdisk", 1536, 0, 0],
    ]);
  });

  it("reads the guest's own memory view when a balloon driver reports it, and skips what is not a number", () => {
    const stats = parseDomstats(
      "balloon.available=100\nballoon.unused=40\nballoon.usable=60\ncpu.time=x\n",
      [],
      new Map(),
    );
    expect(stats.memory).toEqual({ availableKiB: 100, unusedKiB: 40, usableKiB: 60 });
    expect(stats.cpu).toEqual({ timeNs: 0 });
  });
});
