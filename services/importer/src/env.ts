import { IMPORTER_PROGRESS_PORT, IMPORTER_SOURCES, ImporterDir, ImporterEnv } from "@kubevirt-ts/node-contract";
import { baseEnv, parseEnv } from "@kubevirt-ts/runtime";
import { z } from "zod";

// What the controller tells the importer (node-contract's importer-layout.ts).
export const env = parseEnv(
  z.object({
    ...baseEnv(IMPORTER_PROGRESS_PORT),
    [ImporterEnv.source]: z.enum(IMPORTER_SOURCES),
    [ImporterEnv.endpoint]: z.string().default(""),
    [ImporterEnv.extraHeaders]: z
      .string()
      .default("[]")
      .transform((v, ctx) => {
        const parsed = z.array(z.string()).safeParse(JSON.parse(v));
        if (!parsed.success) ctx.addIssue({ code: "custom", message: "must be a JSON array of 'Name: value' strings" });
        return parsed.data ?? [];
      }),
    [ImporterEnv.accessKeyId]: z.string().optional(),
    [ImporterEnv.secretKey]: z.string().optional(),
    [ImporterEnv.diskBytes]: z.coerce.number().int().positive(),
    [ImporterEnv.targetDir]: z.string().default(ImporterDir.target),
    [ImporterEnv.sourceDir]: z.string().default(ImporterDir.source),
    [ImporterEnv.uploadKey]: z.string().default(""),
    [ImporterEnv.sourceInUse]: z
      .enum(["true", "false"])
      .default("false")
      .transform((v) => v === "true"),
    /** The API server's address, as the kubelet sets it: no redirect of the http source may lead there. */
    KUBERNETES_SERVICE_HOST: z.string().optional(),
  }),
);
