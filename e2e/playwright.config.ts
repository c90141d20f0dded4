import { fileURLToPath } from "node:url";
import { defineConfig } from "@playwright/test";
import { BROWSER_NETNS } from "@kubevirt-ts/local-cluster/config";

// The dashboard installed on the local cluster when KUBEVIRT_TS_DASHBOARD_URL
// names it (as `make test` does); otherwise the standalone build, served on
// loopback, for working on the dashboard alone.
const dashboard = process.env.KUBEVIRT_TS_DASHBOARD_URL;
const port = Number(process.env.KUBEVIRT_TS_E2E_PORT ?? "3100");
const baseURL = dashboard ?? `http://127.0.0.1:${port}`;
const CHROMIUM = "/usr/bin/chromium";

export default defineConfig({
  testDir: "tests",
  outputDir: "test-results",
  fullyParallel: true,
  forbidOnly: Boolean(process.env.CI),
  retries: 0,
  workers: 2,
  reporter: [["list"], ["./failure-list-playwright.ts", { file: process.env.KUBEVIRT_TS_FAILURES }]],
  timeout: 30_000,
  expect: { timeout: 10_000 },
  use: {
    baseURL,
    // The chart serves the dashboard with a self-signed certificate. The
    // browser is told to accept it rather than trust it: Chromium takes no
    // CA from the command line (only an NSS database), and Playwright's
    // request context takes none at all. What this waives is checked where
    // it can be, in transport.spec.ts: the certificate served is the one in
    // the chart's Secret, valid for the dashboard's address.
    ignoreHTTPSErrors: baseURL.startsWith("https:"),
    headless: true,
    screenshot: "on",
    trace: "retain-on-failure",
    // Debian's Chromium: Playwright's own browser downloads are not used. With
    // the local cluster, it runs in the network namespace cluster-up made for
    // it: on the node itself, every pod's new veth would make Chromium abort
    // its requests in flight with ERR_NETWORK_CHANGED.
    launchOptions: {
      executablePath: dashboard ? fileURLToPath(new URL("chromium-in-netns.sh", import.meta.url)) : CHROMIUM,
      env: { ...process.env, KUBEVIRT_TS_BROWSER_NETNS: BROWSER_NETNS, KUBEVIRT_TS_CHROMIUM: CHROMIUM },
      args: [
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
      ],
    },
  },
  projects: [{ name: "chromium", use: { browserName: "chromium", viewport: { width: 1280, height: 720 } } }],
  webServer: dashboard
    ? undefined
    : {
        // The standalone server, as the web image runs it.
        command: "npm run start -w @kubevirt-ts/web",
        env: { PORT: String(port), HOSTNAME: "127.0.0.1" },
        cwd: "..",
        url: `${baseURL}/healthz`,
        reuseExistingServer: false,
        timeout: 60_000,
        stdout: "ignore",
        stderr: "pipe",
      },
});
