import { freePort } from "@kubevirt-ts/control-plane";
import { itRunsAsAService, tlsSecretDir } from "@kubevirt-ts/control-plane/testing";
import { ConsoleServer } from "@kubevirt-ts/kubevirt-api";

// The API as its own process, with the certificates the chart mounts: its
// client certificate for the handlers, and the webhooks' serving certificate.
itRunsAsAService(new URL("../src/main.ts", import.meta.url), "becomes ready once it can list VMIs through the kubevirt.io API", async () => ({
  CONSOLE_TLS_DIR: await tlsSecretDir(ConsoleServer.apiIdentity, "client"),
  WEBHOOK_TLS_DIR: await tlsSecretDir("virt-api.kubevirt-ts.svc", "server", ["virt-api.kubevirt-ts.svc"]),
  PORT: String(await freePort()),
  WEBHOOK_PORT: String(await freePort()),
  HOST: "127.0.0.1",
}));
