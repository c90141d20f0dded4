import { revocableToken, tokenOf } from "./cluster-users.ts";
import { expect, sampleToken, storedToken, test } from "./fixtures.ts";

// Signing in on the local cluster: a token is tried on the cluster before
// it is kept, so one the cluster refuses signs nobody in, and a session
// whose token the cluster stops accepting ends with a message.

test.describe("signing in with a bearer token", () => {
  test("the sign-in page has a labelled token field and a sign-in button", async ({ page, signInPage }) => {
    await signInPage.goto();

    await expect(page).toHaveTitle("Sign in · kubevirt-ts");
    await expect(signInPage.tokenField).toBeVisible();
    await expect(signInPage.tokenField).toBeEditable();
    await expect(signInPage.tokenField).toHaveAccessibleDescription(/kubectl create token/);
    await expect(signInPage.signInButton).toBeVisible();
  });

  test("signing in keeps the token in the tab and lands on the overview", async ({
    page,
    signInPage,
    overviewPage,
  }) => {
    const token = tokenOf("viewer");
    await signInPage.goto();

    await signInPage.signIn(`Bearer ${token}\n`);

    await overviewPage.expectShown();
    expect(await storedToken(page)).toBe(token);
  });

  test("a token the cluster refuses is shown as an error and signs nobody in", async ({ page, signInPage }) => {
    await signInPage.goto();

    await signInPage.signIn(sampleToken);

    await expect(signInPage.error).toHaveText(/The cluster did not accept this token/);
    await expect(signInPage.tokenField).toHaveAttribute("aria-invalid", "true");
    await expect(signInPage.tokenField).toBeFocused();
    await expect(page).toHaveURL("/");
    expect(await storedToken(page)).toBeNull();
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

  test("a session whose token the cluster stops accepting returns to sign-in, saying why", async ({
    page,
    signInPage,
    overviewPage,
  }) => {
    // Up to a minute for the API server's token cache, within the test's own time.
    test.setTimeout(120_000);
    const session = revocableToken("viewer");
    await signInPage.goto();
    await signInPage.signIn(session.token);
    await overviewPage.expectShown();

    session.revoke();

    // The API server may go on accepting a revoked token for the seconds its token cache keeps it.
    await expect(async () => {
      await page.reload();
      await expect(page).toHaveURL("/", { timeout: 3_000 });
    }).toPass({ timeout: 60_000 });
    await signInPage.expectShown();
    await expect(signInPage.error).toHaveText(/Your session ended: the cluster no longer accepts your token/);
    expect(await storedToken(page)).toBeNull();
  });

  test("signing out forgets the token and returns to the sign-in page", async ({ page, signInPage, overviewPage }) => {
    await signInPage.goto();
    await signInPage.signIn(tokenOf("viewer"));
    await overviewPage.expectShown();

    await overviewPage.signOutButton.click();

    await signInPage.expectShown();
    await expect.poll(() => storedToken(page)).toBeNull();
    await expect(signInPage.error).toHaveCount(0);
  });

  test("the VM page sends a visitor without a token to sign in", async ({ page, signInPage }) => {
    await page.goto("/vms");

    await signInPage.expectShown();
  });

  test("the sign-in page works with the keyboard alone", async ({ page, signInPage, overviewPage }) => {
    // A token is about a thousand keystrokes, each a real key event.
    test.setTimeout(90_000);
    const token = tokenOf("viewer");
    await signInPage.goto();

    await page.keyboard.press("Tab");
    await expect(signInPage.tokenField).toBeFocused();
    await page.keyboard.type(token);
    await page.keyboard.press("Tab");
    await expect(signInPage.signInButton).toBeFocused();
    await page.keyboard.press("Enter");

    await overviewPage.expectShown();
    // Sign out is reached with Tab alone, past the navigation before it.
    for (
      let presses = 0;
      presses < 12 && !(await overviewPage.signOutButton.evaluate((b) => b === document.activeElement));
      presses++
    ) {
      await page.keyboard.press("Tab");
    }
    await expect(overviewPage.signOutButton).toBeFocused();
    await page.keyboard.press("Enter");
    await signInPage.expectShown();
  });
});
