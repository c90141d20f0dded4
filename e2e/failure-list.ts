import { appendFileSync } from "node:fs";
import type { Reporter as PlaywrightReporter, TestCase as PlaywrightTest, TestResult } from "@playwright/test/reporter";
import type { Reporter as VitestReporter, TestCase } from "vitest/node";

// Each failed test, one line, appended to a file (hack/test.sh names it in
// KUBEVIRT_TS_FAILURES, which the suites' configs pass on): hack/test.sh
// prints that file last when the suite fails, so the end of a CI log (often
// all that is kept of it) says which tests failed and why.

function record(file: string | undefined, title: string, error: string | undefined): void {
  if (!file) return;
  const reason = (error ?? "").split("\n").find((line) => line.trim() !== "") ?? "";
  appendFileSync(file, `FAILED ${title}: ${reason.trim().slice(0, 300)}\n`);
}

/** Vitest: the cluster and chaos suites. */
export class VitestFailureList implements VitestReporter {
  private readonly file: string | undefined;
  constructor(file: string | undefined) {
    this.file = file;
  }

  onTestCaseResult(testCase: TestCase): void {
    const result = testCase.result();
    if (result.state === "failed") record(this.file, `${testCase.module.relativeModuleId} › ${testCase.fullName}`, result.errors[0]?.message);
  }
}

/** Playwright: the dashboard suite. */
export class PlaywrightFailureList implements PlaywrightReporter {
  private readonly file: string | undefined;
  constructor(options: { file?: string } = {}) {
    this.file = options.file;
  }

  onTestEnd(test: PlaywrightTest, result: TestResult): void {
    if (result.status !== test.expectedStatus) record(this.file, test.titlePath().filter(Boolean).join(" › "), result.error?.message ?? result.status);
  }
}
