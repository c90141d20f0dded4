import { ConsoleServer } from "@kubevirt-ts/node-contract";
import { EVICTION_STRATEGIES } from "@kubevirt-ts/kubevirt-api";
import { baseEnv, metricsAuthorizationEnv, parseEnv } from "@kubevirt-ts/runtime";
import { z } from "zod";

const guestImage = z.object({
  name: z.string().min(1),
  image: z.string().min(1),
  description: z.string().default(""),
  /** How it boots: a disk that boots by itself, or a kernel boot image. */
  boot: z.enum(["disk", "kernel"]).default("disk"),
});
export type GuestImage = z.infer<typeof guestImage>;

export const env = parseEnv(
  z
    .object({
      ...baseEnv(9103),
      ...metricsAuthorizationEnv,
      /** tRPC (with SSE subscriptions) and the console and VNC websockets. */
      PORT: z.coerce.number().int().min(0).max(65535).default(8080),
      HOST: z.string().default("0.0.0.0"),
      /**
       * The upload proxy (CDI's uploadproxy role), behind the dashboard's gateway; served with the webhooks' TLS
       * directory only.
       */
      UPLOAD_PORT: z.coerce.number().int().min(0).max(65535).default(8082),
      /** The admission webhooks, over TLS (the API server calls them). */
      WEBHOOK_PORT: z.coerce.number().int().min(0).max(65535).default(8443),
      /**
       * tls.crt and tls.key of the webhooks' and the subresource API's serving certificate; neither is served when
       * unset.
       */
      WEBHOOK_TLS_DIR: z.string().optional(),
      /**
       * The upload master key's file (the chart's Secret kubevirt-ts-upload-master-key): the upload proxy derives each
       * upload pod's key from it. Needed with WEBHOOK_TLS_DIR.
       */
      UPLOAD_MASTER_KEY_FILE: z.string().min(1).optional(),
      /**
       * The CA (PEM file) of the client certificate the API server presents to the webhooks (the chart's
       * webhooks.clientCA); unset: any caller is answered (ADR 7).
       */
      WEBHOOK_CLIENT_CA_FILE: z.string().optional(),
      /** Common names that certificate may have, comma-separated (webhooks.clientNames); empty: any the CA signed. */
      WEBHOOK_CLIENT_NAMES: z
        .string()
        .default("")
        .transform((text) =>
          text
            .split(",")
            .map((name) => name.trim())
            .filter((name) => name !== ""),
        ),
      /** The version the subresource API reports (.../version), the chart's appVersion. */
      VERSION: z.string().default("dev"),
      /** ca.crt, tls.crt and tls.key of the API's client certificate for the handlers' console servers. */
      CONSOLE_TLS_DIR: z.string().default("/etc/kubevirt-ts/console-tls"),
      /**
       * The cluster's eviction strategy, for VMIs that name none: KubeVirt's CR setting, the chart's evictionStrategy.
       */
      EVICTION_STRATEGY: z.enum(EVICTION_STRATEGIES).default("None"),
      /** The namespace the handlers run in (the chart's release namespace). */
      HANDLER_NAMESPACE: z.string().default("kubevirt-ts"),
      HANDLER_PORT: z.coerce.number().int().min(1).max(65535).default(ConsoleServer.port),
      /**
       * The VM graphs' store (metrics-store.ts): how often the handlers are sampled, how long points are kept, for how
       * many VMIs at most.
       */
      METRICS_SAMPLE_SECONDS: z.coerce.number().int().min(5).max(300).default(15),
      METRICS_RETENTION_MINUTES: z.coerce.number().int().min(1).max(1440).default(60),
      METRICS_MAX_VMIS: z.coerce.number().int().min(0).default(1000),
      /**
       * A Prometheus that scrapes the handlers (the chart's metrics.prometheusUrl): the graphs come from it, and the
       * store is not kept.
       */
      PROMETHEUS_URL: z.url({ protocol: /^https?$/ }).optional(),
      /**
       * How often that Prometheus scrapes the handlers (the chart's metrics.scrapeSeconds): the graphs' rates span four
       * scrapes.
       */
      PROMETHEUS_SCRAPE_SECONDS: z.coerce.number().int().min(1).max(600).default(30),
      /** The guest images the dashboard offers to boot, as JSON: [{ name, image, description, boot }]. */
      GUEST_IMAGES: z
        .string()
        .default("[]")
        .transform((text, ctx) => {
          try {
            return z.array(guestImage).parse(JSON.parse(text));
          } catch (error) {
            ctx.addIssue({
              code: "custom",
              message:
                "must be a JSON list of { name, image, description, boot " +
                `}: ${error instanceof Error ? error.message : String(error)}`,
            });
            return z.NEVER;
          }
        }),
    })
    .refine((e) => e.WEBHOOK_TLS_DIR === undefined || e.UPLOAD_MASTER_KEY_FILE !== undefined, {
      path: ["UPLOAD_MASTER_KEY_FILE"],
      message:
        "must name the upload master key's file when WEBHOOK_TLS_DIR is set (the upload proxy serves then; " +
        "the chart mounts its Secret kubevirt-ts-upload-master-key at /etc/kubevirt-ts/upload-master-key/key)",
    }),
);
