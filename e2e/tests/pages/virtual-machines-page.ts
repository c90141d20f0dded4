import { type Locator, type Page, expect } from "@playwright/test";

export class VirtualMachinesPage {
  readonly page: Page;
  readonly heading: Locator;
  readonly signOutButton: Locator;
  readonly table: Locator;

  constructor(page: Page) {
    this.page = page;
    this.heading = page.getByRole("heading", { name: "Virtual machines" });
    this.signOutButton = page.getByRole("button", { name: "Sign out" });
    this.table = page.getByRole("table");
  }

  async goto(namespace: string): Promise<void> {
    await this.page.goto(`/vms?ns=${namespace}`);
    await expect(this.heading).toBeVisible();
  }

  async expectShown(): Promise<void> {
    await expect(this.page).toHaveURL(/\/vms/);
    await expect(this.heading).toBeVisible();
    await expect(this.signOutButton).toBeVisible();
  }

  /** The row of a VM; its cells are name, status, node, IP, vCPUs, memory and age after the checkbox. */
  row(name: string): Locator {
    return this.table.getByRole("row").filter({ has: this.page.getByRole("link", { name, exact: true }) });
  }

  async signOut(): Promise<void> {
    await this.signOutButton.click();
  }
}
