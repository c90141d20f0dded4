import type { DomainStats } from "@kubevirt-ts/launcher-protocol";

// `virsh domstats --raw` of one domain, read into the protocol's
// DomainStats: each "key=value" line as libvirt names it (cpu.time,
// vcpu.0.time, balloon.rss, net.0.rx.bytes, block.1.wr.bytes, ...), the
// devices given the names the VMI gives them. Pure: the domain manager runs
// virsh.

/** The flags that ask virsh for what DomainStats holds, and nothing else. */
export const DOMSTATS_FLAGS = ["--raw", "--cpu-total", "--balloon", "--vcpu", "--interface", "--block"] as const;

const VCPU_STATES = ["OFFLINE", "RUNNING", "BLOCKED"] as const;

/** The lines' values by key; the "Domain: '...'" heading and blank lines are skipped. */
function fields(text: string): Map<string, string> {
  const map = new Map<string, string>();
  for (const line of text.split("\n")) {
    const eq = line.indexOf("=");
    if (eq > 0) map.set(line.slice(0, eq).trim(), line.slice(eq + 1).trim());
  }
  return map;
}

/**
 * DomainStats from virsh's text. `interfaceNames` are the VMI's interfaces in the order the domain has them (libvirt
 * numbers them in that order); `diskNames` maps a disk's target (vda) to its name in the VMI.
 */
export function parseDomstats(
  text: string,
  interfaceNames: readonly string[],
  diskNames: ReadonlyMap<string, string>,
): DomainStats {
  const f = fields(text);
  const num = (key: string): number | undefined => {
    const value = f.get(key);
    if (value === undefined || value === "") return undefined;
    const n = Number(value);
    return Number.isFinite(n) && n >= 0 ? n : undefined;
  };
  const zero = (key: string): number => num(key) ?? 0;
  const optional = <K extends string>(key: K, value: number | undefined): Partial<Record<K, number>> =>
    value === undefined ? {} : ({ [key]: value } as Record<K, number>);

  const vcpus: DomainStats["vcpus"] = [];
  for (let i = 0; i < zero("vcpu.maximum"); i += 1) {
    const timeNs = num(`vcpu.${String(i)}.time`);
    if (timeNs === undefined && num(`vcpu.${String(i)}.state`) === undefined) continue;
    vcpus.push({
      id: i,
      state: VCPU_STATES[zero(`vcpu.${String(i)}.state`)] ?? "OFFLINE",
      timeNs: timeNs ?? 0,
      ...optional("waitNs", num(`vcpu.${String(i)}.wait`)),
      ...optional("delayNs", num(`vcpu.${String(i)}.delay`)),
    });
  }

  const interfaces: DomainStats["interfaces"] = [];
  for (let i = 0; i < zero("net.count"); i += 1) {
    const n = (key: string) => zero(`net.${String(i)}.${key}`);
    interfaces.push({
      name: interfaceNames[i] ?? f.get(`net.${String(i)}.name`) ?? `net${String(i)}`,
      rxBytes: n("rx.bytes"),
      rxPackets: n("rx.pkts"),
      rxErrors: n("rx.errs"),
      rxDrops: n("rx.drop"),
      txBytes: n("tx.bytes"),
      txPackets: n("tx.pkts"),
      txErrors: n("tx.errs"),
      txDrops: n("tx.drop"),
    });
  }

  const disks: DomainStats["disks"] = [];
  for (let i = 0; i < zero("block.count"); i += 1) {
    const target = f.get(`block.${String(i)}.name`) ?? "";
    // Backing files of one disk are listed again under the same target: the disk counts once.
    if (disks.some((d) => d.name === (diskNames.get(target) ?? target))) continue;
    const n = (key: string) => zero(`block.${String(i)}.${key}`);
    disks.push({
      name: diskNames.get(target) ?? target,
      readBytes: n("rd.bytes"),
      readRequests: n("rd.reqs"),
      readTimeNs: n("rd.times"),
      writeBytes: n("wr.bytes"),
      writeRequests: n("wr.reqs"),
      writeTimeNs: n("wr.times"),
      flushRequests: n("fl.reqs"),
      flushTimeNs: n("fl.times"),
    });
  }

  return {
    cpu: {
      timeNs: zero("cpu.time"),
      ...optional("userNs", num("cpu.user")),
      ...optional("systemNs", num("cpu.system")),
    },
    vcpus,
    memory: {
      ...optional("domainKiB", num("balloon.maximum")),
      ...optional("actualKiB", num("balloon.current")),
      ...optional("rssKiB", num("balloon.rss")),
      ...optional("availableKiB", num("balloon.available")),
      ...optional("usableKiB", num("balloon.usable")),
      ...optional("unusedKiB", num("balloon.unused")),
      ...optional("swapInKiB", num("balloon.swap_in")),
      ...optional("swapOutKiB", num("balloon.swap_out")),
      ...optional("majorFaults", num("balloon.major_fault")),
      ...optional("minorFaults", num("balloon.minor_fault")),
    },
    interfaces,
    disks,
  };
}
