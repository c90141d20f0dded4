import { tinyVm } from "../manifests.ts";
import { createNamespace, createObject, deleteNamespace, imageOf, kubectl } from "./cluster-users.ts";
import { expect, signIn, test } from "./fixtures.ts";

// Live migration from a VM's page, on the two-node cluster make test brings
// up: Migrate to the node picked from the list, the migration's phases as
// they come, and the VM's node changing to it; a viewer reads why Migrate is
// not theirs.

test.describe.configure({ mode: "serial", timeout: 300_000 });

const slow = { timeout: 240_000 };
let namespace = "";

test.beforeAll(() => {
  namespace = createNamespace("e2e-migrate-ui");
});

test.afterAll(() => {
  deleteNamespace(namespace);
});

const nodeOf = (name: string) => kubectl("get", "vmi", name, "-n", namespace, "-o", "jsonpath={.status.nodeName}");

test("Migrate moves a running VM to the node picked, and the page follows its phases to Succeeded", async ({
  page,
}) => {
  createObject(tinyVm("roamer", imageOf("tiny-guest"), namespace));
  await signIn(page);
  await page.goto(`/vms/${namespace}/roamer?ns=${namespace}`);
  await expect(page.getByTestId("vm-status")).toHaveText("Running", slow);
  const panel = page.getByRole("region", { name: "Live migration" });
  await expect(panel).toContainText("This VM has not been migrated; it runs on");
  const source = nodeOf("roamer");
  // The list offers the scheduler's choice and every other node, not the VM's own.
  const target = panel.getByLabel("Move to");
  const options = await target.locator("option").allTextContents();
  expect(options[0]).toBe("Any node (the scheduler chooses)");
  expect(options).not.toContain(source);
  const other = options.find((n) => n.startsWith("kubevirt-ts-node"));
  expect(other, "a second node to move to").toBeDefined();
  await target.selectOption(other ?? "");
  await panel.getByRole("button", { name: "Migrate", exact: true }).click();
  await expect(page.getByRole("status").filter({ hasText: "Migrate roamer:" })).toBeVisible();
  // The phases as they come, then the end; Migrate is disabled while it runs.
  const progress = panel.getByTestId("migration-progress");
  await expect(progress.getByTestId("migration-phase")).toHaveText(
    /Pending|Scheduling|Scheduled|PreparingTarget|TargetReady|Running|Succeeded/,
  );
  await expect(progress.getByTestId("migration-phase")).toHaveText("Succeeded", slow);
  await expect(progress).toContainText(`from ${source} to ${other ?? ""}, pre-copy`);
  // libvirt's figures of the finished job, from the handler of the node it left: what was sent, and the real downtime.
  await expect(progress.getByTestId("migration-figures")).toContainText(/Sent [\d.]+ [KMG]iB in [\d.]+ m?s\./);
  await expect(progress.getByTestId("migration-downtime")).toHaveText(/^\d+ ms$/);
  await expect(progress.getByRole("list", { name: "Migration phases" }).getByRole("listitem")).toContainText([
    "Pending",
    "Scheduling",
    "Succeeded",
  ]);
  await expect.poll(() => nodeOf("roamer"), slow).toBe(other);
  // The overview's node follows the VM.
  await expect(page.getByRole("link", { name: other ?? "", exact: true })).toBeVisible();
  await expect(page.getByTestId("vm-status")).toHaveText("Running");
});

test("a console open during a migration opens again by itself on the VM's new node, to the same guest", async ({
  context,
  page,
}) => {
  await signIn(page);
  // The serial console in a page of its own, the migration started from the overview in another.
  await page.goto(`/vms/${namespace}/roamer?ns=${namespace}&tab=console`);
  await expect(page.getByTestId("console-state")).toHaveText("Connected", slow);
  await page.getByTestId("serial-console").click();
  await page.keyboard.type("echo marked > /tmp/mark; echo before-$((40+1))\n");
  const rows = page.getByTestId("serial-console").locator(".xterm-rows");
  await expect(rows).toContainText("before-41", slow);
  const source = nodeOf("roamer");

  // A page of its own signs in of its own: the token is kept per tab.
  const overview = await context.newPage();
  await signIn(overview);
  await overview.goto(`/vms/${namespace}/roamer?ns=${namespace}`);
  const panel = overview.getByRole("region", { name: "Live migration" });
  await panel.getByRole("button", { name: "Migrate", exact: true }).click();
  await expect(panel.getByTestId("migration-progress").getByTestId("migration-phase")).toHaveText("Succeeded", slow);
  await expect.poll(() => nodeOf("roamer"), slow).not.toBe(source);

  // The console followed: connected again, to the guest that kept its file.
  // (Typed again until it is answered: the page may not have seen the VM move yet, and its first session go nowhere.)
  await expect
    .poll(
      async () => {
        await page.getByTestId("serial-console").click();
        await page.keyboard.type("cat /tmp/mark; echo after-$((40+2))\n");
        return rows.textContent();
      },
      { ...slow, intervals: [3_000] },
    )
    .toContain("after-42");
  await expect(page.getByTestId("console-state")).toHaveText("Connected");
  await expect(rows).toContainText("marked");
  await overview.close();
});

