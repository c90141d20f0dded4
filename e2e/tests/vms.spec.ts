import { tinyVm, tinyVmOnClaim } from "../manifests.ts";
import { claim, createNamespace, deleteNamespace, imageOf, kubectl, tokenOf } from "./cluster-users.ts";
import { expect, signIn, test } from "./fixtures.ts";

// The dashboard on the local cluster, as the admin and as a viewer: a live
// VM list, creating VMs with the form and with YAML, field errors from the
// server, lifecycle actions, the serial console and VNC of a running guest,
// and every action the viewer may not take shown disabled with the reason.

test.describe.configure({ mode: "serial", timeout: 300_000 });

const slow = { timeout: 240_000 };
let namespace = "";

test.beforeAll(() => {
  namespace = createNamespace("e2e-web");
});

test.afterAll(() => {
  deleteNamespace(namespace);
});

test("the admin creates a VM with the form; the list shows it and its status changes live, without a reload", async ({
  page,
  virtualMachinesPage,
}) => {
  await signIn(page, "admin");
  await virtualMachinesPage.goto(namespace);
  await expect(page.getByLabel("Signed in as")).toHaveText("system:serviceaccount:default:kubevirt-ts-admin");
  await expect(page.getByText(`No virtual machines in ${namespace} yet.`)).toBeVisible();

  await page.getByRole("link", { name: "Create VM" }).click();
  await page.getByLabel("Name", { exact: true }).fill("debian-1");
  await page.getByLabel("Memory").fill("1Gi");
  await expect(page.getByLabel("Boot image")).toHaveValue(imageOf("debian-guest"));
  await page.getByLabel("Cloud-init user").fill("tester");
  await page.getByLabel("Password").fill("s3cret-pass");
  await page.getByLabel("Run strategy").selectOption("Halted");
  await page.getByRole("button", { name: "Create", exact: true }).click();
  await expect(page).toHaveURL(new RegExp(`/vms/${namespace}/debian-1`));
  await expect(page.getByTestId("vm-status")).toHaveText("Stopped");
  // The password went into a Secret the VM names, not into the spec that viewers read.
  await page.getByRole("tab", { name: "YAML" }).click();
  await expect(page.getByRole("tabpanel", { name: "YAML" })).toContainText("name: debian-1-cloud-init");
  await expect(page.getByRole("tabpanel", { name: "YAML" })).not.toContainText("s3cret-pass");

  // The list, kept open, follows the VM through start without a reload.
  await virtualMachinesPage.goto(namespace);
  const row = virtualMachinesPage.row("debian-1");
  await expect(row.getByRole("cell").nth(2)).toHaveText("Stopped");
  await row.getByRole("checkbox").check();
  await page.getByRole("group", { name: "Selected VMs" }).getByRole("button", { name: "Start", exact: true }).click();
  await expect(page.getByRole("status").filter({ hasText: "Start: done for debian-1." })).toBeVisible();
  await expect(row.getByRole("cell").nth(2)).toHaveText(/Starting|Running/, slow);
  await expect(row.getByRole("cell").nth(2)).toHaveText("Running", slow);
  await expect(row.getByRole("cell").nth(3)).toHaveText(/^kubevirt-ts-node(-\d+)?$/);
  await expect(row.getByRole("cell").nth(4)).toHaveText(/^198\.18\.\d+\.\d+$/);
});

