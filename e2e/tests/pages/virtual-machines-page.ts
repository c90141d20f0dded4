import { type Locator, type Page, expect } from "@playwright/test";

export class VirtualMachinesPage {
  readonly page: Page;
  readonly heading: Locator;
  readonly signOutButton: Locator;
  readonly notice: Locator;

  constructor(page: Page) {
    this.page = page;
    this.heading = page.getByRole("heading", { name: "Virtual machines" });
    this.signOutButton = page.getByRole("button", { name: "Sign out" });
    this.notice = page.getByText("The list of virtual machines arrives with the kubevirt-ts API (issue 6)");
  }

  async expectShown(): Promise<void> {
    await expect(this.page).toHaveURL("/vms");
    await expect(this.heading).toBeVisible();
    await expect(this.notice).toBeVisible();
  }

  async signOut(): Promise<void> {
    await this.signOutButton.click();
  }
}
