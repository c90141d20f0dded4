import { runService } from "@kubevirt-ts/runtime";
import { env } from "./env.ts";

await runService({ name: "virt-launcher", opsPort: env.OPS_PORT, logLevel: env.LOG_LEVEL });