test(
  "the form checks as you type with the server's rules, shows every problem at once " +
    "before anything is sent, and warns of risky choices",
  async ({ page }) => {
    await signIn(page, "admin");
    await page.goto(`/vms/new?ns=${namespace}`);
    const name = page.getByLabel("Name", { exact: true });
    await name.fill("Bad_Name");
    // As it is typed, in words; the API's path on hover.
    await expect(name).toHaveAttribute("aria-invalid", "true");
    await expect(name).toHaveAccessibleDescription(/The name must be a DNS label/);
    await page.getByLabel("CPU cores").fill("0");
    await page.getByLabel("Memory").fill("-1Gi");
    await page.getByRole("button", { name: "Create", exact: true }).click();
    await expect(page.getByTestId("form-problems")).toHaveText(/^Fix 3 problem/);
    for (const label of ["CPU cores", "Memory"])
      await expect(page.getByLabel(label)).toHaveAttribute("aria-invalid", "true");
    await expect(page.getByLabel("Memory")).toHaveAccessibleDescription(/Memory must be greater than 0, got -1Gi/);
    await expect(page.locator('[data-path="spec.template.spec.domain.memory.guest"]')).toHaveAttribute(
      "title",
      "API field: spec.template.spec.domain.memory.guest",
    );
    await expect(page).toHaveURL(/\/vms\/new/);

    // Allowed, but probably not meant: a warning, not an error.
    await page.getByLabel("Memory").fill("10Ti");
    await expect(page.getByLabel("Memory")).toHaveAttribute("aria-invalid", "false");
    await expect(page.getByLabel("Memory")).toHaveAccessibleDescription(
      /No node can hold 10240\.0 GiB: the largest, kubevirt-ts-node(-\d+)?, has .* GiB for pods/,
    );
    await page.getByLabel("Cloud-init user").fill("root");
    await expect(page.getByLabel("Password")).toHaveAccessibleDescription(/nobody can log in as root/);
    await expect(page.getByLabel("Cloud-init user")).toHaveAccessibleDescription(/prefer a user of your own/);
  },
);

test(
  "the form sizes a VM by one of the cluster's instancetypes and names a guest " +
    "OS preference instead of CPU and memory",
  async ({ page }) => {
    await signIn(page, "admin");
    await page.goto(`/vms/new?ns=${namespace}`);
    await page.getByLabel("Name", { exact: true }).fill("sized-1");
    await expect(page.getByLabel("Size")).toContainText("u1.small: 1 vCPU, 2Gi");
    await page.getByLabel("Size").selectOption("u1.small");
    // The instancetype gives CPU and memory: the form no longer asks for them.
    await expect(page.getByLabel("Memory")).toHaveCount(0);
    await page.getByLabel("Guest OS").selectOption("debian");
    await page.getByLabel("Run strategy").selectOption("Halted");
    await page.getByRole("button", { name: "Create", exact: true }).click();
    await expect(page).toHaveURL(new RegExp(`/vms/${namespace}/sized-1`));
    await expect(page.getByTestId("vm-status")).toHaveText("Stopped");
    await page.getByRole("tab", { name: "YAML" }).click();
    const yaml = page.getByRole("tabpanel", { name: "YAML" });
    await expect(yaml).toContainText("instancetype:");
    await expect(yaml).toContainText("name: u1.small");
  },
);

test("a VM made in YAML mode runs, and its serial console takes commands", async ({ page }) => {
  await signIn(page, "admin");
  await page.goto(`/vms/new?ns=${namespace}`);
  await page.getByRole("button", { name: "YAML" }).click();
  await page
    .getByLabel("VirtualMachine manifest (kubevirt.io/v1)")
    .fill(JSON.stringify(tinyVm("tiny-1", imageOf("tiny-guest")), null, 2));
  await page.getByRole("button", { name: "Create", exact: true }).click();
  await expect(page).toHaveURL(new RegExp(`/vms/${namespace}/tiny-1`));
  await expect(page.getByTestId("vm-status")).toHaveText("Running", slow);

  await page.getByRole("tab", { name: "Console" }).click();
  await expect(page.getByTestId("console-state")).toHaveText("Connected", slow);
  const terminal = page.getByTestId("serial-console");
  // The guest's shell is up once it shows its prompt.
  await expect(terminal.locator(".xterm-rows")).toContainText("/ #", slow);
  await terminal.click();
  await page.keyboard.type("echo dashboard-$((6*7))\n");
  await expect(terminal.locator(".xterm-rows")).toContainText("dashboard-42", slow);

  // Reconnecting gives a fresh session on the same console.
  await page.getByRole("button", { name: "Reconnect" }).click();
  await expect(page.getByTestId("console-state")).toHaveText("Connected", slow);
});

