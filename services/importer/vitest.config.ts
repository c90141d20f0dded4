import { reporters } from "@kubevirt-ts/control-plane/failure-list";
import { unitAndHostIntegrationProjects } from "@kubevirt-ts/control-plane/vitest-config";
import { defineConfig } from "vitest/config";

export default defineConfig({ test: { projects: unitAndHostIntegrationProjects, reporters: reporters() } });
