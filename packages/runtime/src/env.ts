import { z } from "zod";

// Reading a process's environment: each app or service declares its variables
// in its own env.ts with these building blocks; nothing else reads process.env.

export const LOG_LEVELS = ["debug", "info", "warn", "error"] as const;

/** The variables every kubevirt-ts process understands. */
export function baseEnv(defaultOpsPort: number) {
  return {
    OPS_PORT: z.coerce.number().int().min(0).max(65535).default(defaultOpsPort),
    LOG_LEVEL: z.enum(LOG_LEVELS).default("info"),
  };
}

/**
 * Whether /metrics answers only a token allowed to get it (the chart's
 * metrics.requireAuthorization): virt-controller, virt-handler and virt-api.
 * "false" is for a Prometheus that cannot send a token; /metrics then lists
 * every tenant's VMs to anyone who reaches the ops port.
 */
export const metricsAuthorizationEnv = {
  METRICS_REQUIRE_AUTHORIZATION: z
    .enum(["true", "false"], { error: 'must be "true" or "false" (the chart\'s metrics.requireAuthorization)' })
    .default("true")
    .transform((v) => v === "true"),
};

/** Parses the environment, or throws one error naming every bad variable. */
export function parseEnv<T extends z.ZodType>(
  schema: T,
  source: Record<string, string | undefined> = process.env,
): z.infer<T> {
  const result = schema.safeParse(source);
  if (result.success) return result.data;
  const problems = result.error.issues.map((issue) => `${issue.path.join(".")}: ${issue.message}`);
  throw new Error(`invalid environment: ${problems.join("; ")}`);
}
