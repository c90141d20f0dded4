import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { core, createVm, custom, suiteNamespace, undefinedIfNotFound } from "./cluster.ts";
import { serialLogin, type SerialShell } from "./console.ts";
import { dataVolume } from "./datavolumes.ts";
import {
  BOOT,
  DEBIAN_PASSWORD,
  DEBIAN_USER,
  debianCloudInit,
  debianRootTemplate,
  debianVm,
  vmWaits,
} from "./debian.ts";

// Data comes back (docs/data-protection.md): the Debian guest on a
// persistent root disk (local-path storage, which has no CSI snapshots)
// writes a file and keeps writing while an online snapshot is taken; the
// file is then changed. A restore to a new VM runs beside the original with
// the first content and its own MAC; a restore to the same VM, once it is
// stopped, brings the first content back on a file system that needed no
// journal recovery; the guest's agent logged the freeze and the thaw. A clone of the running VM, from the manifest
// virtctl writes, boots beside it with that content and the MAC the clone gave it. Last, the restored VM is deleted
// keeping its disk, and a new VM on that claim reads what the restored VM wrote before it powered off.

const suite = suiteNamespace("e2e-snapshot");
const { name: namespace, get, kubectl } = suite;
const { running, stopped } = vmWaits(suite);
const FIRST = `first-${Date.now().toString(36)}`;
const SECOND = `second-${Date.now().toString(36)}`;
const KEPT = `kept-${Date.now().toString(36)}`;
const CLONED = `cloned-${Date.now().toString(36)}`;

const snapshotApi = { group: "snapshot.kubevirt.io", version: "v1beta1", namespace };
interface Snapshot {
  status?: {
    phase?: string;
    readyToUse?: boolean;
    indications?: string[];
    virtualMachineSnapshotContentName?: string;
    snapshotVolumes?: { includedVolumes?: string[]; excludedVolumes?: string[] };
  };
}
interface Restore {
  status?: { complete?: boolean; conditions?: { type: string; status: string; message?: string }[] };
}
const snapshot = (name: string) =>
  custom
    .getNamespacedCustomObject({ ...snapshotApi, plural: "virtualmachinesnapshots", name })
    .then((o) => o as Snapshot, undefinedIfNotFound);
const restore = (name: string) =>
  custom
    .getNamespacedCustomObject({ ...snapshotApi, plural: "virtualmachinerestores", name })
    .then((o) => o as Restore, undefinedIfNotFound);
interface Clone {
  metadata?: { uid?: string };
  status?: { phase?: string; snapshotName?: string; conditions?: { message?: string }[] };
}
const clone = (name: string) =>
  custom
    .getNamespacedCustomObject({
      group: "clone.kubevirt.io",
      version: "v1beta1",
      namespace,
      plural: "virtualmachineclones",
      name,
    })
    .then((o) => o as Clone, undefinedIfNotFound);
const restoreTo = (name: string, target: string) =>
  custom.createNamespacedCustomObject({
    ...snapshotApi,
    plural: "virtualmachinerestores",
    body: {
      apiVersion: "snapshot.kubevirt.io/v1beta1",
      kind: "VirtualMachineRestore",
      metadata: { name, namespace },
      spec: {
        target: { apiGroup: "kubevirt.io", kind: "VirtualMachine", name: target },
        virtualMachineSnapshotName: "snap",
      },
    },
  });
const complete = async (name: string) => {
  await expect
    .poll(async () => {
      const status = (await restore(name))?.status;
      return status?.complete === true ? "complete" : JSON.stringify(status?.conditions ?? []);
    }, BOOT)
    .toBe("complete");
};
const start = (vm: string) =>
  kubectl("patch", "vm", vm, "-n", namespace, "--type=merge", "-p", '{"spec":{"runStrategy":"Always"}}');
/** The MAC address of the guest's network card, as the guest sees it. */
const guestMac = async (shell: SerialShell) => {
  const seen = await shell.run(
    "echo mac-$(cat /sys/class/net/e*/address | head -n1)",
    /mac-([0-9a-f]{2}(:[0-9a-f]{2}){5})/,
  );
  return /mac-([0-9a-f]{2}(:[0-9a-f]{2}){5})/.exec(seen)?.[1];
};
const login = (vm: string) => serialLogin(namespace, vm, DEBIAN_USER, DEBIAN_PASSWORD, BOOT);
const readMarker = async (shell: SerialShell, n: number) =>
  shell.run(
    `cat ~/marker.txt; echo read-$((${String(n)}+1))`,
    new RegExp(`(${FIRST}|${SECOND})\\s+read-${String(n + 1)}`),
  );

