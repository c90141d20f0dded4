import type { Reporter, TestCase, TestResult } from "@playwright/test/reporter";
import { recordFailure } from "@kubevirt-ts/control-plane/failure-list";

/**
 * Playwright's reporter of failed tests, into the list the vitest suites write too (control-plane's failure-list.ts).
 */
export class PlaywrightFailureList implements Reporter {
  private readonly file: string | undefined;
  constructor(options: { file?: string } = {}) {
    this.file = options.file;
  }

  onTestEnd(test: TestCase, result: TestResult): void {
    if (result.status !== test.expectedStatus)
      recordFailure(this.file, test.titlePath().filter(Boolean).join(" › "), result.error?.message ?? result.status);
  }
}
