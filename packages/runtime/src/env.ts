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

/** Parses the environment, or throws one error naming every bad variable. */
export function parseEnv<T extends z.ZodType>(schema: T, source: Record<string, string | undefined> = process.env): z.infer<T> {
  const result = schema.safeParse(source);
  if (result.success) return result.data;
  const problems = result.error.issues.map((issue) => `${issue.path.join(".")}: ${issue.message}`);
  throw new Error(`invalid environment: ${problems.join("; ")}`);
}