/** The original VM, with a MAC of its own on its pod network card: a restore to a new VM must not reuse it. */
const ORIGIN_MAC = "02:6b:76:74:73:01";
const origin = debianVm(namespace, "origin", { dataVolume: { name: "origin-root" } }, [
  debianRootTemplate("origin-root"),
]);
Object.assign(origin.spec.template.spec, { networks: [{ name: "default", pod: {} }] });
Object.assign(origin.spec.template.spec.domain.devices, {
  interfaces: [{ name: "default", masquerade: {}, macAddress: ORIGIN_MAC }],
});

describe("VM snapshots and restores on storage without CSI snapshots", () => {
  it(
    "takes an online snapshot while the guest writes, its file systems frozen through the agent",
    async () => {
      await core.createNamespacedSecret({ namespace, body: debianCloudInit(namespace) });
      await createVm(namespace, origin);
      await running("origin");
      const shell = await login("origin");
      await shell.run(`echo ${FIRST} > ~/marker.txt && sync && echo wrote-$((40+2))`, "wrote-42");
      expect(await guestMac(shell)).toBe(ORIGIN_MAC);
      // The guest keeps writing while the snapshot is taken.
      await shell.run("(while :; do date >> ~/busy.log; sleep 0.1; done) & echo busy-$((40+3))", "busy-43");
      await expect
        .poll(async () => {
          const vmi = await get("virtualmachineinstances", "origin");
          const agent = (vmi?.status?.conditions as { type: string; status: string }[] | undefined)?.find(
            (c) => c.type === "AgentConnected",
          );
          return agent?.status;
        }, BOOT)
        .toBe("True");

      await custom.createNamespacedCustomObject({
        ...snapshotApi,
        plural: "virtualmachinesnapshots",
        body: {
          apiVersion: "snapshot.kubevirt.io/v1beta1",
          kind: "VirtualMachineSnapshot",
          metadata: { name: "snap", namespace },
          spec: { source: { apiGroup: "kubevirt.io", kind: "VirtualMachine", name: "origin" } },
        },
      });
      await expect.poll(async () => (await snapshot("snap"))?.status?.readyToUse, BOOT).toBe(true);
      const taken = (await snapshot("snap"))?.status;
      expect(taken?.phase).toBe("Succeeded");
      expect(taken?.indications).toEqual(expect.arrayContaining(["Online", "GuestAgent"]));
      expect(taken?.snapshotVolumes).toEqual({ includedVolumes: ["root"], excludedVolumes: ["cloudinit"] });
      expect(taken?.virtualMachineSnapshotContentName).toBeTruthy();
      expect((await get("virtualmachines", "origin"))?.status?.snapshotInProgress).toBeUndefined();
      // The writer has done its part: left running, it would keep a third of a core busy under emulation for the
      // rest of the file.
      await shell.run("kill %1; wait; echo quiet-$((40+6))", "quiet-46");

      await shell.run(`echo ${SECOND} > ~/marker.txt && sync && echo wrote-$((40+4))`, "wrote-44");
      // The agent froze the guest's file systems for the capture and thawed them after.
      await shell.run(
        "sudo journalctl --no-pager | grep -c guest-fsfreeze; echo journal-$((40+5))",
        /[1-9]\d*\s+journal-45/,
      );
      shell.close();
    },
    BOOT.timeout,
  );

  it(
    "restores it to a new VM that runs beside the original, with the first content and its own MAC",
    async () => {
      await restoreTo("to-new", "copy");
      await complete("to-new");
      expect((await get("virtualmachines", "copy")) as { spec?: { runStrategy?: string } }).toMatchObject({
        spec: { runStrategy: "Halted" },
      });
      await start("copy");
      await running("copy");
      const shell = await login("copy");
      expect(await readMarker(shell, 50)).toContain(FIRST);
      const copyMac = await guestMac(shell);
      // What the copy writes stays on its claim after it powers off (read back by the last test).
      await shell.run(`echo ${KEPT} > ~/kept.txt && sync && echo wrote-$((50+2))`, "wrote-52");
      shell.close();
      expect(copyMac).toBeTruthy();
      expect(copyMac).not.toBe(ORIGIN_MAC);
      await stopped("copy");
    },
    BOOT.timeout,
  );

  it(
    "restores it onto the stopped VM: the first content, on a file system that needed no recovery",
    async () => {
      await stopped("origin");
      await restoreTo("in-place", "origin");
      await complete("in-place");
      await start("origin");
      await running("origin");
      const shell = await login("origin");
      expect(await readMarker(shell, 60)).toContain(FIRST);
      await shell.run(
        "sudo journalctl -k -b --no-pager | grep -c 'recovery complete'; echo fsck-$((60+2))",
        /\b0\s+fsck-62/,
      );
      shell.close();
    },
    BOOT.timeout,
  );

  it(
    "clones the running VM from virtctl's manifest: the clone boots with the content and the MAC it was given",
    async () => {
      // What `virtctl create clone --source-name origin --target-name cloned --new-mac-address
      // default:02-6b-76-74-73-02` prints (its flag splits on the colon, so the MAC has hyphens), applied unchanged.
      const manifest = [
        "apiVersion: clone.kubevirt.io/v1alpha1",
        "kind: VirtualMachineClone",
        "metadata:",
        "  creationTimestamp: null",
        "  name: clone-e2e01",
        "spec:",
        "  newMacAddresses:",
        "    default: 02-6b-76-74-73-02",
        "  source:",
        "    apiGroup: kubevirt.io",
        "    kind: VirtualMachine",
        "    name: origin",
        "  target:",
        "    apiGroup: kubevirt.io",
        "    kind: VirtualMachine",
        "    name: cloned",
        "status: {}",
        "",
      ].join("\n");
      // A file written just before the clone: the clone takes a snapshot of its own, not the earlier one.
      const origin = await login("origin");
      await origin.run(`echo ${CLONED} > ~/clone.txt && sync && echo wrote-$((70+2))`, "wrote-72");
      origin.close();
      const file = join(mkdtempSync(join(tmpdir(), "clone-")), "clone.yaml");
      writeFileSync(file, manifest);
      await kubectl("create", "-n", namespace, "-f", file);
      await expect
        .poll(async () => {
          const status = (await clone("clone-e2e01"))?.status;
          return status?.phase === "Failed" ? JSON.stringify(status.conditions) : status?.phase;
        }, BOOT)
        .toBe("Succeeded");
      // The clone's own snapshot and restore are gone once the VM is made.
      const uid = (await clone("clone-e2e01"))?.metadata?.uid ?? "";
      await expect.poll(() => snapshot(`tmp-snapshot-${uid}`), BOOT).toBeUndefined();
      await expect.poll(() => restore(`tmp-restore-${uid}`), BOOT).toBeUndefined();
      await expect.poll(async () => (await clone("clone-e2e01"))?.status?.snapshotName, BOOT).toBeUndefined();
      expect((await get("virtualmachines", "cloned")) as { spec?: { runStrategy?: string } }).toMatchObject({
        spec: { runStrategy: "Halted" },
      });
      await start("cloned");
      await running("cloned");
      const shell = await login("cloned");
      await shell.run("cat ~/clone.txt; echo read-$((70+3))", new RegExp(`${CLONED}\\s+read-73`));
      expect(await guestMac(shell)).toBe("02:6b:76:74:73:02");
      shell.close();
      await stopped("cloned");
    },
    BOOT.timeout,
  );

  it(
    "keeps a deleted VM's disk, as the dashboard's \"keep its disks\" does, for a new VM on the same claim",
    async () => {
      const restored = (await restore("to-new"))?.status as {
        restores?: { volumeName: string; persistentVolumeClaim: string }[];
      };
      const claim = restored.restores?.find((r) => r.volumeName === "root")?.persistentVolumeClaim ?? "";
      expect(claim).toBeTruthy();
      // The VM's owner reference comes off the DataVolume first, then the VM goes; the claim and its file stay.
      await kubectl(
        "patch",
        "datavolume",
        claim,
        "-n",
        namespace,
        "--type=json",
        "-p",
        '[{"op":"remove","path":"/metadata/ownerReferences"}]',
      );
      await custom.deleteNamespacedCustomObject({
        group: "kubevirt.io",
        version: "v1",
        namespace,
        plural: "virtualmachines",
        name: "copy",
      });
      await expect.poll(() => get("virtualmachines", "copy"), BOOT).toBeUndefined();
      expect((await dataVolume(namespace, claim))?.status?.phase).toBe("Succeeded");

      await custom.createNamespacedCustomObject({
        group: "kubevirt.io",
        version: "v1",
        namespace,
        plural: "virtualmachines",
        body: debianVm(namespace, "again", { persistentVolumeClaim: { claimName: claim } }),
      });
      await running("again");
      const shell = await login("again");
      await shell.run("cat ~/kept.txt; echo read-$((80+1))", new RegExp(`${KEPT}\\s+read-81`));
      shell.close();
      await stopped("again");
    },
    BOOT.timeout,
  );
});
