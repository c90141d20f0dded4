import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { request } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import { tinyVmOnClaim } from "../manifests.ts";
import { core, custom, imageOf, suiteNamespace, undefinedIfNotFound } from "./cluster.ts";
import { inGuest } from "./console.ts";
import { DASHBOARD_URL, dashboardTls } from "./dashboard.ts";
import { dataVolume, qcow2With, toUploadProxy, uploadDataVolume, uploadToken } from "./datavolumes.ts";

// Exports, as `virtctl vmexport` makes and reads them (docs/data-protection.md): a VirtualMachineExport of a claim
// created with its token Secret as virtctl creates both, its phase Ready with KubeVirt's links, the disk downloaded
// gzip-compressed from the external link (the dashboard's address, verified with the link's certificate) and raw,
// uploaded again (virtctl image-upload) into a disk the tiny guest reads the content from. An export of a stopped VM
// serves its manifests, which bring the VM back in another namespace, and is taken back when the VM starts; an export
// whose TTL is over is deleted.

const suite = suiteNamespace("e2e-export");
/** Where an exported VM's manifests are applied again. */
const other = suiteNamespace("e2e-export-import");
const { name: namespace, kubectl, get } = suite;
const poll = { timeout: 300_000, interval: 1_000 };
const MIB = 1024 * 1024;
const MARKER = `kubevirt-ts-export-${Date.now().toString(36)}`;
const TOKEN = `token-${Date.now().toString(36)}-abcdefgh`;

interface Link {
  cert: string;
  volumes?: { name: string; formats?: { format: string; url: string }[] }[];
  manifests?: { type: string; url: string }[];
}
interface Export {
  metadata: { uid: string };
  status?: {
    phase?: string;
    serviceName?: string;
    tokenSecretRef?: string;
    ttlExpirationTime?: string;
    virtualMachineName?: string;
    links?: { internal?: Link; external?: Link };
    conditions?: { type: string; status: string; reason?: string; message?: string }[];
  };
}

// v1, as newer virtctl writes it; the CRD stores v1beta1.
const exportApi = { group: "export.kubevirt.io", version: "v1", namespace, plural: "virtualmachineexports" };
const vmExport = (name: string) =>
  custom.getNamespacedCustomObject({ ...exportApi, name }).then((o) => o as Export, undefinedIfNotFound);

/** What `virtctl vmexport create <name> --pvc|--vm=<source>` makes: the export naming secret-<name>, then it. */
async function createExport(name: string, kind: string, apiGroup: string, source: string, ttl?: string) {
  const created = (await custom.createNamespacedCustomObject({
    ...exportApi,
    body: {
      apiVersion: "export.kubevirt.io/v1",
      kind: "VirtualMachineExport",
      metadata: { name, namespace },
      spec: {
        source: { apiGroup, kind, name: source },
        tokenSecretRef: `secret-${name}`,
        ...(ttl ? { ttlDuration: ttl } : {}),
      },
    },
  })) as Export;
  await core.createNamespacedSecret({
    namespace,
    body: {
      metadata: {
        name: `secret-${name}`,
        ownerReferences: [
          {
            apiVersion: "export.kubevirt.io/v1",
            kind: "VirtualMachineExport",
            name,
            uid: created.metadata.uid,
            controller: true,
            blockOwnerDeletion: false,
          },
        ],
      },
      type: "Opaque",
      stringData: { token: TOKEN },
    },
  });
}

/** A GET as virtctl makes it: the token in its header (or the query), the server verified with the link's cert. */
function download(
  url: string,
  cert: string,
  token: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { ca: cert, headers: { "x-kubevirt-export-token": token, ...headers } }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => {
        resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks) });
      });
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end();
  });
}

const formatUrl = (link: Link | undefined, volume: string, format: string) =>
  link?.volumes?.find((v) => v.name === volume)?.formats?.find((f) => f.format === format)?.url ?? "";

