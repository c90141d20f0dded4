import { type Server, createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { NODE_IP } from "@kubevirt-ts/local-cluster";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { tinyVmOnDataVolume } from "../manifests.ts";
import { core, custom, imageOf, suiteNamespace, undefinedIfNotFound, volumeOnMachine } from "./cluster.ts";
import { inGuest } from "./console.ts";

// DataVolumes where kubevirt-ts serves them (no CDI in the local cluster):
// a VM's dataVolumeTemplates are made into DataVolumes it owns, filled by an
// importer pod from a containerDisk image, an HTTP server (this test's, on
// the node's address) or another claim, and the VM starts once its disk is
// in; a source that cannot be read shows as DataVolumeError.

const { name: namespace, kubectl, get } = suiteNamespace("e2e-dv");
const poll = { timeout: 300_000, interval: 1_000 };
const tinyGuest = imageOf("tiny-guest");
const MARKER = `kubevirt-ts-dv-${Date.now().toString(36)}`;
const MIB = 1024 * 1024;

const createVm = (body: object) =>
  custom.createNamespacedCustomObject({
    group: "kubevirt.io",
    version: "v1",
    namespace,
    plural: "virtualmachines",
    body,
  });
interface DataVolume {
  metadata: { ownerReferences?: { kind: string; name: string }[] };
  status?: {
    phase?: string;
    progress?: string;
    conditions?: { type: string; status: string; reason?: string; message?: string }[];
  };
}
/** The DataVolume, or undefined while it is not there (only a 404 means that). */
const dataVolume = (name: string) =>
  custom
    .getNamespacedCustomObject({ group: "cdi.kubevirt.io", version: "v1beta1", namespace, plural: "datavolumes", name })
    .then((o) => o as DataVolume, undefinedIfNotFound);
const running = async (vm: string) => {
  await expect.poll(async () => (await get("virtualmachineinstances", vm))?.status?.phase, poll).toBe("Running");
};
const diskOnNode = async (claimName: string) => {
  const claim = await core.readNamespacedPersistentVolumeClaim({ namespace, name: claimName });
  const volume = await core.readPersistentVolume({ name: claim.spec?.volumeName ?? "" });
  return join(volumeOnMachine(volume), "disk.img");
};

let server: Server;
let imageUrl: string;

beforeAll(async () => {
  // A qcow2 image whose first bytes are the marker, served gzip-compressed, as images often are.
  const dir = mkdtempSync(join(tmpdir(), "e2e-dv-"));
  const raw = join(dir, "disk.raw");
  const content = Buffer.alloc(8 * MIB);
  content.write(`${MARKER}-http`);
  writeFileSync(raw, content);
  execFileSync("qemu-img", ["convert", "-f", "raw", "-O", "qcow2", raw, join(dir, "disk.qcow2")]);
  const image = gzipSync(readFileSync(join(dir, "disk.qcow2")));
  rmSync(dir, { recursive: true });
  server = createServer((req, res) => {
    if (req.url === "/disk.qcow2.gz") res.writeHead(200, { "content-length": String(image.length) }).end(image);
    else res.writeHead(404, "Not Found").end();
  });
  await new Promise<void>((resolve) => server.listen(0, NODE_IP, resolve));
  imageUrl = `http://${NODE_IP}:${String((server.address() as AddressInfo).port)}`;
});

afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
});

