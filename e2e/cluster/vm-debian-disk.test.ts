import { describe, expect, it } from "vitest";
import { core, custom, suiteNamespace } from "./cluster.ts";
import { serialLogin } from "./console.ts";
import { dataVolume as dataVolumeIn } from "./datavolumes.ts";
import {
  DEBIAN_PASSWORD as password,
  DEBIAN_USER,
  debianCloudInit,
  debianRootTemplate,
  debianVm as debianVmIn,
  BOOT,
  vmWaits,
} from "./debian.ts";

// Data survives: the Debian guest on a persistent root disk, a DataVolume
// its VM fills from the guest's containerDisk image (as KubeVirt users give
// a VM its root disk). A file written in the guest is there after the VM is
// stopped (its guest powers off through ACPI) and started again; the VM is
// then deleted keeping its disk, and a new VM on the same claim reads it.

const suite = suiteNamespace("e2e-debian-disk");
const { name: namespace, get, kubectl } = suite;
const boot = BOOT;
const MARKER = `kept-${Date.now().toString(36)}`;
const debianVm = (name: string, root: object, templates?: object[]) => debianVmIn(namespace, name, root, templates);

const dataVolume = (name: string) => dataVolumeIn(namespace, name);
const { running, stopped } = vmWaits(suite);

describe("the Debian guest on a persistent root disk", () => {
  // Three boots and two power-offs under emulation: each wait has BOOT's bound, the whole test three of them.
  it(
    "keeps a file it wrote across a stop and a start, and gives it to a new VM on the same claim",
    async () => {
      await core.createNamespacedSecret({ namespace, body: debianCloudInit(namespace) });
      const template = debianRootTemplate("debian-root");
      await custom.createNamespacedCustomObject({
        group: "kubevirt.io",
        version: "v1",
        namespace,
        plural: "virtualmachines",
        body: debianVm("debian", { dataVolume: { name: "debian-root" } }, [template]),
      });
      await expect.poll(async () => (await dataVolume("debian-root"))?.status?.phase, boot).toBe("Succeeded");
      await running("debian");

      let shell = await serialLogin(namespace, "debian", DEBIAN_USER, password, boot);
      await shell.run(`echo ${MARKER} > ~/kept.txt && sync && echo wrote-$((40+2))`, "wrote-42");
      shell.close();
      await stopped("debian");

      await kubectl(
        "patch",
        "vm",
        "debian",
        "-n",
        namespace,
        "--type=merge",
        "-p",
        '{"spec":{"runStrategy":"Always"}}',
      );
      await running("debian");
      shell = await serialLogin(namespace, "debian", DEBIAN_USER, password, boot);
      await shell.run("cat ~/kept.txt; echo read-$((40+3))", new RegExp(`${MARKER}\\s+read-43`));
      shell.close();

      // Deleted keeping its disk, as the dashboard's "keep its disks" does: the VM's owner reference comes off first.
      await kubectl(
        "patch",
        "datavolume",
        "debian-root",
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
        name: "debian",
      });
      await expect.poll(() => get("virtualmachineinstances", "debian"), boot).toBeUndefined();
      await expect.poll(() => get("virtualmachines", "debian"), boot).toBeUndefined();
      expect((await dataVolume("debian-root"))?.status?.phase).toBe("Succeeded");

      await custom.createNamespacedCustomObject({
        group: "kubevirt.io",
        version: "v1",
        namespace,
        plural: "virtualmachines",
        body: debianVm("debian-again", { persistentVolumeClaim: { claimName: "debian-root" } }),
      });
      await running("debian-again");
      shell = await serialLogin(namespace, "debian-again", DEBIAN_USER, password, boot);
      await shell.run("cat ~/kept.txt; echo read-$((40+4))", new RegExp(`${MARKER}\\s+read-44`));
      shell.close();
      await stopped("debian-again");
    },
    3 * BOOT.timeout,
  );
});
