import { Counter, Registry } from "prom-client";
import { afterEach, describe, expect, it } from "vitest";
import { type OpsServer, startOpsServer } from "./ops-server.ts";

let server: OpsServer | undefined;
afterEach(async () => {
  await server?.close();
});

async function get(path: string): Promise<{ status: number; body: string }> {
  const res = await fetch(`http://127.0.0.1:${String(server?.port)}${path}`);
  return { status: res.status, body: await res.text() };
}

describe("the operations endpoint", () => {
  it("reports liveness, readiness with reasons, and metrics", async () => {
    let apiReachable = false;
    const registry = new Registry();
    new Counter({ name: "test_syncs_total", help: "syncs", registers: [registry] }).inc(3);
    server = await startOpsServer({
      port: 0,
      host: "127.0.0.1",
      registry,
      checks: { apiServer: () => (apiReachable ? undefined : "cannot reach the API server") },
    });

    expect(await get("/healthz")).toEqual({ status: 200, body: '{"status":"ok"}\n' });
    const notReady = await get("/readyz");
    expect(notReady.status).toBe(503);
    expect(JSON.parse(notReady.body)).toEqual({
      status: "not ready",
      failures: { apiServer: "cannot reach the API server" },
    });

    apiReachable = true;
    expect((await get("/readyz")).status).toBe(200);
    expect((await get("/metrics")).body).toContain("test_syncs_total 3");
    expect((await get("/nope")).status).toBe(404);
  });

  it("counts a check that throws as failing", async () => {
    server = await startOpsServer({
      port: 0,
      host: "127.0.0.1",
      registry: new Registry(),
      checks: {
        broken: () => {
          throw new Error("no connection");
        },
      },
    });
    expect(JSON.parse((await get("/readyz")).body)).toEqual({
      status: "not ready",
      failures: { broken: "no connection" },
    });
  });

  it("answers its own paths by their checks, with the reason when one fails", async () => {
    let guestAnswers = false;
    server = await startOpsServer({
      port: 0,
      host: "127.0.0.1",
      registry: new Registry(),
      endpoints: {
        "/probes/readiness": () => (guestAnswers ? undefined : "tcp port 22: the guest refused the connection"),
      },
    });
    expect(await get("/probes/readiness")).toEqual({
      status: 503,
      body: '{"status":"failing","reason":"tcp port 22: the guest refused the connection"}\n',
    });
    guestAnswers = true;
    expect((await get("/probes/readiness")).status).toBe(200);
    expect((await get("/probes/liveness")).status).toBe(404);
  });

  it("serves /metrics only to the callers its access lets in, and the rest of the port to anyone", async () => {
    const seen: (string | undefined)[] = [];
    const registry = new Registry();
    new Counter({ name: "test_vms_total", help: "vms", registers: [registry] }).inc(2);
    server = await startOpsServer({
      port: 0,
      host: "127.0.0.1",
      registry,
      metricsAccess: (authorization) => {
        seen.push(authorization);
        if (authorization === undefined) return Promise.resolve({ status: 401, reason: "send a bearer token" });
        return Promise.resolve(
          authorization === "Bearer prometheus" ? undefined : { status: 403, reason: "not allowed to get /metrics" },
        );
      },
    });
    const metrics = (authorization?: string) =>
      fetch(`http://127.0.0.1:${String(server?.port)}/metrics`, { headers: authorization ? { authorization } : {} });
    const anonymous = await metrics();
    expect([anonymous.status, await anonymous.text()]).toEqual([401, "send a bearer token\n"]);
    const other = await metrics("Bearer tenant");
    expect([other.status, await other.text()]).toEqual([403, "not allowed to get /metrics\n"]);
    const allowed = await metrics("Bearer prometheus");
    expect([allowed.status, await allowed.text()]).toEqual([200, expect.stringContaining("test_vms_total 2")]);
    expect(seen).toEqual([undefined, "Bearer tenant", "Bearer prometheus"]);
    expect((await get("/healthz")).status).toBe(200);
    expect((await get("/readyz")).status).toBe(200);
  });
});
