import type { Page } from "@playwright/test";
import { tinyVmOnClaim } from "../manifests.ts";
import { claim, createNamespace, createObject, deleteNamespace, imageOf, kubectl } from "./cluster-users.ts";
import { expect, signIn, test } from "./fixtures.ts";

// Clone on a VM's page on the local cluster: the admin clones the tiny guest with its disk on a claim, names the new
// VM in the dialog (checked as it is typed), follows the clone until it succeeds and opens the new VM, which is made
// stopped; a viewer sees Clone disabled with the reason. A clone is a snapshot restored as a new VM, each a copy of
// the claim under emulation: its wait is generous.

test.describe.configure({ mode: "serial", timeout: 420_000 });

const slow = { timeout: 240_000 };
const cloning = { timeout: 300_000 };
const VM = "cloner";
const CLONE = "cloner-twin";
let namespace = "";

test.beforeAll(() => {
  namespace = createNamespace("e2e-clone-ui");
  claim(namespace, "cloner-data", "128Mi");
  // It runs once, so that its claim is bound on a node (local-path binds on first use), then stops.
  createObject(tinyVmOnClaim(VM, imageOf("tiny-guest"), "cloner-data", namespace));
});

test.afterAll(() => {
  deleteNamespace(namespace);
});

async function openVm(page: Page, user: "admin" | "viewer" = "admin") {
  await signIn(page, user);
  await page.goto(`/vms/${namespace}/${VM}?ns=${namespace}`);
}

test("the admin clones a VM from its page, follows the clone, and opens the new VM, made stopped", async ({ page }) => {
  await openVm(page);
  await expect(page.getByTestId("vm-status-line")).toContainText("Running", slow);
  kubectl("patch", "vm", VM, "-n", namespace, "--type", "merge", "-p", '{"spec":{"runStrategy":"Halted"}}');
  await expect(page.getByTestId("vm-status-line")).toContainText("Stopped", slow);

  await page.getByRole("button", { name: "Clone…" }).click();
  const dialog = page.getByRole("dialog", { name: `Clone ${VM}` });
  const name = dialog.getByLabel("New VM name");
  await expect(name).toHaveValue(`${VM}-clone`);
  await name.fill(VM);
  await expect(name).toHaveAttribute("aria-invalid", "true");
  await expect(name).toHaveAccessibleDescription(`A VM named ${VM} already exists here; choose another name.`);
  await expect(dialog.getByRole("button", { name: /^Clone as/ })).toBeDisabled();
  await name.fill(CLONE);
  await dialog.getByRole("button", { name: `Clone as ${CLONE}` }).click();

  const state = dialog.getByTestId("clone-state");
  await expect(state).toHaveText(/^(Succeeded|Failed)/, cloning);
  await expect(state).toHaveText("Succeeded");
  await dialog.getByRole("link", { name: `Open ${CLONE}` }).click();

  await expect(page).toHaveURL(new RegExp(`/vms/${namespace}/${CLONE}\\?`));
  await expect(page.getByRole("heading", { name: CLONE, exact: true })).toBeVisible();
  await expect(page.getByTestId("vm-status-line")).toContainText("Stopped", slow);
  await expect(page.getByRole("tabpanel", { name: "Overview" })).toContainText("Halted");
});

test("a viewer sees Clone disabled, with the reason", async ({ page }) => {
  await openVm(page, "viewer");
  await expect(page.getByTestId("view-only")).toBeVisible();
  const clone = page.getByRole("button", { name: "Clone…" });
  await expect(clone).toBeDisabled();
  await expect(clone).toHaveAccessibleDescription(
    /You may not clone VMs in .*: it takes create on virtualmachineclones \(clone\.kubevirt\.io\)/,
  );
});
