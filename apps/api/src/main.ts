import { kubevirtApiCheck, loadKubeConfig } from "@kubevirt-ts/kube";
import { runService } from "@kubevirt-ts/runtime";
import { env } from "./env.ts";

const kubeConfig = loadKubeConfig();

await runService({
  name: "virt-api",
  opsPort: env.OPS_PORT,
  logLevel: env.LOG_LEVEL,
  checks: () => ({ apiServer: kubevirtApiCheck(kubeConfig) }),
});
