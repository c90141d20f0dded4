import { fileURLToPath } from "node:url";
import { startServiceProcess } from "@kubevirt-ts/control-plane/testing";
import { expect, it } from "vitest";

it("becomes ready once it reaches the kubevirt.io API, and exits 0 on SIGTERM", async () => {
  const service = await startServiceProcess(fileURLToPath(new URL("../src/main.ts", import.meta.url)));
  await expect.poll(() => service.probe("/readyz"), { timeout: 30_000 }).toBe(200);
  expect(await service.probe("/healthz")).toBe(200);
  expect(await service.terminate(), service.output()).toBe(0);
  expect(service.output()).toContain('"msg":"stopped"');
});
