import { itRunsAsAService } from "@kubevirt-ts/control-plane/testing";

itRunsAsAService(new URL("../src/main.ts", import.meta.url), "becomes ready once its caches have synced", {
  LAUNCHER_IMAGE: "kubevirt-ts.local/virt-launcher:test",
  // The lease lives in a namespace every API server has.
  POD_NAMESPACE: "default",
});
