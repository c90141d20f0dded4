import { copyFile, mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Pki, freePort } from "@kubevirt-ts/control-plane";
import { itRunsAsAService } from "@kubevirt-ts/control-plane/testing";
import { ConsoleServer } from "@kubevirt-ts/kubevirt-api";

// The handler as its own process, with the console server's certificate in
// place as the chart mounts it.
async function consoleTls(): Promise<Record<string, string>> {
  const dir = await mkdtemp(join(tmpdir(), "handler-tls-"));
  const pki = new Pki(dir);
  await pki.createCa("console-ca"); // writes ca.crt into dir
  const pair = await pki.issue({ name: "server", commonName: ConsoleServer.handlerIdentity, usage: "server", hosts: [ConsoleServer.handlerIdentity] });
  await copyFile(pair.cert, join(dir, "tls.crt"));
  await copyFile(pair.key, join(dir, "tls.key"));
  return { NODE_NAME: "test-node", CONSOLE_TLS_DIR: dir, CONSOLE_PORT: String(await freePort()) };
}

itRunsAsAService(new URL("../src/main.ts", import.meta.url), "becomes ready once its caches have synced", consoleTls);
