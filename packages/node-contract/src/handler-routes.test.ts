import { describe, expect, it } from "vitest";
import {
  type HandlerRoute,
  type HandlerRouteMatch,
  HandlerRouteRefusal,
  handlerAnswerMaxBytes,
  handlerPath,
  handlerResultSchema,
  handlerRoutes,
  matchHandlerRoute,
  readHandlerAnswer,
} from "./handler-routes.ts";

const refusal = (run: () => unknown): { status: number; message: string } | undefined => {
  try {
    run();
    return undefined;
  } catch (error) {
    if (!(error instanceof HandlerRouteRefusal)) throw error;
    return { status: error.status, message: error.message };
  }
};

describe("the handler's routes", () => {
  const vmi = { namespace: "ns 1", name: "vm.a" };
  const built: [HandlerRoute, string, HandlerRouteMatch][] = [
    [
      "console",
      handlerPath("console", vmi, { shared: true, viewer: "alice@example" }),
      { route: "console", params: vmi, query: { shared: true, viewer: "alice@example" }, word: "console" },
    ],
    [
      "vnc",
      handlerPath("vnc", vmi),
      { route: "vnc", params: vmi, query: { shared: false, viewer: undefined, preserveSession: false }, word: "vnc" },
    ],
    [
      "portForward",
      handlerPath("portForward", { ...vmi, port: "22", protocol: "tcp" }),
      { route: "portForward", params: { ...vmi, port: "22", protocol: "tcp" }, query: {}, word: "portforward/22/tcp" },
    ],
    [
      "screenshot",
      handlerPath("screenshot", vmi),
      { route: "screenshot", params: vmi, query: {}, word: "vnc/screenshot" },
    ],
    ["serialLog", handlerPath("serialLog", vmi), { route: "serialLog", params: vmi, query: {}, word: "serial-log" }],
    [
      "domainAction",
      handlerPath("domainAction", { ...vmi, action: "softreboot" }),
      { route: "domainAction", params: { ...vmi, action: "softreboot" }, query: {}, word: "softreboot" },
    ],
    [
      "fileSystems",
      handlerPath("fileSystems", { ...vmi, action: "freeze" }, { unfreezeTimeoutSeconds: 30 }),
      {
        route: "fileSystems",
        params: { ...vmi, action: "freeze" },
        query: { unfreezeTimeoutSeconds: 30 },
        word: "freeze",
      },
    ],
    [
      "guestAgent",
      handlerPath("guestAgent", { ...vmi, query: "userlist" }),
      { route: "guestAgent", params: { ...vmi, query: "userlist" }, query: {}, word: "userlist" },
    ],
    ["stats", handlerPath("stats", {}), { route: "stats", params: {}, query: {}, word: "" }],
    [
      "migration",
      handlerPath("migration", { uid: "a/b c" }),
      { route: "migration", params: { uid: "a/b c" }, query: {}, word: "" },
    ],
  ];

  it("matches every path it builds back to its route, params and query", () => {
    expect(built.map(([route]) => route).sort()).toEqual(Object.keys(handlerRoutes).sort());
    for (const [route, path, expected] of built) {
      const spec = handlerRoutes[route];
      expect(matchHandlerRoute(spec.method, path, spec.answer.kind === "websocket"), path).toEqual(expected);
    }
    expect(handlerPath("console", vmi, { shared: true, viewer: "alice" })).toBe(
      "/v1/namespaces/ns%201/virtualmachineinstances/vm.a/console?shared=true&viewer=alice",
    );
    expect(handlerPath("stats", {})).toBe("/v1/stats");
    expect(handlerPath("migration", { uid: "uid-1" })).toBe("/v1/migrations/uid-1");
  });

  it("refuses paths no route has with 404, other methods with 405, a websocket of a plain route with 400", () => {
    const base = "/v1/namespaces/ns/virtualmachineinstances/vm";
    expect(refusal(() => matchHandlerRoute("GET", `${base}/restart`, false))).toEqual({
      status: 404,
      message: `no such path: ${base}/restart`,
    });
    expect(refusal(() => matchHandlerRoute("GET", "/v1/stats/", false))).toEqual({
      status: 404,
      message: "no such path: /v1/stats/",
    });
    expect(
      refusal(() => matchHandlerRoute("GET", "/v1/namespaces/ns/virtualmachineinstances//console", true))?.status,
    ).toBe(404);
    expect(refusal(() => matchHandlerRoute("GET", "/v1/migrations", false))?.status).toBe(404);
    expect(refusal(() => matchHandlerRoute("GET", "/v1/stats", true))).toEqual({
      status: 404,
      message: "no such path: /v1/stats",
    });
    expect(refusal(() => matchHandlerRoute("GET", `${base}/pause`, false))).toEqual({
      status: 405,
      message: "pause is done with PUT",
    });
    expect(refusal(() => matchHandlerRoute("PUT", `${base}/guestosinfo`, false))).toEqual({
      status: 405,
      message: "guestosinfo is read with GET",
    });
    expect(refusal(() => matchHandlerRoute("PUT", "/v1/stats", false))).toEqual({
      status: 405,
      message: "stats are read with GET",
    });
    expect(refusal(() => matchHandlerRoute("GET", `${base}/console`, false))).toEqual({
      status: 405,
      message: "console is a websocket; serial-log is read with GET",
    });
    expect(refusal(() => matchHandlerRoute("GET", `${base}/vnc/screenshot`, true))).toEqual({
      status: 400,
      message: "vnc/screenshot is a plain request, not a websocket",
    });
    expect(refusal(() => matchHandlerRoute("PUT", `${base}/freeze?unfreezeTimeoutSeconds=-1`, false))).toEqual({
      status: 400,
      message: "unfreezeTimeoutSeconds is a whole number of seconds, 0 or more",
    });
    expect(refusal(() => matchHandlerRoute("PUT", `${base}/freeze?unfreezeTimeoutSeconds=1.5`, false))?.status).toBe(
      400,
    );
  });

  it("reads a query as the handler always has: only true is yes, no timeout is 0", () => {
    const base = "/v1/namespaces/ns/virtualmachineinstances/vm";
    expect(matchHandlerRoute("GET", `${base}/console?shared=yes`, true).query).toEqual({
      shared: false,
      viewer: undefined,
    });
    expect(matchHandlerRoute("PUT", `${base}/freeze`, false).query).toEqual({ unfreezeTimeoutSeconds: 0 });
    expect(handlerPath("vnc", { namespace: "ns", name: "vm" }, { shared: false })).toBe(`${base}/vnc`);
  });

  it("holds each answer to its bounds: its bytes, and every string and list of its JSON", () => {
    expect(handlerAnswerMaxBytes("serialLog")).toBe(512 * 1024);
    const userlist = handlerResultSchema("guestAgent", { namespace: "ns", name: "vm", query: "userlist" });
    expect(userlist.safeParse({ metadata: {}, items: [{ userName: "alice" }] }).success).toBe(true);
    expect(userlist.safeParse({ metadata: {}, items: [{ userName: "a".repeat(257) }] }).success).toBe(false);
    expect(
      userlist.safeParse({ metadata: {}, items: Array.from({ length: 513 }, () => ({ userName: "a" })) }).success,
    ).toBe(false);
    const stats = handlerResultSchema("stats", {});
    expect(stats.safeParse({ vmis: [] }).success).toBe(true);
    expect(stats.safeParse({ vmis: [{ namespace: "ns", name: "vm" }] }).success).toBe(false);
    expect(
      handlerResultSchema("migration", { uid: "u" }).safeParse({
        namespace: "ns",
        name: "vm",
        observed: "now",
        status: { phase: "Running", failureReason: "x".repeat(2049) },
      }).success,
    ).toBe(false);
  });

  it("reads an answer as virt-api takes it: bytes as they are, JSON only of the route's schema", () => {
    const png = Buffer.from([0x89, 0x50]);
    expect(readHandlerAnswer("screenshot", { namespace: "ns", name: "vm" }, png)).toBe(png);
    const report = { namespace: "ns", name: "vm", observed: "2026-01-01T00:00:00Z", status: { phase: "Completed" } };
    expect(readHandlerAnswer("migration", { uid: "u" }, Buffer.from(JSON.stringify(report)))).toEqual(report);
    expect(refusal(() => readHandlerAnswer("migration", { uid: "u" }, Buffer.from("{")))).toEqual({
      status: 502,
      message: "the handler's answer to migration is not JSON",
    });
    expect(refusal(() => readHandlerAnswer("stats", {}, Buffer.from(JSON.stringify({ vmis: "all" }))))).toEqual({
      status: 502,
      message: expect.stringMatching(/^the handler's answer to stats is not one: stats\.vmis: /) as string,
    });
  });
});
