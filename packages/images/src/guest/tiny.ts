import { mkdir, mkdtemp, readFile, readdir, rename, rm, writeFile } from "node:fs/promises";
import { createHash } from "node:crypto";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { cpioArchive } from "../cpio.ts";
import { env } from "../env.ts";
import { exists, log, run } from "../exec.ts";

// The tiny test guest: Debian's cloud kernel and an initramfs of busybox whose
// init offers a shell on the serial console and brings its virtio network
// card up by DHCP. It reaches its prompt within seconds under emulation, for
// tests of everything around a running guest.

export interface TinyGuest {
  kernel: string;
  initrd: string;
  /** What the guest prints once its init runs. */
  readyMessage: string;
}

export const TINY_GUEST_READY = "kubevirt-ts tiny guest: init reached";

/**
 * The kernel's modules the guest loads, in order (each needs those before it): virtio's PCI transport, its network
 * card, its disks and its memory balloon (which reports the guest's memory use); and efivarfs, for a test to read and
 * write EFI variables when the guest boots through OVMF.
 */
const MODULES = [
  "drivers/virtio/virtio_ring.ko",
  "drivers/virtio/virtio.ko",
  "drivers/virtio/virtio_pci_legacy_dev.ko",
  "drivers/virtio/virtio_pci_modern_dev.ko",
  "drivers/virtio/virtio_pci.ko",
  "net/core/failover.ko",
  "drivers/net/net_failover.ko",
  "drivers/net/virtio_net.ko",
  "drivers/block/virtio_blk.ko",
  "drivers/virtio/virtio_balloon.ko",
  "fs/efivarfs/efivarfs.ko",
];

/** The initramfs's folders: /etc for the resolver the DHCP client writes. */
const DIRECTORIES = ["bin", "dev", "etc", "proc", "sys", "tmp", "modules"];

/**
 * busybox udhcpc's script: it sets the address, route and resolver (servers and search path) the DHCP server gave:
 * the launcher's, which gives the pod's.
 */
const DHCP_SCRIPT = `#!/bin/sh
case "$1" in
  bound|renew)
    ip addr flush dev "$interface"
    ip addr add "$ip/\${mask:-24}" dev "$interface"
    [ -n "$router" ] && ip route add default via "$router"
    { for server in $dns; do echo "nameserver $server"; done; [ -n "$search" ] && echo "search $search"; } \
      > /etc/resolv.conf
    ;;
esac
exit 0
`;

const MODULE_PATHS = MODULES.map((m) => `/modules/${m.slice(m.lastIndexOf("/") + 1)}`).join(" ");
/** Loads the guest's kernel modules, which its initramfs holds under /modules (a line of its init). */
export const LOAD_MODULES = `for m in ${MODULE_PATHS}; do insmod "$m" 2>/dev/null; done`;
const DHCP = "udhcpc -q -f -n -t 10 -i eth0 -s /bin/dhcp-script >/dev/null 2>&1";

// The guest's network comes up in the background: its shell is there at once, and a test that needs the network waits
// for it.
const INIT = `#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
${LOAD_MODULES}
(ip link set lo up; ip link set eth0 up 2>/dev/null && ${DHCP}) &
echo "${TINY_GUEST_READY}"
while true; do
  setsid cttyhack sh -l
done
`;

/** Downloads a Debian package (the candidate of its name) into dir and returns the file. */
async function download(dir: string, name: string): Promise<string> {
  await run("sh", ["-c", `cd '${dir}' && apt-get download -q '${name}' 2>&1`]);
  const file = (await readdir(dir)).find((f) => f.startsWith(`${name}_`) && f.endsWith(".deb"));
  if (!file) throw new Error(`apt-get download ${name} gave no package`);
  return join(dir, file);
}

export async function buildTinyGuest(): Promise<TinyGuest> {
  const work = await mkdtemp(join(env.KUBEVIRT_TS_CACHE, "tiny-guest-work-"));
  try {
    // The kernel meta package names the versioned kernel it wants: that version keys the cache.
    const meta = await download(work, "linux-image-cloud-amd64");
    const kernelPackage = (await run("dpkg-deb", ["-f", meta, "Depends"])).trim().split(" ")[0] ?? "";
    // The init, its folders and the modules it loads key the cache too: a guest built by an older recipe is not taken.
    const recipe = createHash("sha256")
      .update(INIT)
      .update(DHCP_SCRIPT)
      .update(MODULES.join("\n"))
      .update(DIRECTORIES.join("\n"))
      .digest("hex")
      .slice(0, 12);
    const dir = join(env.KUBEVIRT_TS_CACHE, "guests", `tiny-${kernelPackage}-${recipe}`);
    const guest = { kernel: join(dir, "vmlinuz"), initrd: join(dir, "initrd.gz"), readyMessage: TINY_GUEST_READY };
    if (await exists(guest.initrd)) return guest;
    log(`building the tiny guest (${kernelPackage} and busybox)`);
    const extracted = join(work, "root");
    await run("dpkg-deb", ["-x", await download(work, kernelPackage), extracted]);
    await run("dpkg-deb", ["-x", await download(work, "busybox-static"), extracted]);
    const vmlinuz = (await readdir(join(extracted, "boot"))).find((f) => f.startsWith("vmlinuz-"));
    if (!vmlinuz) throw new Error(`${kernelPackage} holds no /boot/vmlinuz-*`);
    const initrd = cpioArchive([
      ...DIRECTORIES.map((d) => ({ path: d, type: "directory" as const })),
      { path: "bin/busybox", type: "file", data: await readFile(join(extracted, "bin/busybox")), mode: 0o755 },
      { path: "bin/dhcp-script", type: "file", data: Buffer.from(DHCP_SCRIPT), mode: 0o755 },
      ...(await Promise.all(
        MODULES.map(async (m) => ({
          path: `modules/${m.slice(m.lastIndexOf("/") + 1)}`,
          type: "file" as const,
          data: await readFile(join(extracted, "lib/modules", kernelPackage.replace(/^linux-image-/, ""), "kernel", m)),
          mode: 0o644,
        })),
      )),
      { path: "init", type: "file", data: Buffer.from(INIT), mode: 0o755 },
    ]);
    await mkdir(`${dir}.partial`, { recursive: true });
    await writeFile(join(`${dir}.partial`, "vmlinuz"), await readFile(join(extracted, "boot", vmlinuz)));
    await writeFile(join(`${dir}.partial`, "initrd.gz"), gzipSync(initrd, { level: 9 }));
    await rm(dir, { recursive: true, force: true });
    await rename(`${dir}.partial`, dir);
    return guest;
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}
