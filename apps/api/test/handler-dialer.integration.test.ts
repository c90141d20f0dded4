import { once } from "node:events";
import { mkdtemp, readFile } from "node:fs/promises";
import { type Server, createServer } from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Pki } from "@kubevirt-ts/control-plane";
import { test } from "@kubevirt-ts/control-plane/testing";
import { KubeClient } from "@kubevirt-ts/kube";
import {
  ConsoleServer,
  HandlerRouteRefusal,
  handlerAnswerMaxBytes,
  matchHandlerRoute,
} from "@kubevirt-ts/node-contract";
import { expect } from "vitest";
import { HandlerDialer, HandlerError } from "../src/handler-dialer.ts";

// virt-api's client of the handler against a stand-in handler that routes by
// the same table (node-contract's handlerRoutes) and answers what a test
// asks: every call reaches the route it means, and an answer past the route's
// bounds or schema is refused (502), whatever the handler sends.

const NODE = "node-a";

/** A stand-in handler on a loopback port, with the handler's certificate; `answer` says what each route answers. */
async function standInHandler(
  answer: (route: string, params: Record<string, unknown>) => { status?: number; body: string | Buffer },
): Promise<{ server: Server; tls: { ca: Buffer; cert: Buffer; key: Buffer }; asked: string[] }> {
  const pki = new Pki(await mkdtemp(join(tmpdir(), "handler-dialer-")));
  await pki.createCa("console-ca");
  const handler = await pki.issue({
    name: "handler",
    commonName: ConsoleServer.handlerIdentity,
    usage: "server",
    hosts: [ConsoleServer.handlerIdentity],
  });
  const api = await pki.issue({ name: "api", commonName: ConsoleServer.apiIdentity, usage: "client" });
  const asked: string[] = [];
  const server = createServer(
    {
      ca: await readFile(pki.ca.cert),
      cert: await readFile(handler.cert),
      key: await readFile(handler.key),
      requestCert: true,
    },
    (req, res) => {
      try {
        const matched = matchHandlerRoute(req.method, req.url, false);
        asked.push(`${req.method ?? ""} ${matched.route} ${req.url ?? ""}`);
        const { status = 200, body } = answer(matched.route, matched.params);
        res.writeHead(status).end(body);
      } catch (error) {
        res.writeHead(error instanceof HandlerRouteRefusal ? error.status : 500).end((error as Error).message);
      }
    },
  );
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return {
    server,
    tls: { ca: await readFile(pki.ca.cert), cert: await readFile(api.cert), key: await readFile(api.key) },
    asked,
  };
}

test(
  "virt-api calls each route of the handler's table, and takes no answer past the route's bounds or schema",
  { timeout: 60_000 },
  async ({ kubeConfig, core, namespace }) => {
    const tooLong = Buffer.alloc(handlerAnswerMaxBytes("serialLog") + 1, 0x41);
    const report = { namespace: "ns", name: "vm", observed: "2026-01-01T00:00:00Z", status: { phase: "Completed" } };
    const { server, tls, asked } = await standInHandler((route, params) => {
      switch (route) {
        case "serialLog":
          return { body: params.name === "long" ? tooLong : "login: " };
        case "migration":
          return params.uid === "gone"
            ? { status: 404, body: "this node sent no migration gone" }
            : { body: JSON.stringify(params.uid === "odd" ? { ...report, status: { phase: "Sideways" } } : report) };
        case "stats":
          return { body: JSON.stringify({ vmis: [{ namespace: "ns", name: "vm" }] }) };
        case "guestAgent":
          return { body: JSON.stringify({ metadata: {}, items: [{ userName: "alice" }] }) };
        default:
          return { body: JSON.stringify({ state: "Running" }) };
      }
    });
    try {
      await core.createNamespacedPod({
        namespace,
        body: {
          metadata: { name: "virt-handler-a", labels: { "app.kubernetes.io/name": "virt-handler" } },
          spec: { nodeName: NODE, containers: [{ name: "handler", image: "example/handler" }] },
        },
      });
      const pod = await core.readNamespacedPod({ namespace, name: "virt-handler-a" });
      await core.replaceNamespacedPodStatus({
        namespace,
        name: "virt-handler-a",
        body: {
          metadata: pod.metadata,
          spec: pod.spec,
          status: {
            phase: "Running",
            podIP: "127.0.0.1",
            podIPs: [{ ip: "127.0.0.1" }],
            conditions: [{ type: "Ready", status: "True" }],
          },
        },
      });
      const own = await KubeClient.fromKubeConfig(kubeConfig);
      const dialer = new HandlerDialer({ own, namespace, port: (server.address() as AddressInfo).port, tls });

      expect((await dialer.serialLog(NODE, "ns", "vm")).toString()).toBe("login: ");
      await dialer.act(NODE, "ns", "vm", "softReboot");
      await dialer.freeze(NODE, "ns", "vm", "freeze", 30);
      await dialer.freeze(NODE, "ns", "vm", "unfreeze", 0);
      expect(await dialer.guestAgent(NODE, "ns", "vm", "userlist")).toEqual({
        metadata: {},
        items: [{ userName: "alice" }],
      });
      expect(await dialer.migrationReport(NODE, "uid-1")).toEqual(report);
      expect(await dialer.migrationReport(NODE, "gone")).toBeUndefined();
      expect(asked).toEqual([
        "GET serialLog /v1/namespaces/ns/virtualmachineinstances/vm/serial-log",
        "PUT domainAction /v1/namespaces/ns/virtualmachineinstances/vm/softreboot",
        "PUT fileSystems /v1/namespaces/ns/virtualmachineinstances/vm/freeze?unfreezeTimeoutSeconds=30",
        "PUT fileSystems /v1/namespaces/ns/virtualmachineinstances/vm/unfreeze",
        "GET guestAgent /v1/namespaces/ns/virtualmachineinstances/vm/userlist",
        "GET migration /v1/migrations/uid-1",
        "GET migration /v1/migrations/gone",
      ]);

      const refused = (call: Promise<unknown>) =>
        call.then(
          () => undefined,
          (error: unknown) => (error instanceof HandlerError ? `${String(error.status)} ${error.message}` : error),
        );
      expect(await refused(dialer.serialLog(NODE, "ns", "long"))).toBe(
        `502 the handler on node ${NODE} answered serialLog with more ` +
          `than ${String(handlerAnswerMaxBytes("serialLog"))} bytes`,
      );
      expect(await refused(dialer.migrationReport(NODE, "odd"))).toMatch(
        /^502 the handler's answer to migration is not one: migration\.status\.phase: /,
      );
      const failures: unknown[] = [];
      expect(await dialer.statsOfEveryNode((_node, error) => failures.push(error))).toEqual([{ vmis: [] }]);
      expect(failures.map((error) => (error as HandlerError).status)).toEqual([502]);
    } finally {
      server.closeAllConnections();
      server.close();
    }
  },
);
