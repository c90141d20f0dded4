/** This process's environment, which the processes it starts for tests inherit. */
export function inheritedEnv(): Record<string, string | undefined> {
  return { ...process.env };
}

/** The file hack/test.sh collects failed tests in, when it runs the suites (failure-list.ts). */
export function failureListFile(): string | undefined {
  return process.env.KUBEVIRT_TS_FAILURES;
}
