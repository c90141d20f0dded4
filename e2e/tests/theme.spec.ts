import { expect, test } from "./fixtures.ts";

test.describe("dark colour scheme", () => {
  test.use({ colorScheme: "dark" });

  test("the dashboard follows a dark system preference", async ({ page, signInPage }) => {
    await signInPage.goto();

    await expect(page.locator("body")).toHaveCSS("background-color", "rgb(20, 22, 26)");
  });
});

test.describe("light colour scheme", () => {
  test.use({ colorScheme: "light" });

  test("the dashboard follows a light system preference", async ({ page, signInPage }) => {
    await signInPage.goto();

    await expect(page.locator("body")).toHaveCSS("background-color", "rgb(246, 247, 249)");
  });
});