describe("a VM's disk on a DataVolume", () => {
  it("boots the tiny guest from the DataVolume its template fills from a containerDisk image", async () => {
    await createVm(
      tinyVmOnDataVolume(
        "filled",
        tinyGuest,
        {
          source: { registry: { url: `docker://${imageOf("blank-disk")}` } },
          storage: { resources: { requests: { storage: "64Mi" } } },
        },
        namespace,
      ),
    );
    await expect.poll(async () => (await dataVolume("filled-disk"))?.status?.phase, poll).toBe("Succeeded");
    const dv = await dataVolume("filled-disk");
    expect(dv?.status?.progress).toBe("100.0%");
    expect(dv?.metadata.ownerReferences).toMatchObject([{ kind: "VirtualMachine", name: "filled" }]);
    await running("filled");
    const vmi = await get("virtualmachineinstances", "filled");
    expect(
      (vmi?.status?.conditions as { type: string; status: string }[]).find((c) => c.type === "DataVolumesReady")
        ?.status,
    ).toBe("True");
    // The 1 MiB image, converted to raw and grown to the 64 MiB asked for; the importer pod is gone.
    const info = JSON.parse(
      execFileSync("qemu-img", ["info", "--output=json", await diskOnNode("filled-disk")], { encoding: "utf8" }),
    ) as { "virtual-size": number; format: string };
    expect(info).toMatchObject({ "virtual-size": 64 * MIB, format: "raw" });
    await expect
      .poll(
        async () => (await core.listNamespacedPod({ namespace, labelSelector: "kubevirt.io=importer" })).items.length,
        poll,
      )
      .toBe(0);
  });

  it("clones a claim with what the guest wrote on it", async () => {
    await inGuest(
      namespace,
      "filled",
      `echo ${MARKER} | dd of=/dev/vda conv=fsync 2>/dev/null && echo wrote-$((40+2))`,
      "wrote-42",
    );
    await kubectl("patch", "vm", "filled", "-n", namespace, "--type=merge", "-p", '{"spec":{"runStrategy":"Halted"}}');
    await expect.poll(() => get("virtualmachineinstances", "filled"), poll).toBeUndefined();

    await createVm(
      tinyVmOnDataVolume(
        "copy",
        tinyGuest,
        { source: { pvc: { namespace, name: "filled-disk" } }, storage: {} },
        namespace,
      ),
    );
    await expect.poll(async () => (await dataVolume("copy-disk"))?.status?.phase, poll).toBe("Succeeded");
    await running("copy");
    await inGuest(
      namespace,
      "copy",
      "dd if=/dev/vda bs=64 count=1 2>/dev/null | tr -d '\\000'; echo; echo read-$((40+3))",
      MARKER,
    );
    await kubectl("patch", "vm", "copy", "-n", namespace, "--type=merge", "-p", '{"spec":{"runStrategy":"Halted"}}');
  });

  it("fills a DataVolume over HTTP", async () => {
    await createVm(
      tinyVmOnDataVolume(
        "fetched",
        tinyGuest,
        {
          source: { http: { url: `${imageUrl}/disk.qcow2.gz` } },
          storage: { resources: { requests: { storage: "32Mi" } } },
        },
        namespace,
      ),
    );
    await running("fetched");
    expect((await dataVolume("fetched-disk"))?.status?.phase).toBe("Succeeded");
    await inGuest(
      namespace,
      "fetched",
      "dd if=/dev/vda bs=64 count=1 2>/dev/null | tr -d '\\000'; echo; echo read-$((40+4))",
      `${MARKER}-http`,
    );
    await kubectl("patch", "vm", "fetched", "-n", namespace, "--type=merge", "-p", '{"spec":{"runStrategy":"Halted"}}');
  });

  it("shows a source that cannot be read as DataVolumeError, with the server's answer, and makes no VMI", async () => {
    await createVm(
      tinyVmOnDataVolume(
        "broken",
        tinyGuest,
        {
          source: { http: { url: `${imageUrl}/missing.qcow2` } },
          storage: { resources: { requests: { storage: "32Mi" } } },
        },
        namespace,
      ),
    );
    await expect
      .poll(async () => (await get("virtualmachines", "broken"))?.status?.printableStatus, poll)
      .toBe("DataVolumeError");
    // The importer retries, as CDI's: between its runs the Running condition says why the last one failed.
    const running = async () =>
      (await dataVolume("broken-disk"))?.status?.conditions?.find((c) => c.type === "Running");
    await expect.poll(running, poll).toMatchObject({
      status: "False",
      reason: "Error",
      message: expect.stringContaining(`answered 404 Not Found for ${imageUrl}/missing.qcow2`) as unknown,
    });
    expect(await get("virtualmachineinstances", "broken")).toBeUndefined();
  });
});
