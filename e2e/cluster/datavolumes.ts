import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { request } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { custom, editorToken, undefinedIfNotFound } from "./cluster.ts";
import { DASHBOARD_URL, dashboardTls } from "./dashboard.ts";

// Uploads as virtctl image-upload makes them: a DataVolume whose source is
// upload, an UploadTokenRequest asked of the Kubernetes API server as a
// namespace editor, and the image sent with its token to the upload proxy at
// the dashboard's address (virtctl's --uploadproxy-url).

export interface DataVolume {
  metadata: { ownerReferences?: object[] };
  status?: { phase?: string };
}

export const dataVolume = (namespace: string, name: string) =>
  custom
    .getNamespacedCustomObject({ group: "cdi.kubevirt.io", version: "v1beta1", namespace, plural: "datavolumes", name })
    .then((o) => o as DataVolume, undefinedIfNotFound);

const MIB = 1024 * 1024;

/** A qcow2 image of 8 MiB whose first bytes are the text. */
export function qcow2With(text: string): Buffer {
  const dir = mkdtempSync(join(tmpdir(), "e2e-upload-"));
  const content = Buffer.alloc(8 * MIB);
  content.write(text);
  writeFileSync(join(dir, "disk.raw"), content);
  execFileSync("qemu-img", ["convert", "-f", "raw", "-O", "qcow2", join(dir, "disk.raw"), join(dir, "disk.qcow2")]);
  const image = readFileSync(join(dir, "disk.qcow2"));
  rmSync(dir, { recursive: true });
  return image;
}

/** What virtctl image-upload dv <name> --size=<size> creates. */
export const uploadDataVolume = (namespace: string, name: string, size: string) => ({
  apiVersion: "cdi.kubevirt.io/v1beta1",
  kind: "DataVolume",
  metadata: { name, namespace },
  spec: { source: { upload: {} }, storage: { resources: { requests: { storage: size } } } },
});

/** An UploadTokenRequest, created as a namespace editor with kubectl as virtctl creates it; its token. */
export async function uploadToken(
  namespace: string,
  kubectl: (...args: string[]) => Promise<string>,
  pvcName: string,
): Promise<string> {
  const token = await editorToken(namespace);
  const dir = mkdtempSync(join(tmpdir(), "e2e-upload-token-"));
  const file = join(dir, "request.json");
  writeFileSync(
    file,
    JSON.stringify({
      apiVersion: "upload.cdi.kubevirt.io/v1beta1",
      kind: "UploadTokenRequest",
      metadata: { name: "token-for-virtctl", namespace },
      spec: { pvcName },
    }),
  );
  try {
    const created = JSON.parse(await kubectl(`--token=${token}`, "create", "-f", file, "-o", "json")) as {
      status?: { token?: string };
    };
    return created.status?.token ?? "";
  } finally {
    rmSync(dir, { recursive: true });
  }
}

/** A request to the upload proxy at the dashboard's address; its status and text. */
export async function toUploadProxy(
  method: "HEAD" | "POST",
  path: string,
  token: string,
  body?: Buffer,
): Promise<{ status: number; text: string }> {
  const tls = await dashboardTls();
  return new Promise((resolve, reject) => {
    const req = request(
      new URL(path, DASHBOARD_URL),
      {
        method,
        ...tls,
        headers: {
          authorization: `Bearer ${token}`,
          "content-type": "application/octet-stream",
          ...(body ? { "content-length": String(body.length) } : {}),
        },
      },
      (res) => {
        let text = "";
        res
          .setEncoding("utf8")
          .on("data", (c: string) => (text += c))
          .on("end", () => {
            resolve({ status: res.statusCode ?? 0, text });
          });
      },
    );
    req.on("error", reject).end(body);
  });
}
