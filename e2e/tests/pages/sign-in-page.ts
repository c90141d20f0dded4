import { type Locator, type Page, expect } from "@playwright/test";

export class SignInPage {
  readonly page: Page;
  readonly heading: Locator;
  readonly tokenField: Locator;
  readonly signInButton: Locator;
  readonly error: Locator;

  constructor(page: Page) {
    this.page = page;
    this.heading = page.getByRole("heading", { name: "Sign in" });
    this.tokenField = page.getByLabel("Kubernetes bearer token");
    this.signInButton = page.getByRole("button", { name: "Sign in" });
    this.error = page.getByRole("main").getByRole("alert");
  }

  /** Opens the page and waits until it reacts to input (the button is enabled once hydrated). */
  async goto(): Promise<void> {
    await this.page.goto("/");
    await this.expectShown();
  }

  async expectShown(): Promise<void> {
    await expect(this.page).toHaveURL("/");
    await expect(this.heading).toBeVisible();
    await expect(this.signInButton).toBeEnabled();
  }

  async signIn(token: string): Promise<void> {
    await this.tokenField.fill(token);
    await this.signInButton.click();
  }
}
