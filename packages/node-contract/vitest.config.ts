import { reporters } from "@kubevirt-ts/control-plane/failure-list";
import { unitAndIntegrationProjects } from "@kubevirt-ts/control-plane/vitest-config";
import { defineConfig } from "vitest/config";

export default defineConfig({ test: { projects: unitAndIntegrationProjects, reporters: reporters() } });
