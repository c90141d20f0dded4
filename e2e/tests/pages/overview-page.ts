import { type Locator, type Page, expect } from "@playwright/test";

/** The overview, where signing in lands. */
export class OverviewPage {
  readonly page: Page;
  readonly heading: Locator;
  readonly signOutButton: Locator;

  constructor(page: Page) {
    this.page = page;
    this.heading = page.getByRole("heading", { name: "Overview", level: 1 });
    this.signOutButton = page.getByRole("button", { name: "Sign out" });
  }

  async expectShown(): Promise<void> {
    await expect(this.page).toHaveURL(/\/overview/);
    await expect(this.heading).toBeVisible();
    await expect(this.signOutButton).toBeVisible();
  }
}
