import type { Page } from "@playwright/test";
import { tinyVmOnClaim } from "../manifests.ts";
import { claim, createNamespace, createObject, deleteNamespace, imageOf, kubectl } from "./cluster-users.ts";
import { expect, signIn, test } from "./fixtures.ts";

// A VM's Snapshots tab on the local cluster: the admin snapshots the tiny guest's disk on a claim while the VM is
// stopped, exports it (a download link that serves the disk, then Delete), restores the snapshot as a new VM (which
// the VM list then shows) and onto the VM itself, reads that Restore and Export disks wait for the VM to stop while it
// runs, and deletes the snapshot; a viewer sees every action disabled with the reason.

test.describe.configure({ mode: "serial", timeout: 300_000 });

const slow = { timeout: 240_000 };
const VM = "snappy";
const SNAPSHOT = "snap-1";
const COPY = "snappy-copy";
let namespace = "";

const runStrategy = (strategy: "Always" | "Halted") =>
  kubectl(
    "patch",
    "vm",
    VM,
    "-n",
    namespace,
    "--type",
    "merge",
    "-p",
    JSON.stringify({ spec: { runStrategy: strategy } }),
  );

test.beforeAll(() => {
  namespace = createNamespace("e2e-snapshot-ui");
  claim(namespace, "snappy-data", "128Mi");
  // It runs once, so that its claim is bound on a node (local-path binds on first use), then stops.
  createObject(tinyVmOnClaim(VM, imageOf("tiny-guest"), "snappy-data", namespace));
});

test.afterAll(() => {
  deleteNamespace(namespace);
});

async function openSnapshots(page: Page, user: "admin" | "viewer" = "admin") {
  await signIn(page, user);
  await page.goto(`/vms/${namespace}/${VM}?ns=${namespace}&tab=snapshots`);
  return page.getByRole("tabpanel", { name: "Snapshots" });
}

const snapshotRow = (page: Page) => page.getByTestId("snapshots").getByRole("row").filter({ hasText: SNAPSHOT });

test("the admin snapshots a stopped VM from its tab; the snapshot becomes ready with its disk and size", async ({
  page,
}) => {
  const panel = await openSnapshots(page);
  await expect(page.getByTestId("vm-status-line")).toContainText("Running", slow);
  runStrategy("Halted");
  await expect(page.getByTestId("vm-status-line")).toContainText("Stopped", slow);

  const name = panel.getByLabel("Snapshot name");
  await expect(name).toHaveValue(new RegExp(`^${VM}-\\d{8}-\\d{6}$`));
  await name.fill(SNAPSHOT);
  await panel.getByRole("button", { name: "Take snapshot" }).click();
  await expect(page.getByRole("status").filter({ hasText: `Snapshot ${SNAPSHOT} of ${VM}: asked` })).toBeVisible();
  const row = snapshotRow(page);
  await expect(row.getByTestId("snapshot-state")).toHaveText("Ready", slow);
  // Offline: no Online badge; the claim's disk is in it, at the claim's size.
  await expect(row).not.toContainText("Online");
  await expect(row.getByRole("cell").nth(4)).toHaveText("data");
  await expect(row.getByRole("cell").nth(5)).toHaveText("128 MiB");
  await expect(panel.getByLabel("Snapshot name")).toHaveValue(new RegExp(`^${VM}-\\d{8}-\\d{6}$`));
});

test("the admin exports the stopped VM: its link serves the disk, and Delete ends the export", async ({ page }) => {
  await openSnapshots(page);
  await expect(page.getByTestId("vm-status-line")).toContainText("Stopped", slow);
  const exports = page.getByTestId("exports-panel");
  await exports.getByRole("button", { name: "Export disks" }).click();
  await expect(page.getByRole("status").filter({ hasText: `of ${VM}: asked` })).toBeVisible();
  const row = page.getByTestId("exports").getByRole("row").nth(1);
  await expect(row.getByTestId("export-state")).toHaveText("Ready to download", slow);
  const href = (await row.getByRole("link", { name: "snappy-data.img.gz" }).getAttribute("href")) ?? "";
  expect(href).toMatch(
    new RegExp(
      `/api/export\\.kubevirt\\.io/v1/namespaces/${namespace}/virtualmachineexports/export-${VM}-\\w+/` +
        "volumes/snappy-data/disk\\.img\\.gz\\?x-kubevirt-export-token=.",
    ),
  );
  // The link alone downloads the disk: the token is in it.
  const download = await page.request.get(href);
  expect(download.status()).toBe(200);
  expect(download.headers()["content-type"]).toBe("application/gzip");
  expect((await download.body()).subarray(0, 2)).toEqual(Buffer.from([0x1f, 0x8b]));

  await row.getByRole("button", { name: "Delete", exact: true }).click();
  await page
    .getByRole("dialog", { name: /^Delete export-/ })
    .getByRole("button", { name: /^Delete export-/ })
    .click();
  await expect(exports).toContainText(`${VM} has no exports.`, slow);
});

