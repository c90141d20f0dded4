import { itRunsAsAService } from "@kubevirt-ts/control-plane/testing";

itRunsAsAService(new URL("../src/main.ts", import.meta.url), "becomes ready once it can list VMIs through the kubevirt.io API");
