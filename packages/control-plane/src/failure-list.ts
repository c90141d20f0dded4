import { appendFileSync } from "node:fs";
import type { Reporter, TestCase } from "vitest/node";
import { failureListFile } from "./env.ts";

// Each failed test, one line, appended to a file (hack/test.sh names it in
// KUBEVIRT_TS_FAILURES, which turbo passes through to every suite):
// hack/test.sh prints that file last when the suite fails, so the end of a
// CI log (often all that is kept of it) says which tests failed and why.

/** Appends a failed test's line: its title and the first line of its error. */
export function recordFailure(file: string | undefined, title: string, error: string | undefined): void {
  if (!file) return;
  const reason = (error ?? "").split("\n").find((line) => line.trim() !== "") ?? "";
  appendFileSync(file, `FAILED ${title}: ${reason.trim().slice(0, 300)}\n`);
}

/** Vitest's reporter of failed tests. */
export class VitestFailureList implements Reporter {
  private readonly file: string | undefined;
  constructor(file: string | undefined = failureListFile()) {
    this.file = file;
  }

  onTestCaseResult(testCase: TestCase): void {
    const result = testCase.result();
    const name = `${testCase.module.relativeModuleId} › ${testCase.fullName}`;
    if (result.state === "failed") recordFailure(this.file, name, result.errors[0]?.message);
  }
}

/** The reporters of every vitest suite: vitest's own, and the failure list. */
export function reporters(): ["default", VitestFailureList] {
  return ["default", new VitestFailureList()];
}
