import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Page } from "@playwright/test";
import { createNamespace, deleteNamespace, tokenOf } from "./cluster-users.ts";
import { expect, test } from "./fixtures.ts";

// The Images page on the local cluster: a qcow2 file uploaded from the
// browser into a DataVolume (progress shown, then Ready), a VM created with
// the form on a persistent disk copied from it, Running, then deleted
// keeping its disk; a file that is not
// a disk image refused with the reason, leaving nothing behind; an image
// deleted from the list.

test.describe.configure({ mode: "serial", timeout: 300_000 });

const slow = { timeout: 240_000 };
/** The row of an image, by its name in the first cell. */
const imageRow = (page: Page, name: string) =>
  page.getByRole("row").filter({ has: page.getByRole("cell", { name, exact: true }) });
let namespace = "";
let dir = "";

test.beforeAll(() => {
  namespace = createNamespace("e2e-images");
  dir = mkdtempSync(join(tmpdir(), "e2e-images-"));
  // A 16 MiB qcow2 disk: a small file holding a larger disk, as images are.
  execFileSync("qemu-img", ["create", "-q", "-f", "qcow2", join(dir, "tiny-disk.qcow2"), "16M"]);
  writeFileSync(join(dir, "notes.txt"), "these are notes, not a disk image\n");
});

test.afterAll(() => {
  deleteNamespace(namespace);
  rmSync(dir, { recursive: true, force: true });
});

test.beforeEach(async ({ signInPage, page }) => {
  await signInPage.goto();
  await signInPage.signIn(tokenOf("admin"));
  await expect(page.getByRole("heading", { name: "Overview", level: 1 })).toBeVisible();
  await page.getByRole("link", { name: "Images" }).click();
  await expect(page).toHaveURL(/\/images/);
  await page.goto(`/images?ns=${namespace}`);
  await expect(page.getByRole("heading", { name: "Images" })).toBeVisible();
});

test("an image uploaded from the browser becomes a VM's persistent disk, and the VM runs", async ({ page }) => {
  await expect(page.getByText(`No images in ${namespace} yet`)).toBeVisible();
  await page.getByLabel("File", { exact: true }).setInputFiles(join(dir, "tiny-disk.qcow2"));
  await expect(page.getByLabel("Name", { exact: true })).toHaveValue("tiny-disk");
  await expect(page.getByLabel("Disk size")).toHaveValue("1Gi");
  await page.getByLabel("Disk size").fill("64Mi");
  await page.getByRole("button", { name: "Upload", exact: true }).click();
  await expect(page.getByRole("button", { name: "Cancel upload" })).toBeVisible();
  await expect(page.getByText("Uploaded tiny-disk: it is ready to boot from.")).toBeVisible(slow);
  const row = imageRow(page, "tiny-disk");
  await expect(row.getByRole("cell").nth(1)).toHaveText("Uploaded");
  await expect(row.getByRole("cell").nth(2)).toHaveText("64Mi");
  await expect(row.getByRole("cell").nth(3)).toHaveText("Ready", slow);

  await page.getByRole("link", { name: "Virtual machines" }).click();
  await page.goto(`/vms/new?ns=${namespace}`);
  await page.getByLabel("Name", { exact: true }).fill("on-upload");
  await page.getByLabel("Memory").fill("128Mi");
  await page.getByLabel("Persistent disk from an image").check();
  await expect(page.getByLabel("Image to copy")).toHaveValue("tiny-disk");
  await page.getByLabel("Disk size").fill("64Mi");
  await page.getByRole("button", { name: "Create", exact: true }).click();
  await expect(page).toHaveURL(new RegExp(`/vms/${namespace}/on-upload`));
  await expect(page.getByTestId("vm-status")).toHaveText("Running", slow);
  // Its disk is a DataVolume of its own, kept across stops.
  await expect(page.getByTestId("vm-disks")).toContainText("DataVolume on-upload-root");

  // Deleted keeping its disk: the disk stays among the images.
  await page.getByRole("group", { name: "Actions" }).getByRole("button", { name: "Delete" }).click();
  await expect(page.getByRole("dialog", { name: "Delete on-upload?" })).toContainText("on-upload-root");
  await page.getByRole("button", { name: "Delete the VM, keep its disks" }).click();
  await expect(page).toHaveURL(/\/vms\?ns=/);
  await expect(page.getByText(`No virtual machines in ${namespace} yet.`)).toBeVisible(slow);
  await page.goto(`/images?ns=${namespace}`);
  await expect(imageRow(page, "on-upload-root").getByRole("cell").nth(3)).toHaveText("Ready");
});

test("a file that is not a disk image is refused with the reason, and nothing is left of it", async ({ page }) => {
  await page.getByLabel("File", { exact: true }).setInputFiles(join(dir, "notes.txt"));
  await expect(page.getByLabel("Name", { exact: true })).toHaveValue("notes-txt");
  await page.getByRole("button", { name: "Upload", exact: true }).click();
  await expect(page.getByRole("alert").filter({ hasText: "Upload of notes-txt failed" })).toContainText(
    "the upload is not a disk image",
    slow,
  );
  await expect(page.getByRole("alert").filter({ hasText: "Upload of notes-txt failed" })).toContainText(
    "The DataVolume notes-txt was removed.",
  );
  await expect(imageRow(page, "notes-txt")).toHaveCount(0, slow);
});

test("an image is deleted from the list", async ({ page }) => {
  const row = imageRow(page, "tiny-disk");
  await expect(row).toHaveCount(1);
  await row.getByRole("button", { name: "Delete tiny-disk" }).click();
  await page
    .getByRole("dialog", { name: "Delete tiny-disk?" })
    .getByRole("button", { name: "Delete tiny-disk" })
    .click();
  await expect(page.getByRole("status").filter({ hasText: "Deleted tiny-disk." })).toBeVisible();
  await expect(row).toHaveCount(0, slow);
});
