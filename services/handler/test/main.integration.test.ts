import { freePort } from "@kubevirt-ts/control-plane";
import { itRunsAsAService, tlsSecretDir } from "@kubevirt-ts/control-plane/testing";
import { ConsoleServer } from "@kubevirt-ts/node-contract";

// The handler as its own process, with the console server's certificate in
// place as the chart mounts it.
itRunsAsAService(new URL("../src/main.ts", import.meta.url), "becomes ready once its caches have synced", async () => ({
  NODE_NAME: "test-node",
  CONSOLE_TLS_DIR: await tlsSecretDir(ConsoleServer.handlerIdentity, "server", [ConsoleServer.handlerIdentity]),
  CONSOLE_PORT: String(await freePort()),
}));
