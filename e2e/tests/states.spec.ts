import { once } from "node:events";
import { type Server, createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { NODE_IP } from "@kubevirt-ts/local-cluster";
import type { Browser, BrowserContext, Locator, Page } from "@playwright/test";
import { WebSocket } from "ws";
import { tinyVm, tinyVmOnClaim, tinyVmOnDataVolume, tinyVmWithSpec } from "../manifests.ts";
import {
  createNamespace,
  createObject,
  dashboardCertificate,
  deleteNamespace,
  imageOf,
  kubectl,
  tokenOf,
} from "./cluster-users.ts";
import { expect, signIn, test } from "./fixtures.ts";

// A VM's state as the dashboard shows it, one printable status at a time:
// its status with an icon and the reason in words, conditions of the VM and
// of its instance apart and never contradicting the status, and which
// actions are enabled (the others disabled with the reason). Destructive
// actions are confirmed in the page; Force stop turns off a guest that
// ignores the shutdown request. The Log tab, the node view and the list's
// sorting and search on the same VMs; the graphs of a guest at work.

test.describe.configure({ mode: "serial", timeout: 300_000 });

const slow = { timeout: 240_000 };
let namespace = "";

test.beforeAll(() => {
  namespace = createNamespace("e2e-states");
});

test.afterAll(() => {
  deleteNamespace(namespace);
});

const ACTIONS = [
  "Start",
  "Stop",
  "Restart",
  "Pause",
  "Unpause",
  "Soft reboot",
  "Reset",
  "Force stop",
  "Delete",
] as const;
type ActionLabel = (typeof ACTIONS)[number];

/** Exactly these actions are enabled; the others are disabled, with these reasons where given. */
async function expectActions(
  page: Page,
  enabled: ActionLabel[],
  reasons: Partial<Record<ActionLabel, string | RegExp>> = {},
): Promise<void> {
  const group = page.getByRole("group", { name: "Actions" });
  for (const label of ACTIONS) {
    const button = group.getByRole("button", { name: label, exact: true });
    if (enabled.includes(label)) await expect(button, `${label} is enabled`).toBeEnabled();
    else await expect(button, `${label} is disabled`).toBeDisabled();
  }
  for (const [label, reason] of Object.entries(reasons))
    await expect(group.getByRole("button", { name: label, exact: true })).toHaveAccessibleDescription(reason);
}

const status = (page: Page): Locator => page.getByTestId("vm-status-line");

async function open(page: Page, name: string): Promise<void> {
  await page.goto(`/vms/${namespace}/${name}?ns=${namespace}`);
}

test("a stopped VM: Start and Delete only, and its conditions say it is not running, not that it runs", async ({
  page,
}) => {
  const vm = tinyVm("halted", imageOf("tiny-guest"), namespace);
  vm.spec.runStrategy = "Halted";
  createObject(vm);
  await signIn(page);
  await open(page, "halted");
  await expect(page.getByTestId("vm-status")).toHaveText("Stopped");
  await expect(status(page).locator("[data-tone]")).toHaveAttribute("data-tone", "stopped");
  await expectActions(page, ["Start", "Delete"], {
    Stop: "VM is not running.",
    Pause: "The VM is not running; start it first.",
  });
  await expect(page.getByTestId("vm-conditions")).toContainText("Not running");
  await expect(page.getByTestId("vm-conditions")).not.toContainText(/guest is running|Ready/);
  await expect(page.getByRole("region", { name: "Its running instance" })).toContainText(
    "None: the VM is not running.",
  );
});

test(
  "running, paused, stopping and force stopped: the actions follow each state, " +
    "and Force stop does not wait for the guest",
  async ({ page }) => {
    // The tiny guest has no ACPI daemon: it ignores the shutdown request, so it stops only when its grace period ends
    // or it is forced.
    createObject(
      tinyVmWithSpec("cycle", imageOf("tiny-guest"), namespace, (spec) => ({
        ...spec,
        terminationGracePeriodSeconds: 600,
      })),
    );
    await signIn(page);
    await open(page, "cycle");
    await expect(page.getByTestId("vm-status")).toHaveText("Running", slow);
    await expect(status(page).locator("[data-tone]")).toHaveAttribute("data-tone", "running");
    await expectActions(page, ["Stop", "Restart", "Pause", "Soft reboot", "Reset", "Force stop", "Delete"], {
      Start: "The VM is already running.",
      Unpause: "The VMI is not paused.",
    });
    await expect(page.getByTestId("vm-conditions")).toContainText("Ready");
    await expect(page.getByTestId("vm-conditions")).not.toContainText(/not ready/i);
    await expect(page.getByTestId("vmi-conditions")).toContainText("Ready");

    const actions = page.getByRole("group", { name: "Actions" });
    await actions.getByRole("button", { name: "Pause", exact: true }).click();
    await expect(page.getByRole("status").filter({ hasText: "Pause cycle: asked" })).toBeVisible();
    await expect(page.getByTestId("vm-status")).toHaveText("Paused", slow);
    await expectActions(page, ["Stop", "Restart", "Unpause", "Force stop", "Delete"], {
      Start: "The VM is running, paused; Unpause resumes it.",
      Reset: "The VMI is paused; unpause it before reset.",
    });
    // Paused once for the VM and once for its instance, each in its own list.
    await expect(page.getByTestId("vm-conditions").locator('[data-type="Paused"]')).toHaveCount(1);
    await expect(page.getByTestId("vmi-conditions").locator('[data-type="Paused"]')).toHaveCount(1);
    await actions.getByRole("button", { name: "Unpause", exact: true }).click();
    await expect(page.getByTestId("vm-status")).toHaveText("Running", slow);

    // Stop asks first, in the page, naming the VM.
    await actions.getByRole("button", { name: "Stop", exact: true }).click();
    const dialog = page.getByRole("dialog", { name: "Stop cycle?" });
    await expect(dialog).toBeVisible();
    await dialog.getByRole("button", { name: "Cancel" }).click();
    await expect(dialog).toBeHidden();
    await expect(page.getByTestId("vm-status")).toHaveText("Running");
    await actions.getByRole("button", { name: "Stop", exact: true }).click();
    await dialog.getByRole("button", { name: "Stop cycle" }).click();
    const asked = page.getByRole("status").filter({ hasText: "Stop cycle: asked" });
    await expect(asked).toBeVisible();
    await asked.getByRole("button", { name: /Dismiss/ }).click();
    await expect(asked).toBeHidden();
    await expect(page.getByTestId("vm-status")).toHaveText("Stopping", slow);
    await expect(status(page).locator("[data-tone]")).toHaveAttribute("data-tone", "transition");
    await expect(page.getByTestId("vm-status-reason")).toContainText("600 s");
    await expectActions(page, ["Force stop", "Delete"], {
      Stop: "The VM is already stopping; Force stop turns it off now.",
      Restart: "The VM is stopping; Force stop turns it off now.",
      Start: "The VM is stopping; start it again once it has stopped.",
    });

    await actions.getByRole("button", { name: "Force stop", exact: true }).click();
    await page
      .getByRole("dialog", { name: "Force stop cycle?" })
      .getByRole("button", { name: "Force stop cycle" })
      .click();
    // Well within the 600 s the guest would otherwise have.
    await expect(page.getByTestId("vm-status")).toHaveText("Stopped", { timeout: 120_000 });
    await expectActions(page, ["Start", "Delete"]);
  },
);

test("a VM that fits no node says why in the scheduler's words, and may be stopped but not started again", async ({
  page,
}) => {
  const huge = tinyVmWithSpec("huge", imageOf("tiny-guest"), namespace, (spec) => ({
    ...spec,
    domain: { ...spec.domain, memory: { guest: "10Ti" } },
  }));
  createObject({ ...huge, metadata: { ...huge.metadata, labels: { app: "big" } } });
  await signIn(page);
  await open(page, "huge");
  await expect(page.getByTestId("vm-status")).toHaveText("Cannot be placed on a node", slow);
  await expect(status(page).locator("[data-tone]")).toHaveAttribute("data-tone", "problem");
  await expect(page.getByTestId("vm-status-reason")).toContainText(/Insufficient memory/);
  await expectActions(page, ["Stop", "Restart", "Force stop", "Delete"], {
    Start: /already starting, but cannot be placed on a node/,
  });
  await expect(page.getByTestId("vmi-conditions")).toContainText("Not placed on a node");
});

test("a VM whose image cannot be pulled, and one whose claim is missing, are problems with their reason", async ({
  page,
}) => {
  // Nothing listens on port 1 of the node's loopback: the pull fails at once.
  createObject(tinyVm("no-image", "127.0.0.1:1/kubevirt-ts/missing:v0", namespace));
  createObject(tinyVmOnClaim("no-claim", imageOf("tiny-guest"), "nowhere", namespace));
  await signIn(page);
  await open(page, "no-image");
  await expect(page.getByTestId("vm-status")).toHaveText(/Cannot pull its image/, slow);
  await expect(status(page).locator("[data-tone]")).toHaveAttribute("data-tone", "problem");
  await expect(page.getByTestId("vm-status-reason")).toContainText("127.0.0.1:1");
  await expectActions(page, ["Stop", "Restart", "Force stop", "Delete"]);

  await open(page, "no-claim");
  await expect(page.getByTestId("vm-status")).toHaveText("Its disk's claim is missing", slow);
  await expect(page.getByTestId("vm-status-reason")).toContainText("nowhere");

  // The list shows the same words and icons, and filters the problems together.
  await page.goto(`/vms?ns=${namespace}`);
  await page.getByLabel("Status").selectOption("Problem");
  await expect(page.getByRole("table").locator('[data-tone="problem"]')).toHaveCount(3);
  await expect(page.getByRole("table").getByRole("link", { name: "halted", exact: true })).toHaveCount(0);
});

test(
  "a VM whose disk is being filled is Provisioning, one whose disk's source cannot be read " +
    "is a problem; neither may be started, both stopped",
  async ({ page }) => {
    // The disks' source: an image that never comes (the import waits) and one that is not there (404).
    const server: Server = createServer((req, res) => {
      if (req.url === "/missing.qcow2") res.writeHead(404, "Not Found").end();
    });
    await new Promise<void>((resolve) => server.listen(0, NODE_IP, resolve));
    const source = (file: string) => ({
      source: { http: { url: `http://${NODE_IP}:${String((server.address() as AddressInfo).port)}/${file}` } },
      storage: { resources: { requests: { storage: "32Mi" } } },
    });
    try {
      createObject(tinyVmOnDataVolume("filling", imageOf("tiny-guest"), source("never.qcow2"), namespace));
      createObject(tinyVmOnDataVolume("unfillable", imageOf("tiny-guest"), source("missing.qcow2"), namespace));
      await signIn(page);
      await open(page, "filling");
      await expect(page.getByTestId("vm-status")).toHaveText("Preparing its disks", slow);
      await expect(status(page).locator("[data-tone]")).toHaveAttribute("data-tone", "transition");
      await expectActions(page, ["Stop", "Force stop", "Delete"], {
        Start: /Always does not support manual start requests/,
      });

      await open(page, "unfillable");
      await expect(page.getByTestId("vm-status")).toHaveText("Its disk could not be filled", slow);
      await expect(status(page).locator("[data-tone]")).toHaveAttribute("data-tone", "problem");
      await expectActions(page, ["Stop", "Force stop", "Delete"]);
    } finally {
      server.closeAllConnections();
      server.close();
      kubectl("delete", "vm", "filling", "unfillable", "-n", namespace, "--wait=false");
    }
  },
);

test("a VM being deleted reads Deleting, and nothing more can be done to it", async ({ page }) => {
  // A finalizer of the test's own holds the VM in its deletion.
  const held = tinyVm("held", imageOf("tiny-guest"), namespace);
  held.spec.runStrategy = "Halted";
  createObject({ ...held, metadata: { ...held.metadata, finalizers: ["e2e.kubevirt-ts.io/hold"] } });
  kubectl("delete", "vm", "held", "-n", namespace, "--wait=false");
  try {
    await signIn(page);
    await open(page, "held");
    await expect(page.getByTestId("vm-status")).toHaveText("Deleting", slow);
    await expect(status(page).locator("[data-tone]")).toHaveAttribute("data-tone", "transition");
    await expectActions(page, [], { Delete: /already being deleted/ });
  } finally {
    kubectl(
      "patch",
      "vm",
      "held",
      "-n",
      namespace,
      "--type=json",
      "-p",
      '[{"op":"remove","path":"/metadata/finalizers"}]',
    );
  }
});

test("the Log tab shows what the guest printed since boot, and the console shows it when it opens", async ({
  page,
}) => {
  createObject(tinyVm("logged", imageOf("tiny-guest"), namespace));
  await signIn(page);
  await page.goto(`/vms/${namespace}/logged?ns=${namespace}&tab=log`);
  await expect(page.getByTestId("serial-log")).toContainText("Linux version", slow);
  await expect(page.getByTestId("serial-log")).toContainText("kubevirt-ts tiny guest: init reached", slow);
  await expect(page.getByRole("button", { name: "Download" })).toBeEnabled();

  await page.getByRole("tab", { name: "Console" }).click();
  // Before anything is typed: the last lines the guest printed, from its log.
  await expect(page.getByTestId("serial-console").locator(".xterm-rows")).toContainText("/ #", slow);
});

test("the Metrics tab draws CPU, memory, network and disk, and the CPU figure rises when the guest works", async ({
  page,
}) => {
  test.setTimeout(480_000);
  await signIn(page);
  await page.goto(`/vms/${namespace}/logged?ns=${namespace}&tab=metrics`);
  // The first rate comes once the API has sampled the VM twice.
  for (const graph of ["cpu", "memory", "network", "disk"])
    await expect(page.getByTestId(`graph-${graph}`).locator("canvas"), graph).toBeVisible(slow);
  await page.getByText("The figures as a table").click();
  const newestCpu = async () =>
    Number(await page.getByTestId("metrics-table").locator("tbody tr").first().getByRole("cell").nth(1).textContent());
  // The VM came up in the test before: the first rates may still hold its boot, which under emulation takes a whole
  // core. Its figure at rest is the one to rise from.
  await expect.poll(newestCpu, { timeout: 180_000, intervals: [5_000] }).toBeLessThan(0.5);
  const idle = await newestCpu();
  // The guest's own view of its memory, through its balloon driver (KubeVirt attaches the balloon by default).
  await expect(page.getByTestId("graph-memory")).toContainText("Used by the guest", slow);
  await expect(page.getByTestId("metrics-table").locator("tbody tr").first().getByRole("cell").nth(3)).toHaveText(
    /^[\d.]+ MiB$/,
  );

  // The guest works: a busy loop in its shell, started on its console.
  await page.getByRole("tab", { name: "Console" }).click();
  const terminal = page.getByTestId("serial-console");
  await expect(page.getByTestId("console-state")).toHaveText("Connected", slow);
  await terminal.click();
  await page.keyboard.type("while :; do :; done &\n");
  await page.getByRole("tab", { name: "Metrics" }).click();
  await page.getByText("The figures as a table").click();
  // On two cores another suite's VMs may be booting meanwhile and starve the guest's loop for a while: the figure
  // must rise once the guest gets its share.
  await expect.poll(newestCpu, { timeout: 300_000, intervals: [5_000] }).toBeGreaterThan(idle + 0.3);
  // The guest rests again for the tests after this one.
  await page.getByRole("tab", { name: "Console" }).click();
  await expect(page.getByTestId("console-state")).toHaveText("Connected", slow);
  await page.getByTestId("serial-console").click();
  await page.keyboard.type("kill %1\n");
});

/**
 * Two people on one VM's shared console or display (the tab), each in a browser of their own: the first holds the
 * keyboard, the second watches.
 */
async function twoViewers(
  browser: Browser,
  tab: "console" | "vnc",
): Promise<{ first: Page; second: Page; contexts: BrowserContext[] }> {
  const contexts = await Promise.all([
    browser.newContext({ ignoreHTTPSErrors: true }),
    browser.newContext({ ignoreHTTPSErrors: true }),
  ]);
  const [first, second] = await Promise.all(contexts.map((c) => c.newPage()));
  if (!first || !second) throw new Error("no pages");
  const url = `/vms/${namespace}/logged?ns=${namespace}&tab=${tab}`;
  const keyboard = `${tab}-keyboard`;
  await signIn(first);
  await first.goto(url);
  await expect(first.getByTestId(keyboard)).toHaveText("You have the keyboard.", slow);
  await signIn(second);
  await second.goto(url);
  await expect(second.getByTestId(keyboard)).toHaveText(
    /^Watching: system:serviceaccount:default:kubevirt-ts-admin has the keyboard\.$/,
    slow,
  );
  await expect(first.getByTestId(keyboard)).toHaveText("You have the keyboard (1 more watching).");
  return { first, second, contexts };
}

/** The second asks for the keyboard and the first gives it. */
async function handOver(first: Page, second: Page, tab: "console" | "vnc"): Promise<void> {
  await second.getByRole("button", { name: "Ask for the keyboard" }).click();
  await expect(first.getByRole("alert").filter({ hasText: "asks for the keyboard" })).toBeVisible();
  await first.getByRole("button", { name: "Give the keyboard" }).click();
  await expect(second.getByTestId(`${tab}-keyboard`)).toHaveText("You have the keyboard (1 more watching).");
  await expect(first.getByTestId(`${tab}-keyboard`)).toHaveText(/^Watching: /);
}

test(
  "two people on one console: both see the guest, only the holder's keys reach it, " +
    "and the keyboard changes hands on request",
  async ({ browser }) => {
    const { first, second, contexts } = await twoViewers(browser, "console");
    const rows = (p: Page) => p.getByTestId("serial-console").locator(".xterm-rows");
    const type = async (p: Page, line: string) => {
      await p.getByTestId("serial-console").click();
      await p.keyboard.type(`${line}\n`);
    };
    await type(second, "echo from-second-$((2*3))");
    await type(first, "echo from-first-$((2*2))");
    await expect(rows(second)).toContainText("from-first-4", slow);
    await expect(rows(first)).toContainText("from-first-4");
    await expect(rows(first)).not.toContainText("from-second");

    await handOver(first, second, "console");
    await type(second, "echo now-second-$((3*3))");
    await expect(rows(first)).toContainText("now-second-9", slow);
    await Promise.all(contexts.map((c) => c.close()));
  },
);

test(
  "two people on one display: both see it, only the holder's keys reach the guest, " +
    "and the keyboard changes hands on request",
  async ({ browser, page }) => {
    // What reaches the guest's first virtual terminal (the display's keyboard) comes back on its serial console,
    // watched in a page of its own.
    await signIn(page);
    await page.goto(`/vms/${namespace}/logged?ns=${namespace}&tab=console`);
    await expect(page.getByTestId("console-state")).toHaveText("Connected", slow);
    await page.getByTestId("serial-console").click();
    await page.keyboard.type("cat /dev/tty1 &\n");
    const printed = page.getByTestId("serial-console").locator(".xterm-rows");

    const { first, second, contexts } = await twoViewers(browser, "vnc");
    const type = async (p: Page, line: string) => {
      await p.getByTestId("vnc-screen").locator("canvas").click();
      await p.keyboard.type(`${line}\n`);
    };
    for (const p of [first, second]) await expect(p.getByTestId("vnc-screen").locator("canvas")).toBeVisible();
    await expect(second.getByLabel("Send keys")).toBeDisabled();
    await type(second, "from-second-display");
    await type(first, "from-first-display");
    await expect(printed).toContainText("from-first-display", slow);
    await expect(printed).not.toContainText("from-second-display");

    await handOver(first, second, "vnc");
    await expect(second.getByLabel("Send keys")).toBeEnabled();
    await type(second, "now-second-display");
    await expect(printed).toContainText("now-second-display", slow);

    // A client that does not ask to share (virtctl vnc) takes the display over from both, as KubeVirt's; they read why.
    const takeover = new WebSocket(
      `wss://${NODE_IP}:30080/apis/subresources.kubevirt.io/v1/namespaces/` +
        `${namespace}/virtualmachineinstances/logged/vnc`,
      ["plain.kubevirt.io"],
      {
        ca: dashboardCertificate().ca,
        headers: { authorization: `Bearer ${tokenOf("admin")}` },
      },
    );
    await once(takeover, "open");
    for (const p of [first, second])
      await expect(p.getByTestId("vnc-state")).toHaveText("Disconnected: a newer session took over this console", slow);
    takeover.close();
    await Promise.all(contexts.map((c) => c.close()));
  },
);

test("a console pops out into a window of its own, and comes back when that window closes", async ({ page }) => {
  await signIn(page);
  await page.goto(`/vms/${namespace}/logged?ns=${namespace}&tab=console`);
  await expect(page.getByTestId("console-state")).toHaveText("Connected", slow);
  const [popup] = await Promise.all([
    page.waitForEvent("popup"),
    page.getByRole("button", { name: "Open in a new window" }).click(),
  ]);
  // The window has the tab's session (no second sign-in) and the console alone.
  await expect(popup.getByRole("heading", { name: "logged", level: 1 })).toBeVisible();
  await expect(popup.getByTestId("console-state")).toHaveText("Connected", slow);
  await expect(popup.getByRole("navigation", { name: "Sections" })).toHaveCount(0);
  await expect(page.getByTestId("console-popped-out")).toContainText("open in its own window");
  await popup.getByTestId("serial-console").click();
  await popup.keyboard.type("echo popped-$((6*7))\n");
  await expect(popup.getByTestId("serial-console").locator(".xterm-rows")).toContainText("popped-42", slow);
  await popup.close();
  // Back in the tab once the window is gone, with what the guest printed meanwhile.
  await expect(page.getByTestId("console-state")).toHaveText("Connected", slow);
  await expect(page.getByTestId("serial-console").locator(".xterm-rows")).toContainText("popped-42", slow);
});

test("the list of every namespace shows each VM with its namespace, linked to it", async ({ page }) => {
  const other = createNamespace("e2e-states-b");
  try {
    for (const [name, where] of [
      ["elsewhere", other],
      ["local-one", namespace],
    ] as const) {
      const vm = tinyVm(name, imageOf("tiny-guest"), where);
      vm.spec.runStrategy = "Halted";
      createObject(vm);
    }
    await signIn(page);
    await page.goto(`/vms?ns=${namespace}`);
    await page.getByRole("combobox", { name: /^Namespace/ }).selectOption({ label: "All namespaces" });
    await expect(page).toHaveURL(/ns=_all/);
    await expect(page.getByRole("heading", { name: "Virtual machines in every namespace" })).toBeVisible();
    const table = page.getByRole("table");
    await expect(table.getByRole("columnheader", { name: "Namespace" })).toBeVisible();
    await page.getByLabel("Filter by name or label").fill("elsewhere");
    await expect(table.getByRole("row").nth(1).getByRole("cell").nth(1)).toHaveText(other);
    await page.getByLabel("Filter by name or label").fill("local-one");
    await expect(table.getByRole("row").nth(1).getByRole("cell").nth(1)).toHaveText(namespace);
    // Creating takes a namespace: the button says so.
    await expect(page.getByRole("button", { name: "Create VM" })).toHaveAccessibleDescription(
      "Choose the namespace to create it in.",
    );
    await page.getByLabel("Filter by name or label").fill("elsewhere");
    await table.getByRole("link", { name: "elsewhere", exact: true }).click();
    await expect(page).toHaveURL(new RegExp(`/vms/${other}/elsewhere`));
    await expect(page.getByTestId("vm-status")).toHaveText("Stopped", slow);
  } finally {
    deleteNamespace(other);
  }
});

test("the node view lists the node's capacity and the VMs on it, linked both ways", async ({ page }) => {
  await signIn(page);
  await page.goto(`/vms/${namespace}/logged?ns=${namespace}`);
  await expect(page.getByTestId("vm-status")).toHaveText("Running", slow);
  // The VM's node, whichever of the cluster's it is.
  const nodeLink = page.getByRole("link", { name: /^kubevirt-ts-node(-\d+)?$/ });
  const nodeName = (await nodeLink.textContent()) ?? "";
  await nodeLink.click();
  await expect(page.getByRole("heading", { name: "Nodes", level: 1 })).toBeVisible();
  const node = page.getByRole("region", { name: nodeName, exact: true });
  await expect(node).toContainText("Ready");
  await expect(node).toContainText(/CPU: .* cores of .* cores requested/);
  await expect(node.getByRole("meter", { name: "Memory requested" })).toBeVisible();
  await node.getByRole("link", { name: "logged", exact: true }).click();
  await expect(page).toHaveURL(new RegExp(`/vms/${namespace}/logged`));
});

test("the Events page lists the namespace's events, warnings alone on request, each VM's linked to its page", async ({
  page,
}) => {
  await signIn(page);
  await page.goto(`/vms?ns=${namespace}`);
  await page.getByRole("heading", { name: "Virtual machines" }).click();
  // The server-rendered page shows its heading before the shortcuts' listener is attached: keys pressed in between
  // are lost, and pressed again, as a user would.
  await expect(async () => {
    await page.keyboard.press("g");
    await page.keyboard.press("e");
    await expect(page.getByRole("heading", { name: "Events", level: 1 })).toBeVisible({ timeout: 2_000 });
  }).toPass({ timeout: 20_000 });
  const events = page.getByTestId("events");
  const created = events
    .getByRole("row")
    .filter({ hasText: "Created virtual machine pod" })
    .filter({ has: page.getByRole("link", { name: "logged", exact: true }) });
  await expect(created.first()).toContainText("VirtualMachineInstance");
  // The VM that fits no node has the scheduler's warning; with warnings alone, nothing else is listed.
  await page.getByLabel("Warnings only").check();
  await expect(events.getByRole("row").filter({ hasText: "FailedScheduling" }).first()).toBeVisible();
  await expect(events.locator('tbody tr:not([data-type="Warning"])')).toHaveCount(0);
  await page.getByLabel("Warnings only").uncheck();
  await created.first().getByRole("link", { name: "logged", exact: true }).click();
  await expect(page).toHaveURL(new RegExp(`/vms/${namespace}/logged\\?ns=${namespace}&tab=events`));
});

test("the list sorts by any column and searches names and labels; / goes to the search, ? shows the shortcuts", async ({
  page,
}) => {
  await signIn(page);
  await page.goto(`/vms?ns=${namespace}`);
  const table = page.getByRole("table");
  await expect(table.getByRole("link", { name: "huge", exact: true })).toBeVisible();
  const memory = table.getByRole("columnheader", { name: "Memory" });
  await memory.getByRole("button").click();
  await expect(memory).toHaveAttribute("aria-sort", "ascending");
  await memory.getByRole("button").click();
  await expect(memory).toHaveAttribute("aria-sort", "descending");
  // The 10Ti VM first when the largest come first.
  await expect(table.getByRole("row").nth(1)).toContainText("huge");
  await expect(table.getByRole("row").nth(1).getByRole("cell").nth(6)).toHaveText("10Ti");

  await page.keyboard.press("/");
  await expect(page.getByLabel("Filter by name or label")).toBeFocused();
  await page.keyboard.type("no-");
  await expect(table.getByRole("link", { name: /^no-/ })).toHaveCount(2);
  await page.getByLabel("Filter by name or label").fill("app=big");
  await expect(page.getByTestId("list-count")).toHaveText(/^1 of/);
  await expect(table.getByRole("link", { name: "huge", exact: true })).toBeVisible();
  await page.getByLabel("Filter by name or label").fill("");
  await page.getByRole("heading", { name: "Virtual machines" }).click();
  await page.keyboard.press("?");
  await expect(page.getByRole("dialog", { name: "Keyboard shortcuts" })).toBeVisible();
});

test("the overview counts the namespace's VMs by status, each count linked to the list filtered by it", async ({
  page,
}) => {
  await signIn(page);
  await page.goto(`/overview?ns=${namespace}`);
  await expect(page.getByRole("heading", { name: "Overview", level: 1 })).toBeVisible();
  const byStatus = () => {
    const statuses = kubectl(
      "get",
      "vm",
      "-n",
      namespace,
      "-o",
      'jsonpath={range .items[*]}{.status.printableStatus}{"\\n"}{end}',
    )
      .split("\n")
      .filter((s) => s !== "");
    return { all: statuses.length, running: statuses.filter((s) => s === "Running").length };
  };
  const counts = page.getByTestId("vm-counts");
  // The VMs of the tests before, in several states; the page and the API server agree on them.
  await expect
    .poll(async () => ({
      all: Number(await counts.getByTestId("count-all").textContent()),
      running: Number(await counts.getByTestId("count-Running").textContent()),
    }))
    .toEqual(byStatus());
  expect(byStatus().running).toBeGreaterThan(0);
  expect(byStatus().all).toBeGreaterThan(byStatus().running);
  // Both nodes, and the namespace's newest warnings (a VM that fits no node, an image that cannot be pulled).
  await expect(page.getByTestId("overview-nodes").locator("tbody tr")).toHaveCount(2);
  await expect(page.getByTestId("recent-warnings").getByRole("listitem").first()).toBeVisible();

  await counts.getByRole("link", { name: /Running/ }).click();
  await expect(page.getByRole("heading", { name: "Virtual machines" })).toBeVisible();
  await expect(page.getByRole("combobox", { name: /^Status/ })).toHaveValue("Running");
  await expect(page.getByRole("table").locator("tbody tr")).toHaveCount(byStatus().running);
});