test(
  "a VM's page lists its disks: the one on a claim is kept across stops, with the " +
    "claim's size and its device in the guest",
  async ({ page }) => {
    claim(namespace, "web-data", "128Mi");
    const vm = tinyVmOnClaim("tiny-disk", imageOf("tiny-guest"), "web-data");
    await signIn(page, "admin");
    await page.goto(`/vms/new?ns=${namespace}`);
    await page.getByRole("button", { name: "YAML" }).click();
    await page.getByLabel("VirtualMachine manifest (kubevirt.io/v1)").fill(JSON.stringify(vm, null, 2));
    await page.getByRole("button", { name: "Create", exact: true }).click();
    await expect(page).toHaveURL(new RegExp(`/vms/${namespace}/tiny-disk`));
    await expect(page.getByTestId("vm-status")).toHaveText("Running", slow);
    const row = page.getByTestId("vm-disks").getByRole("row", { name: /data/ });
    await expect(row).toContainText("claim web-data");
    await expect(row.getByRole("cell").nth(3)).toHaveText("yes");
    await expect(row.getByRole("cell").nth(4)).toHaveText("128Mi", slow);
    await expect(row.getByRole("cell").nth(5)).toHaveText("/dev/vda", slow);
  },
);

test("the VNC tab shows the guest's display", async ({ page }) => {
  await signIn(page, "admin");
  await page.goto(`/vms/${namespace}/tiny-1?ns=${namespace}&tab=vnc`);
  await expect(page.getByTestId("vnc-state")).toHaveText("Connected", slow);
  await expect(page.getByTestId("vnc-screen").locator("canvas")).toBeVisible();
  await expect(page.getByLabel("Send keys")).toBeEnabled();
});

test("a Manual VM starts and stops on request from its page, as KubeVirt's start and stop subresources do", async ({
  page,
}) => {
  await signIn(page, "admin");
  await page.goto(`/vms/new?ns=${namespace}`);
  await page.getByRole("button", { name: "YAML" }).click();
  const manual = tinyVm("manual-1", imageOf("tiny-guest"));
  manual.spec.runStrategy = "Manual";
  await page.getByLabel("VirtualMachine manifest (kubevirt.io/v1)").fill(JSON.stringify(manual, null, 2));
  await page.getByRole("button", { name: "Create", exact: true }).click();
  await expect(page).toHaveURL(new RegExp(`/vms/${namespace}/manual-1`));
  await expect(page.getByTestId("vm-status")).toHaveText("Stopped");
  const actions = page.getByRole("group", { name: "Actions" });
  await expect(actions.getByRole("button", { name: "Stop", exact: true })).toBeDisabled();

  await actions.getByRole("button", { name: "Start", exact: true }).click();
  await expect(page.getByTestId("vm-status")).toHaveText("Running", slow);
  await expect(actions.getByRole("button", { name: "Start", exact: true })).toBeDisabled();
  await actions.getByRole("button", { name: "Stop", exact: true }).click();
  await page.getByRole("dialog", { name: "Stop manual-1?" }).getByRole("button", { name: "Stop manual-1" }).click();
  await expect(page.getByTestId("vm-status")).toHaveText("Stopped", slow);
  // Still Manual: the start and stop were requests in the VM's status, not changes of its spec.
  await page.getByRole("tab", { name: "YAML" }).click();
  await expect(page.getByRole("tabpanel", { name: "YAML" })).toContainText("runStrategy: Manual");
});

test(
  "a viewer sees the VMs, reads once that they may only view them, reads the " +
    "serial log, and is refused the console",
  async ({ page }) => {
    await signIn(page, "viewer");
    await page.goto(`/vms?ns=${namespace}`);
    await expect(page.getByRole("link", { name: "tiny-1", exact: true })).toBeVisible();
    const create = page.getByRole("button", { name: "Create VM" });
    await expect(create).toBeDisabled();
    await expect(create).toHaveAccessibleDescription(
      /You may not create VMs in .*: it takes create on virtualmachines/,
    );

    await page.goto(`/vms/${namespace}/tiny-1?ns=${namespace}`);
    await expect(page.getByTestId("vm-status")).toHaveText("Running", slow);
    // One sentence instead of a row of disabled buttons.
    await expect(page.getByTestId("view-only")).toHaveText(/You may view this VM, not change it/);
    await expect(page.getByRole("group", { name: "Actions" })).toHaveCount(0);
    // Viewers read the serial log, as Kubernetes' view role reads pod logs.
    await page.getByRole("tab", { name: "Log" }).click();
    await expect(page.getByTestId("serial-log")).toContainText("Linux version", slow);
    await page.getByRole("tab", { name: "Console" }).click();
    await expect(page.getByRole("tabpanel").getByRole("alert")).toHaveText(
      /You may not open the serial console of VMs in .*: it takes get on virtualmachineinstances\/console/,
    );

    // Straight at the websocket, the API refuses the viewer too: 4403 and the reason.
    const protocols = [
      "plain.kubevirt.io",
      `base64url.bearer.authorization.k8s.io.${Buffer.from(tokenOf("viewer")).toString("base64url")}`,
    ];
    const closed = await page.evaluate(
      async ({ ns, subprotocols }) => {
        const socket = new WebSocket(
          `${location.protocol === "https:" ? "wss" : "ws"}://${location.host}` +
            `/apis/subresources.kubevirt.io/v1/namespaces/${ns}/virtualmachineinstances/tiny-1/console`,
          subprotocols,
        );
        return new Promise<{ code: number; reason: string }>((resolve) => {
          socket.onclose = (e) => {
            resolve({ code: e.code, reason: e.reason });
          };
        });
      },
      { ns: namespace, subprotocols: protocols },
    );
    expect(closed.code).toBe(4403);
    expect(closed.reason).toContain("You may not open the serial console");
  },
);

