/** This process's environment, which the processes it starts for tests inherit. */
export function inheritedEnv(): Record<string, string | undefined> {
  return { ...process.env };
}
