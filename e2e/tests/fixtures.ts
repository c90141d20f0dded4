import { test as base, type Page } from "@playwright/test";
import { SignInPage } from "./pages/sign-in-page.ts";
import { VirtualMachinesPage } from "./pages/virtual-machines-page.ts";

// The shape of a service account token, signed by nobody: the cluster refuses it.
export const sampleToken = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW06c2VydmljZWFjY291bnQ6ZTJlIn0.c2lnbmF0dXJl";

/** The token this tab keeps in sessionStorage, null when signed out. */
export function storedToken(page: Page): Promise<string | null> {
  return page.evaluate(() => window.sessionStorage.getItem("kubevirt-ts.token"));
}

export const test = base.extend<{ signInPage: SignInPage; virtualMachinesPage: VirtualMachinesPage }>({
  signInPage: async ({ page }, use) => {
    await use(new SignInPage(page));
  },
  virtualMachinesPage: async ({ page }, use) => {
    await use(new VirtualMachinesPage(page));
  },
});

export { expect } from "@playwright/test";