test("the admin sets and removes labels of VMs from the list in one go, and the search finds them by it", async ({
  page,
  virtualMachinesPage,
}) => {
  await signIn(page, "admin");
  await virtualMachinesPage.goto(namespace);
  for (const name of ["tiny-1", "manual-1"]) await virtualMachinesPage.row(name).getByRole("checkbox").check();
  const selection = page.getByRole("group", { name: "Selected VMs" });
  await selection.getByRole("button", { name: "Labels…" }).click();
  const dialog = page.getByRole("dialog", { name: "Labels of 2 VMs" });
  await dialog.getByLabel("Set (key=value, one per line)").fill("team=blue\nbroken");
  await dialog.getByRole("button", { name: "Apply" }).click();
  // A bad line changes nothing, and says which (a failure's note is an alert, and stays until dismissed).
  const refused = page
    .getByRole("alert")
    .filter({ hasText: "Labels: nothing changed. Labels to set, line 2: write key=value." });
  await expect(refused).toBeVisible();
  await refused.getByRole("button", { name: /Dismiss/ }).click();
  expect(kubectl("get", "vm", "tiny-1", "-n", namespace, "-o", "jsonpath={.metadata.labels.team}")).toBe("");

  await selection.getByRole("button", { name: "Labels…" }).click();
  await dialog.getByLabel("Set (key=value, one per line)").fill("team=blue");
  await dialog.getByRole("button", { name: "Apply" }).click();
  await expect(page.getByRole("status").filter({ hasText: "Labels: done for tiny-1, manual-1." })).toBeVisible();
  for (const name of ["tiny-1", "manual-1"])
    expect(kubectl("get", "vm", name, "-n", namespace, "-o", "jsonpath={.metadata.labels.team}")).toBe("blue");
  await page.getByLabel("Filter by name or label").fill("team=blue");
  await expect(virtualMachinesPage.table.locator("tbody tr")).toHaveCount(2);
  for (const name of ["tiny-1", "manual-1"]) await expect(virtualMachinesPage.row(name)).toBeVisible();

  await selection.getByRole("button", { name: "Labels…" }).click();
  await dialog.getByLabel("Remove (keys, one per line)").fill("team");
  await dialog.getByRole("button", { name: "Apply" }).click();
  await expect(page.getByRole("status").filter({ hasText: "Labels: done for tiny-1, manual-1." }).last()).toBeVisible();
  await expect
    .poll(() => kubectl("get", "vm", "tiny-1", "-n", namespace, "-o", "jsonpath={.metadata.labels.team}"))
    .toBe("");
  await page.getByLabel("Filter by name or label").fill("");
});

test("the admin deletes VMs from the list in one go", async ({ page, virtualMachinesPage }) => {
  await signIn(page, "admin");
  await virtualMachinesPage.goto(namespace);
  for (const name of ["debian-1", "sized-1", "tiny-1", "tiny-disk", "manual-1"])
    await virtualMachinesPage.row(name).getByRole("checkbox").check();
  await page.getByRole("group", { name: "Selected VMs" }).getByRole("button", { name: "Delete", exact: true }).click();
  const confirm = page.getByRole("dialog", { name: "Delete 5 VMs?" });
  await expect(confirm).toContainText("debian-1, sized-1, tiny-1, tiny-disk, manual-1");
  await confirm.getByRole("button", { name: "Delete 5 VMs" }).click();
  await expect(page.getByText(`No virtual machines in ${namespace} yet.`)).toBeVisible(slow);
});
