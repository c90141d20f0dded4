import { X509Certificate } from "node:crypto";
import { once } from "node:events";
import { type IncomingMessage, request } from "node:http";
import { connect } from "node:tls";
import { dashboardCertificate, tokenOf } from "./cluster-users.ts";
import { expect, test } from "./fixtures.ts";

// How the dashboard on the local cluster reaches the browser: over HTTPS
// with the certificate of the chart's Secret, valid for the address `make
// up` prints; plain HTTP on the same port only sends browsers to https://;
// strict security headers on every answer; and the token in no URL.

/** The dashboard's address (the config's baseURL) and port. */
function where(baseURL: string | undefined): { dashboard: URL; port: number } {
  const dashboard = new URL(baseURL ?? "");
  return { dashboard, port: Number(dashboard.port || 443) };
}

test("the dashboard is served over HTTPS with the chart's certificate, which is valid for its address", async ({
  baseURL,
}) => {
  const { dashboard, port } = where(baseURL);
  expect(dashboard.protocol).toBe("https:");
  const { cert, ca } = dashboardCertificate();
  // Trusting only the Secret's CA: the handshake succeeds, and the host name is checked.
  const socket = connect({
    host: dashboard.hostname,
    port,
    ca,
    servername: /^[\d.]+$/.test(dashboard.hostname) ? undefined : dashboard.hostname,
  });
  await once(socket, "secureConnect");
  const served = socket.getPeerX509Certificate();
  socket.destroy();
  expect(served?.fingerprint256).toBe(new X509Certificate(cert).fingerprint256);
});

test("plain HTTP on the dashboard's port sends the browser to https:// and refuses API calls", async ({ baseURL }) => {
  const { dashboard, port } = where(baseURL);
  const ask = (path: string, method: string) =>
    new Promise<IncomingMessage>((resolve, reject) => {
      request({ host: dashboard.hostname, port, path, method }, resolve).on("error", reject).end();
    });
  const page = await ask("/vms", "GET");
  page.resume();
  expect(page.statusCode).toBe(308);
  expect(page.headers.location).toBe(`https://${dashboard.host}/vms`);
  const call = await ask("/trpc/whoami", "GET");
  call.resume();
  expect(call.statusCode).toBe(400);
});

test("pages and API answers carry a strict Content-Security-Policy, nosniff and no referrer", async ({
  page,
  request: api,
}) => {
  const response = await page.goto("/");
  for (const headers of [response?.headers() ?? {}, (await api.get("/trpc/whoami")).headers()]) {
    expect(headers["content-security-policy"]).toContain("frame-ancestors 'none'");
    expect(headers["content-security-policy"]).toMatch(/script-src 'self' 'nonce-[^']+'(;|$)/);
    expect(headers["x-content-type-options"]).toBe("nosniff");
    expect(headers["referrer-policy"]).toBe("no-referrer");
  }
  // Next.js's own scripts carry the nonce, so the page runs under the policy: the button enables once hydrated.
  await expect(page.getByRole("button", { name: "Sign in" })).toBeEnabled();
});

test("a signed-in session never puts the token in a URL, live streams included", async ({
  page,
  signInPage,
  overviewPage,
  virtualMachinesPage,
}) => {
  const token = tokenOf("viewer");
  const urls: string[] = [];
  page.on("request", (req) => urls.push(req.url()));
  await signInPage.goto();
  await signInPage.signIn(token);
  await overviewPage.expectShown();
  await page.getByRole("navigation", { name: "Sections" }).getByRole("link", { name: "Virtual machines" }).click();
  await virtualMachinesPage.expectShown();
  await expect(page.getByText("Live", { exact: true })).toBeVisible();

  expect(urls.some((url) => url.includes("/trpc/vms.watch"))).toBe(true);
  for (const url of urls) expect(decodeURIComponent(url)).not.toContain(token);
});
