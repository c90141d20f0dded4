import { test as base, expect, type Page } from "@playwright/test";
import { tokenOf } from "./cluster-users.ts";
import { OverviewPage } from "./pages/overview-page.ts";
import { SignInPage } from "./pages/sign-in-page.ts";
import { VirtualMachinesPage } from "./pages/virtual-machines-page.ts";

// The shape of a service account token, signed by nobody: the cluster refuses it, so it signs nobody in.
export const sampleToken = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW06c2VydmljZWFjY291bnQ6ZTJlIn0.c2lnbmF0dXJl";

/** The token this tab keeps in sessionStorage, null when signed out. */
export function storedToken(page: Page): Promise<string | null> {
  return page.evaluate(() => window.sessionStorage.getItem("kubevirt-ts.token"));
}

/** Signs in on the local cluster as one of its two dashboard users and waits for the overview, where it lands. */
export async function signIn(page: Page, user: "admin" | "viewer" = "admin"): Promise<void> {
  await page.goto("/");
  await expect(page.getByRole("button", { name: "Sign in" })).toBeEnabled();
  await page.getByLabel("Kubernetes bearer token").fill(tokenOf(user));
  await page.getByRole("button", { name: "Sign in" }).click();
  await expect(page.getByRole("heading", { name: "Overview", level: 1 })).toBeVisible();
}

export const test = base.extend<{
  signInPage: SignInPage;
  overviewPage: OverviewPage;
  virtualMachinesPage: VirtualMachinesPage;
  cspViolations: string[];
}>({
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
  overviewPage: async ({ page }, use) => {
    await use(new OverviewPage(page));
  },
  virtualMachinesPage: async ({ page }, use) => {
    await use(new VirtualMachinesPage(page));
  },
});

export { expect } from "@playwright/test";
