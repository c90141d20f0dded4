import { expect, sampleToken, storedToken, test } from "./fixtures.ts";

test.describe("signing in with a bearer token", () => {
  test("the sign-in page has a labelled token field and a sign-in button", async ({ page, signInPage }) => {
    await signInPage.goto();

    await expect(page).toHaveTitle("Sign in · kubevirt-ts");
    await expect(signInPage.tokenField).toBeVisible();
    await expect(signInPage.tokenField).toBeEditable();
    await expect(signInPage.tokenField).toHaveAccessibleDescription(/kubectl create token/);
    await expect(signInPage.signInButton).toBeVisible();
  });

  test("signing in keeps the token in the tab and lands on the VM page", async ({
    page,
    signInPage,
    virtualMachinesPage,
  }) => {
    await signInPage.goto();

    await signInPage.signIn(`Bearer ${sampleToken}\n`);

    await virtualMachinesPage.expectShown();
    expect(await storedToken(page)).toBe(sampleToken);
  });

  test("an empty token is refused with a message next to the field", async ({ page, signInPage }) => {
    await signInPage.goto();

    await signInPage.signIn("   ");

    await expect(signInPage.error).toHaveText(/Paste a token first/);
    await expect(signInPage.tokenField).toHaveAttribute("aria-invalid", "true");
    await expect(signInPage.tokenField).toBeFocused();
    await expect(page).toHaveURL("/");
    expect(await storedToken(page)).toBeNull();
  });

  test("signing out forgets the token and returns to the sign-in page", async ({
    page,
    signInPage,
    virtualMachinesPage,
  }) => {
    await signInPage.goto();
    await signInPage.signIn(sampleToken);
    await virtualMachinesPage.expectShown();

    await virtualMachinesPage.signOut();

    await signInPage.expectShown();
    await expect.poll(() => storedToken(page)).toBeNull();
  });

  test("the VM page sends a visitor without a token to sign in", async ({ page, signInPage }) => {
    await page.goto("/vms");

    await signInPage.expectShown();
  });

  test("the sign-in page works with the keyboard alone", async ({ page, signInPage, virtualMachinesPage }) => {
    await signInPage.goto();

    await page.keyboard.press("Tab");
    await expect(signInPage.tokenField).toBeFocused();
    await page.keyboard.type(sampleToken);
    await page.keyboard.press("Tab");
    await expect(signInPage.signInButton).toBeFocused();
    await page.keyboard.press("Enter");

    await virtualMachinesPage.expectShown();
    // Sign out is reached with Tab alone, past the navigation before it.
    for (let presses = 0; presses < 10 && !(await virtualMachinesPage.signOutButton.evaluate((b) => b === document.activeElement)); presses++) {
      await page.keyboard.press("Tab");
    }
    await expect(virtualMachinesPage.signOutButton).toBeFocused();
    await page.keyboard.press("Enter");
    await signInPage.expectShown();
  });
});
