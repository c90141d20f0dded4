import { describe, expect, it } from "vitest";
import { core, custom, imageOf, suiteNamespace, undefinedIfNotFound } from "./cluster.ts";
import { tinyVmWithSpec } from "../manifests.ts";
import { inGuest as inGuestOf } from "./console.ts";

// A VM's state outside its disks, as KubeVirt keeps it: with efi.persistent and tpm.persistent, the controller makes
// the VM's backend-storage claim (persistent-state-for-<vm>) before its first launcher pod, every launcher pod of the
// VM mounts it, and the EFI variables (OVMF's VARS file) and the emulated TPM's state (swtpm's) live there. The tiny
// guest boots through OVMF with a TPM on CRB: an EFI variable it writes, and the TPM itself, are there after a stop
// and a start, in a new pod; the claim goes with the VM.

const { name: namespace, get, kubectl } = suiteNamespace("e2e-state");
const poll = { timeout: 300_000, interval: 1_000 };
const VM = "stateful";
const CLAIM = `persistent-state-for-${VM}`;
const VARIABLE = "/sys/firmware/efi/efivars/KubevirtTsE2e-7d3c1b2a-9e8f-4a6b-8c5d-1e2f3a4b5c6d";
const VALUE = `kept-${Date.now().toString(36)}`;
// TPM2_ReadClock, written whole from a file: its reply's resetCount (bytes 26 to 29) counts the TPM's power-ons since
// it was made.
const READ_CLOCK =
  "mount -t efivarfs efivarfs /sys/firmware/efi/efivars 2>/dev/null; printf " +
  "'\\200\\001\\000\\000\\000\\012\\000\\000\\001\\201' > /tmp/read-clock; exec 3<>/dev/tpmrm0; dd " +
  "if=/tmp/read-clock bs=10 count=1 >&3 2>/dev/null; reply=$(dd bs=64 count=1 <&3 2>/dev/null | od -An -tx1 " +
  "| tr -d ' \\n'); exec 3>&-; echo tpm-reply=$reply";

function statefulVm() {
  return tinyVmWithSpec(VM, imageOf("tiny-guest"), namespace, (spec) => ({
    ...spec,
    domain: {
      ...spec.domain,
      // OVMF under emulation needs more than the tiny guest's 128Mi.
      memory: { guest: "512Mi" },
      firmware: { ...spec.domain.firmware, bootloader: { efi: { secureBoot: false, persistent: true } } },
      devices: { ...spec.domain.devices, tpm: { persistent: true } },
    },
  }));
}

/** Runs the commands after reading the TPM's clock in the guest; the reset count and what the guest printed. */
async function inGuest(commands: string, expected: string): Promise<{ resetCount: number; output: string }> {
  const output = await inGuestOf(namespace, VM, `${READ_CLOCK}; ${commands}`, expected, poll);
  const reply = /tpm-reply=([0-9a-f]{70})/.exec(output)?.[1];
  if (!reply) throw new Error(`the guest printed no TPM2_ReadClock reply: ${output.slice(-500)}`);
  expect(reply.slice(12, 20), "TPM2_ReadClock's response code").toBe("00000000");
  return { resetCount: parseInt(reply.slice(52, 60), 16), output };
}

const runningUid = async () => {
  await expect.poll(async () => (await get("virtualmachineinstances", VM))?.status?.phase, poll).toBe("Running");
  return (await get("virtualmachineinstances", VM))?.metadata.uid;
};

describe("a VM's EFI variables and TPM state", () => {
  it(
    "live on the VM's backend-storage claim, and are there after a stop and a " + "start; the claim goes with the VM",
    async () => {
      const vm = (await custom.createNamespacedCustomObject({
        group: "kubevirt.io",
        version: "v1",
        namespace,
        plural: "virtualmachines",
        body: statefulVm(),
      })) as { metadata: { uid: string } };
      const firstUid = await runningUid();

      const claim = await core.readNamespacedPersistentVolumeClaim({ namespace, name: CLAIM });
      expect(claim.status?.phase).toBe("Bound");
      expect(claim.spec).toMatchObject({
        accessModes: ["ReadWriteOnce"],
        volumeMode: "Filesystem",
        storageClassName: "local-path",
        resources: { requests: { storage: "10Mi" } },
      });
      expect(claim.metadata?.ownerReferences).toEqual([
        expect.objectContaining({ kind: "VirtualMachine", name: VM, uid: vm.metadata.uid, controller: true }),
      ]);

      const first = await inGuest(
        `printf '\\007\\000\\000\\000${VALUE}' > ${VARIABLE} && echo wrote-$((40+2))`,
        "wrote-42",
      );
      // OVMF's VARS file and swtpm's state are on the claim, as the launcher sees it.
      const pod =
        (await core.listNamespacedPod({ namespace, labelSelector: `kubevirt.io/created-by=${firstUid ?? ""}` }))
          .items[0]?.metadata?.name ?? "";
      expect(
        await kubectl(
          "exec",
          "-n",
          namespace,
          pod,
          "-c",
          "compute",
          "--",
          "ls",
          "/var/run/kubevirt-ts/vm-state/nvram",
          "/var/run/kubevirt-ts/vm-state/swtpm/tpm2",
        ),
      ).toMatch(/_VARS\.fd[\s\S]*tpm2-00\.permall/);

      await kubectl("patch", "vm", VM, "-n", namespace, "--type=merge", "-p", '{"spec":{"runStrategy":"Halted"}}');
      await expect.poll(() => get("virtualmachineinstances", VM), poll).toBeUndefined();
      await kubectl("patch", "vm", VM, "-n", namespace, "--type=merge", "-p", '{"spec":{"runStrategy":"Always"}}');
      expect(await runningUid()).not.toBe(firstUid);

      const second = await inGuest(`echo variable=$(tail -c +5 ${VARIABLE})`, `variable=${VALUE}`);
      // The same TPM, powered on again: a new one would have counted as many power-ons as the first run's.
      expect(second.resetCount).toBeGreaterThan(first.resetCount);

      await custom.deleteNamespacedCustomObject({
        group: "kubevirt.io",
        version: "v1",
        namespace,
        plural: "virtualmachines",
        name: VM,
      });
      await expect
        .poll(
          () => core.readNamespacedPersistentVolumeClaim({ namespace, name: CLAIM }).catch(undefinedIfNotFound),
          poll,
        )
        .toBeUndefined();
    },
  );
});
