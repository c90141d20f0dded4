import { itRunsAsAService } from "@kubevirt-ts/control-plane/testing";

itRunsAsAService(new URL("../src/main.ts", import.meta.url), "becomes ready once its caches have synced", { NODE_NAME: "test-node" });
