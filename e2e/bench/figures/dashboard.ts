import { type IncomingMessage, request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";
import { chromium } from "@playwright/test";
import { custom } from "../../cluster/cluster.ts";
import { DASHBOARD_URL, dashboardTls, mutate } from "../../cluster/dashboard.ts";
import playwrightConfig from "../../playwright.config.ts";
import { tokenOf } from "../../tests/cluster-users.ts";
import { createNamespace, deleteNamespace, waitFor } from "../cluster.ts";
import { type Row, distribution } from "../results.ts";
import { summarize } from "../stats.ts";
import { blankDiskImage, inParallel } from "../workload.ts";

// The dashboard's side: how soon a write reaches the list's SSE stream
// (the API's vms.watch subscription, through the gateway), and how soon the
// VM list with 1,000 VMs is usable in Chromium.

const SEQ = "bench.kubevirt-ts.io/seq";

function haltedVm(name: string, image: string) {
  return {
    apiVersion: "kubevirt.io/v1",
    kind: "VirtualMachine",
    metadata: { name, annotations: { [SEQ]: "0" } },
    spec: {
      runStrategy: "Halted",
      template: {
        spec: {
          domain: {
            memory: { guest: "64Mi" },
            devices: { disks: [{ name: "containerdisk", disk: { bus: "virtio" } }] },
          },
          volumes: [{ name: "containerdisk", containerDisk: { image } }],
        },
      },
    },
  };
}

/** The vms.watch SSE stream of a namespace as the admin user; each data line with its arrival time. */
async function openVmStream(namespace: string) {
  const lines: { at: number; data: string }[] = [];
  const url = new URL(`/trpc/vms.watch?input=${encodeURIComponent(JSON.stringify({ namespace }))}`, DASHBOARD_URL);
  const request = url.protocol === "https:" ? httpsRequest : httpRequest;
  const tls = await dashboardTls();
  const token = tokenOf("admin");
  const req = request(url, { ...tls, headers: { accept: "text/event-stream", authorization: `Bearer ${token}` } });
  const response = await new Promise<IncomingMessage>((resolve, reject) =>
    req.on("response", resolve).on("error", reject).end(),
  );
  if (response.statusCode !== 200) throw new Error(`vms.watch answered ${String(response.statusCode)}`);
  let pending = "";
  response.setEncoding("utf8").on("data", (chunk: string) => {
    const at = performance.now();
    pending += chunk;
    const parts = pending.split("\n");
    pending = parts.pop() ?? "";
    for (const line of parts) if (line.startsWith("data:")) lines.push({ at, data: line.slice(5) });
  });
  return { lines, close: () => req.destroy() };
}

export async function sseFigure(writes = 50): Promise<Row[]> {
  const namespace = await createNamespace("sse");
  try {
    await mutate("admin", "vms.create", { namespace, vm: haltedVm("watched", blankDiskImage()) });
    const stream = await openVmStream(namespace);
    try {
      if (!(await waitFor(() => stream.lines.some((l) => l.data.includes('"LIST"')), 30_000, 20)))
        throw new Error("vms.watch sent no list within 30 s");
      const samples: number[] = [];
      for (let i = 1; i <= writes; i++) {
        const value = `w${String(i)}-${Math.random().toString(36).slice(2, 8)}`;
        const from = stream.lines.length;
        const started = performance.now();
        await custom.patchNamespacedCustomObject({
          group: "kubevirt.io",
          version: "v1",
          namespace,
          plural: "virtualmachines",
          name: "watched",
          body: [{ op: "replace", path: `/metadata/annotations/${SEQ.replace("/", "~1")}`, value }],
        });
        let seenAt: number | undefined;
        await waitFor(
          () => {
            seenAt = stream.lines.slice(from).find((l) => l.data.includes(value))?.at;
            return seenAt !== undefined;
          },
          10_000,
          0,
        );
        if (seenAt === undefined) throw new Error(`write ${String(i)} did not reach the vms.watch stream within 10 s`);
        samples.push(seenAt - started);
      }
      return [
        {
          id: "sse.write-to-list",
          figure: `a write to a VM → the dashboard's list stream shows it (${String(writes)} writes)`,
          unit: "ms",
          values: distribution(summarize(samples)),
          method:
            "JSON patch of an annotation with the admin kubeconfig sent → the SSE event carrying it on " +
            "/trpc/vms.watch at the dashboard's address (gateway → api → API server watch), one write at a " +
            "time",
        },
      ];
    } finally {
      stream.close();
    }
  } finally {
    await deleteNamespace(namespace).catch(() => undefined);
  }
}

export async function listFigure(count = 1000): Promise<Row[]> {
  const namespace = await createNamespace("list");
  const image = blankDiskImage();
  const names = Array.from({ length: count }, (_, i) => `vm-${String(i).padStart(4, "0")}`);
  const browser = await chromium.launch({ ...playwrightConfig.use?.launchOptions, headless: true });
  try {
    const created = performance.now();
    await inParallel(names, 8, async (name) => {
      await mutate("admin", "vms.create", { namespace, vm: haltedVm(name, image) });
    });
    const createSeconds = (performance.now() - created) / 1000;
    const context = await browser.newContext({
      baseURL: DASHBOARD_URL,
      ignoreHTTPSErrors: true,
      viewport: { width: 1280, height: 720 },
    });
    const page = await context.newPage();
    await page.goto("/");
    await page.getByLabel("Kubernetes bearer token").fill(tokenOf("admin"));
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.waitForURL(/\/vms/);
    // A fresh navigation to the list; the page's clock starts at its navigation.
    await page.goto(`/vms?ns=${namespace}`, { waitUntil: "commit" });
    // Every VM listed: the count says all of them, and the first page's rows are drawn (the list shows 100 at a time).
    const rowsShown = await page.waitForFunction(
      (n) =>
        document.querySelector('[data-testid="list-count"]')?.textContent === `${String(n)} of ${String(n)} VMs` &&
        document.querySelectorAll('input[aria-label^="Select vm-"]').length >= Math.min(n, 100)
          ? performance.now()
          : false,
      count,
      { timeout: 300_000, polling: "raf" },
    );
    const shownMs = (await rowsShown.jsonValue()) as number;
    // Sorted by name, last first (the list comes sorted by name, first first: one click turns it): the last VM's row
    // comes to the top.
    const sortStarted = await page.evaluate(() => performance.now());
    await page.getByRole("columnheader", { name: "Name" }).getByRole("button").click();
    const last = names.at(-1) ?? "";
    const sorted = await page.waitForFunction(
      (name) =>
        document.querySelector('input[aria-label^="Select vm-"]')?.getAttribute("aria-label") === `Select ${name}`
          ? performance.now()
          : false,
      last,
      { timeout: 60_000, polling: "raf" },
    );
    const sortedMs = (await sorted.jsonValue()) as number;
    const filterStarted = await page.evaluate(() => performance.now());
    await page.getByLabel("Filter by name").fill(names.at(-2) ?? "");
    const filtered = await page.waitForFunction(
      () => (document.querySelectorAll('input[aria-label^="Select vm-"]').length === 1 ? performance.now() : false),
      undefined,
      { timeout: 60_000, polling: "raf" },
    );
    const filteredMs = (await filtered.jsonValue()) as number;
    await context.close();
    const method =
      `${String(count)} Halted VMs created through the API (vms.create, 8 at a ` +
      `time, ${createSeconds.toFixed(0)} s); Chromium ` +
      `(${playwrightConfig.use?.launchOptions?.executablePath ?? ""}) signed in as the admin, then ` +
      "a fresh navigation to /vms?ns=…; times on the page's clock from navigation start";
    return [
      {
        id: "list.1000.rows",
        figure: `VM list with ${String(count)} VMs: navigation → all counted, first page of rows rendered`,
        unit: "ms",
        values: { value: shownMs },
        method,
      },
      {
        id: "list.1000.sort",
        figure: `VM list with ${String(count)} VMs: sort by name, last first (one click) → the last VM's row on top`,
        unit: "ms",
        values: { value: sortedMs - sortStarted },
        method,
      },
      {
        id: "list.1000.interactive",
        figure:
          `VM list with ${String(count)} VMs: time to interactive (rows rendered, ` +
          "sorted, then a name filter typed and applied)",
        unit: "ms",
        values: { value: filteredMs },
        method,
      },
      {
        id: "list.1000.filter",
        figure: `VM list with ${String(count)} VMs: name filter typed → list shows the one match`,
        unit: "ms",
        values: { value: filteredMs - filterStarted },
        method,
      },
    ];
  } finally {
    await browser.close();
    await deleteNamespace(namespace, 600_000).catch(() => undefined);
  }
}