test("Restore as new VM checks the name as it is typed, and the new VM appears in the VM list", async ({
  page,
  virtualMachinesPage,
}) => {
  const panel = await openSnapshots(page);
  await snapshotRow(page).getByRole("button", { name: "Restore as new VM…" }).click();
  const form = panel.getByRole("form", { name: `Restore ${SNAPSHOT} as a new VM` });
  const newName = form.getByLabel("New VM name");
  await newName.fill(VM);
  await expect(newName).toHaveAttribute("aria-invalid", "true");
  await expect(newName).toHaveAccessibleDescription(`A VM named ${VM} already exists here; choose another name.`);
  await newName.fill("Not_A_Name");
  await expect(newName).toHaveAccessibleDescription(/The name must be a DNS label/);
  await expect(form.getByRole("button", { name: /^Restore as/ })).toBeDisabled();
  await newName.fill(COPY);
  await form.getByRole("button", { name: `Restore as ${COPY}` }).click();
  await expect(page.getByRole("status").filter({ hasText: `Restore ${SNAPSHOT} as ${COPY}: asked` })).toBeVisible();
  const restore = page.getByTestId("restores").getByRole("row").filter({ hasText: COPY });
  await expect(restore.getByTestId("restore-state")).toHaveText("Complete", slow);

  await virtualMachinesPage.goto(namespace);
  await expect(virtualMachinesPage.row(COPY)).toBeVisible(slow);
});

test("Restore puts the snapshot back onto the stopped VM; while the VM runs it says to stop it first", async ({
  page,
}) => {
  const panel = await openSnapshots(page);
  await expect(page.getByTestId("vm-status-line")).toContainText("Stopped", slow);
  await snapshotRow(page).getByRole("button", { name: "Restore", exact: true }).click();
  await page
    .getByRole("dialog", { name: `Restore ${SNAPSHOT} onto ${VM}?` })
    .getByRole("button", { name: `Restore ${VM}` })
    .click();
  await expect(page.getByRole("status").filter({ hasText: `Restore ${SNAPSHOT} onto ${VM}: asked` })).toBeVisible();
  const restores = page.getByTestId("restores").getByRole("row");
  const inPlace = restores.filter({ has: page.getByRole("cell", { name: VM, exact: true }) });
  await expect(inPlace.getByTestId("restore-state")).toHaveText("Complete", slow);

  runStrategy("Always");
  await expect(page.getByTestId("vm-status-line")).toContainText("Running", slow);
  const restore = snapshotRow(page).getByRole("button", { name: "Restore", exact: true });
  await expect(restore).toBeDisabled();
  await expect(restore).toHaveAccessibleDescription(/^Stop the VM first/);
  // Restoring as a new VM does not wait for this one to stop.
  await expect(snapshotRow(page).getByRole("button", { name: "Restore as new VM…" })).toBeEnabled();
  await expect(panel.getByRole("button", { name: "Take snapshot" })).toBeEnabled();
  const exportDisks = panel.getByRole("button", { name: "Export disks" });
  await expect(exportDisks).toBeDisabled();
  await expect(exportDisks).toHaveAccessibleDescription(/^Stop the VM first: its disks are exported only while/);
});

test("a viewer sees the snapshots with every action disabled and the reason", async ({ page }) => {
  const panel = await openSnapshots(page, "viewer");
  const take = panel.getByRole("button", { name: "Take snapshot" });
  await expect(take).toBeDisabled();
  await expect(take).toHaveAccessibleDescription(
    /You may not take snapshots of VMs in .*: it takes create on virtualmachinesnapshots \(snapshot\.kubevirt\.io\)/,
  );
  const exportDisks = panel.getByRole("button", { name: "Export disks" });
  await expect(exportDisks).toBeDisabled();
  await expect(exportDisks).toHaveAccessibleDescription(/You may not export VMs in /);
  const row = snapshotRow(page);
  await expect(row.getByTestId("snapshot-state")).toHaveText("Ready", slow);
  for (const [label, words] of [
    ["Restore", "restore snapshots of VMs"],
    ["Restore as new VM…", "restore snapshots as new VMs"],
    ["Delete", "delete snapshots of VMs"],
  ] as const) {
    const button = row.getByRole("button", { name: label, exact: true });
    await expect(button).toBeDisabled();
    await expect(button).toHaveAccessibleDescription(new RegExp(`You may not ${words} in `));
  }
});

test("the admin deletes the snapshot after confirming", async ({ page }) => {
  const panel = await openSnapshots(page);
  await snapshotRow(page).getByRole("button", { name: "Delete", exact: true }).click();
  await page
    .getByRole("dialog", { name: `Delete ${SNAPSHOT}?` })
    .getByRole("button", { name: `Delete ${SNAPSHOT}` })
    .click();
  await expect(snapshotRow(page)).toHaveCount(0, slow);
  await expect(panel).toContainText(`${VM} has no snapshots yet.`);
});
