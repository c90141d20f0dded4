import { describe, expect, it } from "vitest";
import { tinyVmOnDataVolume } from "../manifests.ts";
import { core, custom, imageOf, suiteNamespace } from "./cluster.ts";
import { inGuest } from "./console.ts";
import { DASHBOARD_URL } from "./dashboard.ts";
import {
  dataVolume as dataVolumeIn,
  qcow2With,
  toUploadProxy,
  uploadDataVolume as uploadDataVolumeIn,
  uploadToken as uploadTokenIn,
} from "./datavolumes.ts";

// Uploads, as virtctl image-upload makes them, step by step: a DataVolume
// whose source is upload; its phase UploadReady (and CDI's annotations on its
// claim); an UploadTokenRequest, asked of the Kubernetes API server as a
// namespace editor (kubevirt-ts's aggregated upload.cdi.kubevirt.io); a HEAD
// to the async path, then the image POSTed with the token to the upload
// proxy at the dashboard's address (virtctl's --uploadproxy-url); the claim's
// pod phase Succeeded. The tiny guest then reads what the image held.

const { name: namespace, kubectl, get } = suiteNamespace("e2e-upload");
const poll = { timeout: 300_000, interval: 1_000 };
const MARKER = `kubevirt-ts-upload-${Date.now().toString(36)}`;

const claimAnnotations = async (name: string) =>
  (await core.readNamespacedPersistentVolumeClaim({ namespace, name })).metadata?.annotations ?? {};
const dataVolume = (name: string) => dataVolumeIn(namespace, name);
const uploadDataVolume = (name: string, size: string) => uploadDataVolumeIn(namespace, name, size);
const uploadToken = (pvcName: string) => uploadTokenIn(namespace, kubectl, pvcName);

describe("an upload into a DataVolume, as virtctl image-upload makes it", () => {
  it("tells every user the upload proxy's address in CDIConfig: virtctl needs no --uploadproxy-url", async () => {
    // virtctl reads cdiconfigs/config as whoever runs it: any authenticated user may (CDI's config-reader).
    expect(
      (
        await kubectl(
          "auth",
          "can-i",
          "get",
          "cdiconfigs.cdi.kubevirt.io",
          `--as=system:serviceaccount:${namespace}:default`,
        )
      ).trim(),
    ).toBe("yes");
    await expect
      .poll(() => kubectl("get", "cdiconfigs.cdi.kubevirt.io", "config", "-o", "jsonpath={.status.uploadProxyURL}"), {
        timeout: 30_000,
        interval: 1_000,
      })
      .toBe(new URL(DASHBOARD_URL).origin);
  });

  it("takes a qcow2 image through the upload proxy, and a VM copies and boots from it", async () => {
    await custom.createNamespacedCustomObject({
      group: "cdi.kubevirt.io",
      version: "v1beta1",
      namespace,
      plural: "datavolumes",
      body: uploadDataVolume("uploaded", "64Mi"),
    });
    await expect.poll(async () => (await dataVolume("uploaded"))?.status?.phase, poll).toBe("UploadReady");
    expect(await claimAnnotations("uploaded")).toMatchObject({
      "cdi.kubevirt.io/storage.upload.target": "",
      "cdi.kubevirt.io/storage.pod.ready": "true",
    });

    const token = await uploadToken("uploaded");
    expect(token).not.toBe("");
    // virtctl asks whether the async path is served, and uploads there when it is.
    expect((await toUploadProxy("HEAD", "/v1beta1/upload-async", token)).status).toBe(200);
    expect(await toUploadProxy("POST", "/v1beta1/upload", "not-a-token", Buffer.alloc(512))).toMatchObject({
      status: 401,
    });
    expect(await toUploadProxy("POST", "/v1beta1/upload-async", token, qcow2With(`${MARKER}-upload`))).toMatchObject({
      status: 200,
    });
    await expect
      .poll(async () => (await claimAnnotations("uploaded"))["cdi.kubevirt.io/storage.pod.phase"], poll)
      .toBe("Succeeded");
    await expect.poll(async () => (await dataVolume("uploaded"))?.status?.phase, poll).toBe("Succeeded");

    // A VM whose disk is a copy of the uploaded image, as the dashboard's create form makes it.
    await custom.createNamespacedCustomObject({
      group: "kubevirt.io",
      version: "v1",
      namespace,
      plural: "virtualmachines",
      body: tinyVmOnDataVolume(
        "from-upload",
        imageOf("tiny-guest"),
        { source: { pvc: { namespace, name: "uploaded" } }, storage: { resources: { requests: { storage: "64Mi" } } } },
        namespace,
      ),
    });
    await expect
      .poll(async () => (await get("virtualmachineinstances", "from-upload"))?.status?.phase, poll)
      .toBe("Running");
    await inGuest(
      namespace,
      "from-upload",
      "dd if=/dev/vda bs=64 count=1 2>/dev/null | tr -d '\\000'; echo; echo read-$((40+5))",
      `${MARKER}-upload`,
    );
  });

  it("refuses what is not a disk image, keeping the DataVolume ready for a real one", async () => {
    await custom.createNamespacedCustomObject({
      group: "cdi.kubevirt.io",
      version: "v1beta1",
      namespace,
      plural: "datavolumes",
      body: uploadDataVolume("not-a-disk", "64Mi"),
    });
    await expect.poll(async () => (await dataVolume("not-a-disk"))?.status?.phase, poll).toBe("UploadReady");
    const token = await uploadToken("not-a-disk");
    const refused = await toUploadProxy(
      "POST",
      "/v1beta1/upload",
      token,
      Buffer.from("#!/bin/sh\necho this is a script, not a disk\n"),
    );
    expect(refused.status).toBe(400);
    expect(refused.text).toMatch(/the upload is not a disk image/);
    expect((await dataVolume("not-a-disk"))?.status?.phase).toBe("UploadReady");
    // Still ready for a real image, which then goes in.
    expect(await toUploadProxy("POST", "/v1beta1/upload", token, qcow2With(`${MARKER}-second-try`))).toMatchObject({
      status: 200,
    });
    await expect.poll(async () => (await dataVolume("not-a-disk"))?.status?.phase, poll).toBe("Succeeded");
  });
});
