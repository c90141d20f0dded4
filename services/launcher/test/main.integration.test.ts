import { fileURLToPath } from "node:url";
import { startServiceProcess } from "@kubevirt-ts/control-plane/testing";
import { expect, it } from "vitest";

it("serves its probes and exits 0 on SIGTERM", async () => {
  const service = await startServiceProcess(fileURLToPath(new URL("../src/main.ts", import.meta.url)));
  await expect.poll(() => service.probe("/readyz"), { timeout: 30_000 }).toBe(200);
  expect(await service.terminate(), service.output()).toBe(0);
});
