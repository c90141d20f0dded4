import {
  EXPORT_OPS_PORT,
  ExportEnv,
  type ExportManifests,
  IMPORTER_PROGRESS_PORT,
  IMPORTER_SOURCES,
  ImporterDir,
  ImporterEnv,
} from "@kubevirt-ts/node-contract";
import { baseEnv, parseEnv } from "@kubevirt-ts/runtime";
import { z } from "zod";

/** Whether the controller made this pod an export server (it set ExportEnv.volumes), not an importer. */
export const isExportServer = (): boolean => process.env[ExportEnv.volumes] !== undefined;

// What the controller tells the importer (node-contract's importer-layout.ts).
export const importerEnv = () =>
  parseEnv(
    z.object({
      ...baseEnv(IMPORTER_PROGRESS_PORT),
      [ImporterEnv.source]: z.enum(IMPORTER_SOURCES),
      [ImporterEnv.endpoint]: z.string().default(""),
      [ImporterEnv.extraHeaders]: z
        .string()
        .default("[]")
        .transform((v, ctx) => {
          const parsed = z.array(z.string()).safeParse(JSON.parse(v));
          if (!parsed.success)
            ctx.addIssue({ code: "custom", message: "must be a JSON array of 'Name: value' strings" });
          return parsed.data ?? [];
        }),
      [ImporterEnv.accessKeyId]: z.string().optional(),
      [ImporterEnv.secretKey]: z.string().optional(),
      [ImporterEnv.diskBytes]: z.coerce.number().int().positive(),
      [ImporterEnv.targetDir]: z.string().default(ImporterDir.target),
      [ImporterEnv.sourceDir]: z.string().default(ImporterDir.source),
      [ImporterEnv.uploadKey]: z.string().default(""),
      [ImporterEnv.certDir]: z.string().optional(),
      [ImporterEnv.secretHeadersDir]: z.string().optional(),
      [ImporterEnv.sourceInUse]: z
        .enum(["true", "false"])
        .default("false")
        .transform((v) => v === "true"),
      /** The API server's address, as the kubelet sets it: no redirect of the http source may lead there. */
      KUBERNETES_SERVICE_HOST: z.string().optional(),
    }),
  );

// What the controller tells an export server (node-contract's export-layout.ts).
export const exportEnv = () =>
  parseEnv(
    z.object({
      ...baseEnv(EXPORT_OPS_PORT),
      [ExportEnv.volumes]: z.string().transform((v, ctx) => {
        const parsed = z
          .array(z.object({ name: z.string().min(1), dir: z.string().min(1) }))
          .max(256)
          .safeParse(JSON.parse(v));
        if (!parsed.success) ctx.addIssue({ code: "custom", message: "must be a JSON array of { name, dir }" });
        return parsed.data ?? [];
      }),
      [ExportEnv.tokenFile]: z.string().min(1),
      [ExportEnv.certFile]: z.string().min(1),
      [ExportEnv.keyFile]: z.string().min(1),
      [ExportEnv.manifests]: z
        .string()
        .optional()
        .transform((v) => (v === undefined || v === "" ? undefined : (JSON.parse(v) as ExportManifests))),
      [ExportEnv.deadline]: z.iso.datetime({ offset: true }),
    }),
  );
