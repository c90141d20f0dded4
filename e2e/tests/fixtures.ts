import { test as base, expect, type Page } from "@playwright/test";
import { SignInPage } from "./pages/sign-in-page.ts";
import { VirtualMachinesPage } from "./pages/virtual-machines-page.ts";

// The shape of a service account token, signed by nobody: the cluster refuses it, so it signs nobody in.
export const sampleToken = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW06c2VydmljZWFjY291bnQ6ZTJlIn0.c2lnbmF0dXJl";

/** The token this tab keeps in sessionStorage, null when signed out. */
export function storedToken(page: Page): Promise<string | null> {
  return page.evaluate(() => window.sessionStorage.getItem("kubevirt-ts.token"));
}

export const test = base.extend<{ signInPage: SignInPage; virtualMachinesPage: VirtualMachinesPage; cspViolations: string[] }>({
  // Every test fails when the page broke the dashboard's Content-Security-Policy
  // (Chromium reports each refused script, style, image or connection).
  cspViolations: [
    async ({ page }, use) => {
      const violations: string[] = [];
      page.on("console", (message) => {
        if (message.text().includes("Content Security Policy")) violations.push(message.text());
      });
      await use(violations);
      expect(violations, "what the Content-Security-Policy refused").toEqual([]);
    },
    { auto: true },
  ],
  signInPage: async ({ page }, use) => {
    await use(new SignInPage(page));
  },
  virtualMachinesPage: async ({ page }, use) => {
    await use(new VirtualMachinesPage(page));
  },
});

export { expect } from "@playwright/test";
