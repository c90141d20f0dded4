import { fileURLToPath } from "node:url";
import { test as base, expect } from "@playwright/test";
import { tinyVm, tinyVmWithSpec } from "../manifests.ts";
import { createNamespace, createObject, deleteNamespace, imageOf } from "../tests/cluster-users.ts";
import { signIn } from "../tests/fixtures.ts";

// Takes docs/screenshots/{list,vm,nodes,edit,restart-needed,migrations}-{light,dark}.png:
// the VM list with VMs in several states, a running VM's page with its
// graphs, the node view, the edit form, a running VM's changes waiting for
// a restart, and the Migrations page. The VMs are made in a namespace of
// their own and removed after.

const OUT = (name: string) => fileURLToPath(new URL(`../../docs/screenshots/${name}.png`, import.meta.url));
const test = base.extend({});
test.describe.configure({ mode: "serial" });

let namespace = "";
test.beforeAll(() => {
  namespace = createNamespace("screens");
  createObject(tinyVm("web-1", imageOf("tiny-guest"), namespace));
  createObject(tinyVm("web-2", imageOf("tiny-guest"), namespace));
  const halted = tinyVm("db-1", imageOf("tiny-guest"), namespace);
  halted.spec.runStrategy = "Halted";
  createObject(halted);
  createObject(
    tinyVmWithSpec("too-big", imageOf("tiny-guest"), namespace, (spec) => ({
      ...spec,
      domain: { ...spec.domain, memory: { guest: "10Ti" } },
    })),
  );
});
test.afterAll(() => {
  deleteNamespace(namespace);
});

for (const scheme of ["light", "dark"] as const) {
  test(`the list, a VM's page, the node view, editing and migrations, ${scheme}`, async ({ browser }) => {
    const context = await browser.newContext({
      colorScheme: scheme,
      viewport: { width: 1280, height: 800 },
      ignoreHTTPSErrors: true,
    });
    const page = await context.newPage();
    await signIn(page);
    await page.goto(`/vms?ns=${namespace}`);
    const table = page.getByRole("table");
    await expect(table.locator('[data-status="Running"]')).toHaveCount(2, { timeout: 300_000 });
    await expect(table.locator('[data-status="ErrorUnschedulable"]')).toHaveCount(1, { timeout: 120_000 });
    await page.screenshot({ path: OUT(`list-${scheme}`) });

    await page.goto(`/vms/${namespace}/web-1?ns=${namespace}&tab=metrics`);
    await expect(page.getByTestId("graph-cpu").locator("canvas")).toBeVisible({ timeout: 120_000 });
    await page.waitForTimeout(35_000);
    await page.reload();
    await expect(page.getByTestId("graph-cpu").locator("canvas")).toBeVisible({ timeout: 60_000 });
    await page.screenshot({ path: OUT(`vm-${scheme}`), fullPage: true });

    await page.goto(`/nodes?ns=${namespace}`);
    await expect(page.getByTestId("node").first()).toBeVisible({ timeout: 60_000 });
    await page.screenshot({ path: OUT(`nodes-${scheme}`), fullPage: true });

    await page.goto(`/vms/${namespace}/web-2?ns=${namespace}`);
    await page.getByRole("button", { name: "Edit", exact: true }).click();
    const form = page.getByRole("form", { name: "Edit web-2" });
    await form.getByLabel("Memory").fill(scheme === "light" ? "160Mi" : "192Mi");
    await form.getByLabel("Labels").fill("app=web\ntier=front");
    await page.screenshot({ path: OUT(`edit-${scheme}`), fullPage: true });
    await form.getByRole("button", { name: "Save" }).click();
    await expect(page.getByTestId("pending-changes")).toBeVisible({ timeout: 60_000 });
    // The long form scrolled the page; the changes are at its top.
    await page.evaluate(() => {
      window.scrollTo(0, 0);
    });
    await page.screenshot({ path: OUT(`restart-needed-${scheme}`) });

    await page.goto(`/vms/${namespace}/web-1?ns=${namespace}`);
    await page
      .getByRole("region", { name: "Live migration" })
      .getByRole("button", { name: "Migrate", exact: true })
      .click();
    await page.goto(`/migrations?ns=${namespace}`);
    await expect(page.locator('[data-phase="Succeeded"]').first()).toBeVisible({ timeout: 240_000 });
    await page.screenshot({ path: OUT(`migrations-${scheme}`) });
    await context.close();
  });
}