test("a viewer sees the migrations but may not start one, and is told why", async ({ page }) => {
  await signIn(page, "viewer");
  await page.goto(`/vms/${namespace}/roamer?ns=${namespace}`);
  const panel = page.getByRole("region", { name: "Live migration" });
  await expect(panel.getByTestId("migration-phase")).toHaveText("Succeeded", slow);
  await expect(panel.getByRole("button", { name: "Migrate", exact: true })).toBeDisabled();
  await expect(panel.getByRole("button", { name: "Migrate", exact: true })).toHaveAccessibleDescription(
    /You may not migrate VMs in/,
  );
});

test("the VM list migrates two VMs in one go: each moves to another node", async ({ page, virtualMachinesPage }) => {
  createObject(tinyVm("wanderer", imageOf("tiny-guest"), namespace));
  await signIn(page);
  await virtualMachinesPage.goto(namespace);
  const row = (name: string) => virtualMachinesPage.row(name);
  for (const name of ["roamer", "wanderer"])
    await expect(row(name).getByRole("cell").nth(2)).toHaveText("Running", slow);
  // Each live migratable, as its handler says a moment after it runs: the button is enabled once any one is.
  const migratable = (name: string) =>
    kubectl(
      "get",
      "vmi",
      name,
      "-n",
      namespace,
      "-o",
      `jsonpath={.status.conditions[?(@.type=="LiveMigratable")].status}`,
    );
  for (const name of ["roamer", "wanderer"]) await expect.poll(() => migratable(name), slow).toBe("True");
  const before = { roamer: nodeOf("roamer"), wanderer: nodeOf("wanderer") };
  for (const name of ["roamer", "wanderer"]) await row(name).getByRole("checkbox").check();
  const selection = page.getByRole("group", { name: "Selected VMs" });
  await expect(selection.getByRole("button", { name: "Migrate", exact: true })).toBeEnabled(slow);
  await selection.getByRole("button", { name: "Migrate", exact: true }).click();
  await expect(page.getByRole("status").filter({ hasText: "Migrate: done for roamer, wanderer." })).toBeVisible();
  await expect.poll(() => nodeOf("roamer"), slow).not.toBe(before.roamer);
  await expect.poll(() => nodeOf("wanderer"), slow).not.toBe(before.wanderer);
  await expect(row("wanderer").getByRole("cell").nth(3)).toHaveText(nodeOf("wanderer"), slow);

  // The Migrations page lists the namespace's migrations, newest first: these two, ended, from and to which node.
  await page.getByRole("navigation", { name: "Sections" }).getByRole("link", { name: "Migrations" }).click();
  await expect(page.getByRole("heading", { name: "Migrations", level: 1 })).toBeVisible();
  const migrations = page.getByTestId("migrations").locator("tbody tr");
  // roamer's two from the tests before, and one each now.
  await expect(migrations).toHaveCount(4, slow);
  for (const name of ["roamer", "wanderer"] as const) {
    const newest = migrations.filter({ has: page.getByRole("link", { name, exact: true }) }).first();
    await expect(newest.getByTestId("migration-row-phase")).toHaveText(
      new RegExp(`^Succeeded from ${before[name]} to ${nodeOf(name)}, pre-copy, [\\d.]+ s in all$`),
      slow,
    );
  }
  await page.getByLabel("In flight only").check();
  await expect(page.getByText("No migration is in flight.")).toBeVisible();
});
