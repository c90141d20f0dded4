import { tinyVm } from "../manifests.ts";
import { createNamespace, createObject, deleteNamespace, imageOf, kubectl } from "./cluster-users.ts";
import { expect, signIn, test } from "./fixtures.ts";

// Editing a VM from its page's form: a stopped VM starts with what was
// changed; a running VM keeps running as it was started, says which changes
// wait for a restart (the controller's RestartRequired), and a Restart from
// there brings them.

test.describe.configure({ mode: "serial", timeout: 300_000 });

const slow = { timeout: 240_000 };
let namespace = "";

test.beforeAll(() => {
  namespace = createNamespace("e2e-edit");
  const vm = tinyVm("edited", imageOf("tiny-guest"), namespace);
  createObject({ ...vm, spec: { ...vm.spec, runStrategy: "Halted" } });
});

test.afterAll(() => {
  deleteNamespace(namespace);
});

const vmiMemory = () =>
  kubectl("get", "vmi", "edited", "-n", namespace, "-o", "jsonpath={.spec.domain.memory.guest}", "--ignore-not-found");

test("the admin edits a stopped VM's memory and labels from the form, checked as typed; it starts with them", async ({
  page,
}) => {
  await signIn(page);
  await page.goto(`/vms/${namespace}/edited?ns=${namespace}`);
  await expect(page.getByTestId("vm-status")).toHaveText("Stopped", slow);
  await page.getByRole("button", { name: "Edit", exact: true }).click();
  const form = page.getByRole("form", { name: "Edit edited" });
  await expect(form.getByLabel("Memory")).toHaveValue("128Mi");
  await expect(form.getByTestId("edit-running-note")).toHaveCount(0);

  // The server's own rules, in the browser, next to the field; nothing is sent while one is broken.
  await form.getByLabel("Memory").fill("lots");
  await expect(form.locator("#edit-memory-error")).toContainText("Memory");
  await form.getByLabel("Labels").fill("tier=front\nno-equals");
  await expect(form.locator("#edit-labels-error")).toContainText("Labels, line 2: write key=value");
  await form.getByRole("button", { name: "Save" }).click();
  await expect(form.getByTestId("form-problems")).toContainText("problem(s) before saving");

  await form.getByLabel("Memory").fill("160Mi");
  await form.getByLabel("Labels").fill("tier=front");
  await form.getByRole("button", { name: "Save" }).click();
  await expect(page.getByRole("status").filter({ hasText: "Saved edited: it starts with the changes." })).toBeVisible();
  await expect(form).toBeHidden();
  expect(kubectl("get", "vm", "edited", "-n", namespace, "-o", "jsonpath={.metadata.labels.tier}")).toBe("front");

  await page.getByRole("group", { name: "Actions" }).getByRole("button", { name: "Start", exact: true }).click();
  await expect(page.getByTestId("vm-status")).toHaveText("Running", slow);
  expect(vmiMemory()).toBe("160Mi");
  await expect(page.getByTestId("restart-needed")).toHaveCount(0);
});

test("the admin edits the running VM: it says which change waits for a restart, and Restart brings it", async ({
  page,
}) => {
  await signIn(page);
  await page.goto(`/vms/${namespace}/edited?ns=${namespace}`);
  await expect(page.getByTestId("vm-status")).toHaveText("Running", slow);
  await page.getByRole("button", { name: "Edit", exact: true }).click();
  const form = page.getByRole("form", { name: "Edit edited" });
  await expect(form.getByTestId("edit-running-note")).toContainText("takes effect when it restarts");
  await form.getByLabel("Memory").fill("192Mi");
  await form.getByRole("button", { name: "Save" }).click();
  await expect(
    page.getByRole("status").filter({ hasText: "Saved edited: the changes take effect when it restarts." }),
  ).toBeVisible();

  // The guest runs on as it was started, and the page says what waits.
  const panel = page.getByTestId("restart-needed");
  await expect(panel).toContainText("Restart needed for changes to take effect", slow);
  const row = panel.getByTestId("pending-changes").locator("tbody tr");
  await expect(row).toHaveCount(1);
  await expect(row.getByRole("cell")).toHaveText(["Memory", "domain.memory.guest", '"160Mi"', '"192Mi"']);
  expect(vmiMemory()).toBe("160Mi");

  await panel.getByRole("button", { name: "Restart", exact: true }).click();
  await page.getByRole("dialog", { name: "Restart edited?" }).getByRole("button", { name: "Restart edited" }).click();
  await expect(panel).toBeHidden(slow);
  await expect(page.getByTestId("vm-status")).toHaveText("Running", slow);
  await expect.poll(vmiMemory, slow).toBe("192Mi");
});