describe("an export of a claim, as virtctl vmexport makes and downloads it", () => {
  it("serves the claim's disk through the dashboard's address, and the download uploads back into a disk", async () => {
    await custom.createNamespacedCustomObject({
      group: "cdi.kubevirt.io",
      version: "v1beta1",
      namespace,
      plural: "datavolumes",
      body: uploadDataVolume(namespace, "source", "64Mi"),
    });
    await expect.poll(async () => (await dataVolume(namespace, "source"))?.status?.phase, poll).toBe("UploadReady");
    const uploadTo = async (pvc: string, image: Buffer) => {
      const token = await uploadToken(namespace, kubectl, pvc);
      expect(await toUploadProxy("POST", "/v1beta1/upload", token, image)).toMatchObject({ status: 200 });
      await expect.poll(async () => (await dataVolume(namespace, pvc))?.status?.phase, poll).toBe("Succeeded");
    };
    await uploadTo("source", qcow2With(MARKER));

    await createExport("claim", "PersistentVolumeClaim", "", "source");
    await expect.poll(async () => (await vmExport("claim"))?.status?.phase, poll).toBe("Ready");
    const status = (await vmExport("claim"))?.status;
    expect(status).toMatchObject({
      serviceName: "virt-export-claim",
      tokenSecretRef: "secret-claim",
      conditions: [{ type: "Ready", status: "True", reason: "PodReady" }],
    });
    expect(status?.virtualMachineName).toBeUndefined();
    expect(formatUrl(status?.links?.internal, "source", "gzip")).toBe(
      `https://virt-export-claim.${namespace}.svc/volumes/source/disk.img.gz`,
    );
    // The Service virtctl --port-forward finds the pod by: port 443 to the server's 8443.
    const service = await core.readNamespacedService({ namespace, name: "virt-export-claim" });
    expect(service.spec?.ports?.[0]).toMatchObject({ port: 443, targetPort: 8443 });

    const external = status?.links?.external;
    const gzipUrl = formatUrl(external, "source", "gzip");
    expect(gzipUrl.startsWith(`${new URL(DASHBOARD_URL).origin}/api/export.kubevirt.io/v1/namespaces/`)).toBe(true);
    // The link's certificate is the dashboard's: virtctl verifies the server with it alone.
    const { ca } = await dashboardTls();
    expect(external?.cert.trim()).toBe(String(ca).trim());

    expect((await download(gzipUrl, external?.cert ?? "", "not-the-token")).status).toBe(401);
    const gz = await download(gzipUrl, external?.cert ?? "", TOKEN);
    expect(gz.status).toBe(200);
    const disk = gunzipSync(gz.body);
    expect(disk.length).toBe(64 * MIB);
    expect(disk.subarray(0, MARKER.length).toString()).toBe(MARKER);
    const raw = await download(formatUrl(external, "source", "raw"), external?.cert ?? "", TOKEN);
    expect(raw.status).toBe(200);
    expect(raw.body.equals(disk)).toBe(true);

    // The downloaded disk goes back in with virtctl image-upload, and the tiny guest reads what it held.
    await custom.createNamespacedCustomObject({
      group: "cdi.kubevirt.io",
      version: "v1beta1",
      namespace,
      plural: "datavolumes",
      body: uploadDataVolume(namespace, "uploaded-back", "64Mi"),
    });
    await expect
      .poll(async () => (await dataVolume(namespace, "uploaded-back"))?.status?.phase, poll)
      .toBe("UploadReady");
    await uploadTo("uploaded-back", disk);
    await custom.createNamespacedCustomObject({
      group: "kubevirt.io",
      version: "v1",
      namespace,
      plural: "virtualmachines",
      body: tinyVmOnClaim("reader", imageOf("tiny-guest"), "uploaded-back", namespace),
    });
    await expect
      .poll(async () => (await get("virtualmachineinstances", "reader"))?.status?.phase, poll)
      .toBe("Running");
    await inGuest(namespace, "reader", "dd if=/dev/vda bs=64 count=1 2>/dev/null | tr -d '\\000'; echo", MARKER);

    // A claim a running VM uses is not exported: the export waits, saying which pod holds it.
    await createExport("busy", "PersistentVolumeClaim", "", "uploaded-back");
    await expect
      .poll(async () => (await vmExport("busy"))?.status?.conditions?.[0]?.message ?? "", poll)
      .toMatch(/^pvc .*\/uploaded-back is in use by pod virt-launcher-reader-/);
    expect((await vmExport("busy"))?.status?.phase).toBe("Pending");
  });

  it("serves a stopped VM's manifests, which bring it back elsewhere, and it takes its disks back", async () => {
    const vm = tinyVmOnClaim("halted", imageOf("tiny-guest"), "source", namespace);
    await custom.createNamespacedCustomObject({
      group: "kubevirt.io",
      version: "v1",
      namespace,
      plural: "virtualmachines",
      body: { ...vm, spec: { ...vm.spec, runStrategy: "Halted" } },
    });
    await createExport("of-vm", "VirtualMachine", "kubevirt.io", "halted");
    await expect.poll(async () => (await vmExport("of-vm"))?.status?.phase, poll).toBe("Ready");
    const status = (await vmExport("of-vm"))?.status;
    expect(status?.virtualMachineName).toBe("halted");
    const external = status?.links?.external;
    const all = external?.manifests?.find((m) => m.type === "all")?.url ?? "";
    const manifests = await download(all, external?.cert ?? "", TOKEN, { accept: "application/json" });
    expect(manifests.status).toBe(200);
    const list = JSON.parse(manifests.body.toString()) as {
      kind: string;
      items: {
        kind: string;
        spec?: {
          dataVolumeTemplates?: { spec: { source: { http: { url: string; secretExtraHeaders: string[] } } } }[];
        };
      }[];
    };
    expect(list.kind).toBe("List");
    expect(list.items.map((i) => i.kind)).toEqual(["ConfigMap", "VirtualMachine"]);
    expect(list.items[1]?.spec?.dataVolumeTemplates?.[0]?.spec.source.http).toMatchObject({
      url: formatUrl(external, "source", "gzip"),
      secretExtraHeaders: ["header-secret-of-vm"],
    });
    const secretUrl = external?.manifests?.find((m) => m.type === "auth-header-secret")?.url ?? "";
    const secret = await download(secretUrl, external?.cert ?? "", TOKEN);
    expect(secret.body.toString()).toContain(`x-kubevirt-export-token:${TOKEN}`);

    // `virtctl vmexport download of-vm --manifest --include-secret`, as a client inside the cluster reads it (the
    // internal manifests, here through the external link's proxy), applied unchanged in another namespace: the VM
    // comes back, its disk imported from the export with the export's certificate and token header.
    const yaml = async (url: string) =>
      (await download(url, external?.cert ?? "", TOKEN, { accept: "application/yaml" })).body.toString();
    const dir = mkdtempSync(join(tmpdir(), "e2e-export-manifests-"));
    const internal = (url: string) => url.replace("/external/", "/internal/");
    writeFileSync(join(dir, "manifests.yaml"), `${await yaml(internal(secretUrl))}---\n${await yaml(internal(all))}`);
    await other.kubectl("-n", other.name, "apply", "-f", join(dir, "manifests.yaml"));
    rmSync(dir, { recursive: true });
    await other.kubectl(
      "-n",
      other.name,
      "patch",
      "vm",
      "halted",
      "--type=merge",
      "-p",
      '{"spec":{"runStrategy":"Always"}}',
    );
    await expect.poll(async () => (await dataVolume(other.name, "source"))?.status?.phase, poll).toBe("Succeeded");
    await expect
      .poll(async () => (await other.get("virtualmachineinstances", "halted"))?.status?.phase, poll)
      .toBe("Running");
    await inGuest(other.name, "halted", "dd if=/dev/vda bs=64 count=1 2>/dev/null | tr -d '\\000'; echo", MARKER);

    // Started, the VM takes its disk back: the export server goes and the export waits.
    await kubectl("-n", namespace, "patch", "vm", "halted", "--type=merge", "-p", '{"spec":{"runStrategy":"Always"}}');
    await expect.poll(async () => (await vmExport("of-vm"))?.status?.conditions?.[0]?.reason, poll).toBe("InUse");
    expect((await vmExport("of-vm"))?.status?.phase).toBe("Pending");
    await expect
      .poll(
        () => core.readNamespacedPod({ namespace, name: "virt-export-of-vm" }).then(() => "there", undefinedIfNotFound),
        poll,
      )
      .toBeUndefined();
  });

  it("deletes an export whose TTL is over, and what it made with it", async () => {
    await createExport("short", "PersistentVolumeClaim", "", "source", "20s");
    await expect.poll(async () => (await vmExport("short"))?.status?.ttlExpirationTime, poll).toBeDefined();
    await expect.poll(async () => vmExport("short"), poll).toBeUndefined();
    await expect
      .poll(
        () =>
          core.readNamespacedService({ namespace, name: "virt-export-short" }).then(() => "there", undefinedIfNotFound),
        poll,
      )
      .toBeUndefined();
  });
});
