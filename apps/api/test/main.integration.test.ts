import { randomBytes } from "node:crypto";
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "@kubevirt-ts/control-plane";
import { itRunsAsAService, tlsSecretDir } from "@kubevirt-ts/control-plane/testing";
import { ConsoleServer } from "@kubevirt-ts/node-contract";

// The API as its own process, with the certificates the chart mounts: its
// client certificate for the handlers, the webhooks' serving certificate and the upload master key.
itRunsAsAService(
  new URL("../src/main.ts", import.meta.url),
  "becomes ready once it can list VMIs through the kubevirt.io API",
  async () => ({
    CONSOLE_TLS_DIR: await tlsSecretDir(ConsoleServer.apiIdentity, "client"),
    WEBHOOK_TLS_DIR: await tlsSecretDir("virt-api.kubevirt-ts.svc", "server", ["virt-api.kubevirt-ts.svc"]),
    UPLOAD_MASTER_KEY_FILE: await masterKeyFile(),
    PORT: String(await freePort()),
    WEBHOOK_PORT: String(await freePort()),
    HOST: "127.0.0.1",
  }),
);

/** A file as the chart's Secret kubevirt-ts-upload-master-key mounts it: 32 random bytes. */
async function masterKeyFile(): Promise<string> {
  const file = join(await mkdtemp(join(tmpdir(), "upload-master-")), "key");
  await writeFile(file, randomBytes(32));
  return file;
}
