import { once } from "node:events";
import { readFile } from "node:fs/promises";
import { Agent, type IncomingMessage, request } from "node:http";
import { Agent as HttpsAgent, request as httpsRequest } from "node:https";
import {
  type AddressInfo,
  type Server as NetServer,
  type Socket,
  connect,
  createServer as createTcpServer,
} from "node:net";
import { join } from "node:path";
import { test, tlsSecretDir } from "@kubevirt-ts/control-plane/testing";
import { CoreV1Api, KubeConfig } from "@kubernetes/client-node";
import { KubeClient, TOKEN_REVIEW_LIMITS } from "@kubevirt-ts/kube";
import { createLogger } from "@kubevirt-ts/runtime";
import { afterAll, beforeAll, describe, expect, inject } from "vitest";
import { WebSocket } from "ws";
import { limits } from "../src/limits.ts";
import { createWebhookServer } from "../src/server.ts";
import { type StartedApi, startApi, users } from "./harness.ts";

// Oversized requests sent to the API's real servers: each is refused at its
// bound (limits.ts) before it is parsed, and before the sender is
// authenticated or authorized.

let api: StartedApi;
const log = createLogger({ component: "api-limits-test", level: "error" });

beforeAll(async () => {
  api = await startApi(log);
});

afterAll(() => api.stop());

const consolePath = (namespace: string) =>
  `/apis/subresources.kubevirt.io/v1/namespaces/${namespace}/virtualmachineinstances/absent/console`;

/** Writes `chunk` until the server answers (or twice `max` is sent), and resolves with the answer's status. */
function streamUntilAnswered(req: ReturnType<typeof request>, max: number): Promise<number> {
  return new Promise((resolve, reject) => {
    let answered = false;
    let sent = 0;
    const chunk = Buffer.alloc(64 * 1024, 0x20);
    req.on("response", (res: IncomingMessage) => {
      answered = true;
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    // Once answered, the server may close while this side still writes.
    req.on("error", (error) => {
      if (!answered) reject(error);
    });
    const pump = () => {
      while (!answered && sent <= 2 * max) {
        sent += chunk.length;
        if (!req.write(chunk)) {
          req.once("drain", pump);
          return;
        }
      }
      if (!answered) req.end();
    };
    pump();
  });
}

describe("the API's HTTP port", () => {
  test("refuses a tRPC body past its bound with 413", async ({ kubeConfig, namespace }) => {
    const { editor } = await users(kubeConfig, namespace);
    const body = JSON.stringify({
      namespace,
      vm: { metadata: { name: "big" }, padding: "x".repeat(limits.trpcBodyBytes) },
    });
    const res = await fetch(`${api.url}/trpc/vms.create`, {
      method: "POST",
      headers: { authorization: `Bearer ${editor}`, "content-type": "application/json" },
      body,
    });
    expect(res.status).toBe(413);
    expect(await res.text()).toContain("PAYLOAD_TOO_LARGE");
  });

  test("refuses headers past their bound with 431, on tRPC and on a console upgrade", async ({ namespace }) => {
    const status = (path: string, headers: Record<string, string>) =>
      new Promise<number>((resolve, reject) => {
        request(
          `${api.url}${path}`,
          { headers: { "x-padding": "x".repeat(limits.headerBytes), ...headers } },
          (res) => {
            res.resume();
            resolve(res.statusCode ?? 0);
          },
        )
          .on("error", reject)
          .end();
      });
    expect(await status("/trpc/whoami", {})).toBe(431);
    expect(
      await status(consolePath(namespace), {
        connection: "Upgrade",
        upgrade: "websocket",
        "sec-websocket-version": "13",
        "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ==",
      }),
    ).toBe(431);
  });
});

/** A TCP pass-through to the control plane's API server that counts the bytes sent to it: 0 means no call was made. */
async function countingProxy(): Promise<{ url: string; bytes: () => number; close: () => void }> {
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromString(inject("kubeconfig"));
  const target = new URL(kubeConfig.getCurrentCluster()?.server ?? "");
  let bytes = 0;
  const sockets = new Set<Socket>();
  const proxy: NetServer = createTcpServer((client) => {
    const upstream = connect(Number(target.port), target.hostname);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on("error", () => {
        client.destroy();
        upstream.destroy();
      });
      socket.on("close", () => sockets.delete(socket));
    }
    client.on("data", (chunk: Buffer) => {
      bytes += chunk.length;
    });
    client.pipe(upstream).pipe(client);
  });
  proxy.listen(0, "127.0.0.1");
  await once(proxy, "listening");
  return {
    url: `https://127.0.0.1:${String((proxy.address() as AddressInfo).port)}`,
    bytes: () => bytes,
    close: () => {
      for (const socket of sockets) socket.destroy();
      proxy.close();
    },
  };
}

/** A request to the API held in flight: its headers sent, its declared body (`length` bytes) never finished. */
function held(token: string, length = 1024): ReturnType<typeof request> {
  const req = request(`${api.url}/trpc/vms.create`, {
    method: "POST",
    agent: false,
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json", "content-length": String(length) },
  });
  req.on("error", () => undefined);
  req.write("{");
  return req;
}

/** The status and body of the answer to a request (resolves once answered, whatever is left unsent). */
async function answer(req: ReturnType<typeof request>): Promise<{ status: number; body: string }> {
  const [res] = (await once(req, "response")) as [IncomingMessage];
  let body = "";
  for await (const chunk of res) body += String(chunk);
  return { status: res.statusCode ?? 0, body };
}

/**
 * `count` tokens of each of the service accounts `names` in `namespace` (no role: a token is all the gate looks at).
 */
async function serviceAccountTokens(
  kubeConfig: KubeConfig,
  namespace: string,
  names: string[],
  count = 1,
): Promise<string[][]> {
  const core = kubeConfig.makeApiClient(CoreV1Api);
  return Promise.all(
    names.map(async (name) => {
      await core.createNamespacedServiceAccount({ namespace, body: { metadata: { name } } });
      return Promise.all(
        Array.from(
          { length: count },
          async () =>
            (
              await core.createNamespacedServiceAccountToken({
                namespace,
                name,
                body: { spec: { audiences: [], expirationSeconds: 3600 } },
              })
            ).status?.token ?? "",
        ),
      );
    }),
  );
}

const settle = () => new Promise((resolve) => setTimeout(resolve, 500));

/** The status, Retry-After and body of a GET. */
async function get(path: string, token?: string): Promise<{ status: number; retryAfter: string | null; body: string }> {
  const res = await fetch(`${api.url}${path}`, { headers: token ? { authorization: `Bearer ${token}` } : {} });
  return { status: res.status, retryAfter: res.headers.get("retry-after"), body: await res.text() };
}

describe("the API's tRPC gate", () => {
  test(
    "refuses a batch past its size with 400 naming the bound, making no call to the " +
      "API server; a batch within it is served",
    async ({ kubeConfig, namespace }) => {
      const { editor } = await users(kubeConfig, namespace);
      const proxy = await countingProxy();
      const counted = await startApi(log, {}, proxy.url);
      try {
        const batch = (n: number, token?: string) =>
          fetch(`${counted.url}/trpc/${Array.from({ length: n }, () => "namespaces").join(",")}?batch=1`, {
            headers: token ? { authorization: `Bearer ${token}` } : {},
          });
        for (const token of [editor, undefined]) {
          const refused = await batch(1_300, token);
          expect(refused.status).toBe(400);
          expect(await refused.text()).toContain(
            `at most ${String(limits.trpcBatchSize)} procedures; this one names 1300`,
          );
        }
        expect(proxy.bytes()).toBe(0);
        const served = await batch(limits.trpcBatchSize, editor);
        expect(served.status).toBe(200);
        expect(proxy.bytes()).toBeGreaterThan(0);
      } finally {
        await counted.stop();
        proxy.close();
      }
    },
  );

  test(
    "refuses a request without a token with 401 before reading its body, while the client " +
      "is still sending; the health check needs none",
    async () => {
      const req = request(`${api.url}/trpc/vms.create`, {
        method: "POST",
        agent: false,
        headers: { "content-type": "application/json", "content-length": String(limits.trpcBodyBytes) },
      });
      req.on("error", () => undefined);
      // A quarter of the declared 2 MiB, and the rest never: an answer can only come from a server that did not wait
      // for the body.
      req.write(Buffer.alloc(limits.trpcBodyBytes / 4, 0x20));
      const [res] = (await once(req, "response")) as [IncomingMessage];
      res.resume();
      req.destroy();
      expect(res.statusCode).toBe(401);
      // The connection is not closed on a body still arriving (its reset can overtake the answer, and the dashboard's
      // gateway then says 502): the rest is read and dropped, and the connection is kept for the client's next request.
      const agent = new Agent({ keepAlive: true, maxSockets: 1 });
      try {
        const whole = request(`${api.url}/trpc/vms.create`, {
          method: "POST",
          agent,
          headers: { "content-type": "application/json", "content-length": String(limits.trpcBodyBytes) },
        });
        whole.on("error", () => undefined);
        whole.end(Buffer.alloc(limits.trpcBodyBytes, 0x20));
        const [first] = (await once(whole, "response")) as [IncomingMessage];
        first.resume();
        expect(first.statusCode).toBe(401);
        expect(first.headers.connection).toBe("keep-alive");
        await once(first, "end");
      } finally {
        agent.destroy();
      }
      // A made-up token: refused the same way, once the API server said it does not know it (a TokenReview).
      const madeUp = request(`${api.url}/trpc/vms.create`, {
        method: "POST",
        agent: false,
        headers: {
          authorization: "Bearer made-up",
          "content-type": "application/json",
          "content-length": String(limits.trpcBodyBytes),
        },
      });
      madeUp.on("error", () => undefined);
      madeUp.write(Buffer.alloc(limits.trpcBodyBytes / 4, 0x20));
      const refused = await answer(madeUp);
      madeUp.destroy();
      expect(refused.status).toBe(401);
      expect(refused.body).toContain("does not accept this bearer token");
      expect((await get("/trpc/whoami")).status).toBe(401);
      expect(await get("/trpc/health")).toMatchObject({ status: 200 });
      expect((await get("/trpc/health,whoami?batch=1")).status).toBe(401);
    },
  );

  test(
    `answers the ${String(limits.trpcInFlight + 1)}th request in flight, and a ` +
      `user's ${String(limits.trpcInFlightPerCaller + 1)}th whatever its token, with 429 and ` +
      "Retry-After; places come back when requests end",
    async ({ kubeConfig, namespace }) => {
      const names = Array.from(
        { length: limits.trpcInFlight / limits.trpcInFlightPerCaller },
        (_, i) => `caller-${String(i)}`,
      );
      const [[first = "", second = ""] = [], ...others] = await serviceAccountTokens(kubeConfig, namespace, names, 2);
      const [[another = ""] = []] = await serviceAccountTokens(kubeConfig, namespace, ["another-caller"]);
      const inFlight = Array.from({ length: limits.trpcInFlightPerCaller }, () => held(first));
      try {
        // A user at its own bound, asking with another of its tokens, while the API's is not reached yet.
        await settle();
        const own = await get("/trpc/whoami", second);
        expect(own).toMatchObject({ status: 429, retryAfter: String(limits.trpcRetryAfterSeconds) });
        expect(own.body).toContain(`one caller may have at most ${String(limits.trpcInFlightPerCaller)} in flight`);
        // Then any user once the API's is.
        inFlight.push(
          ...others.flatMap(([token = ""]) => Array.from({ length: limits.trpcInFlightPerCaller }, () => held(token))),
        );
        await settle();
        const all = await get("/trpc/whoami", another);
        expect(all).toMatchObject({ status: 429, retryAfter: String(limits.trpcRetryAfterSeconds) });
        expect(all.body).toContain(`the API serves at most ${String(limits.trpcInFlight)} in flight`);
      } finally {
        for (const req of inFlight) req.destroy();
      }
      await settle();
      // Given back: the same users are served again.
      expect((await get("/trpc/whoami", second)).status).toBe(200);
      expect((await get("/trpc/whoami", another)).status).toBe(200);
    },
  );

  test(
    "answers 100 made-up tokens at once with 401 (or 429 past the reviews under way), bodies " +
      "unread and no place taken, while a signed-in user is served",
    async ({ kubeConfig, namespace }) => {
      const [[user = ""] = []] = await serviceAccountTokens(kubeConfig, namespace, ["signed-in"]);
      expect((await get("/trpc/whoami", user)).status).toBe(200);
      // Each declares a body it never sends: only a refusal made before the body is read answers it.
      const flood = Array.from({ length: 100 }, (_, i) => held(`made-up-${String(i)}`, limits.trpcBodyBytes));
      try {
        const [served, ...refused] = await Promise.all([get("/trpc/whoami", user), ...flood.map(answer)]);
        expect(served.status).toBe(200);
        const statuses = refused.map(({ status }) => status);
        expect(statuses.filter((status) => status !== 401 && status !== 429)).toEqual([]);
        expect(statuses.filter((status) => status === 401).length).toBeGreaterThanOrEqual(
          TOKEN_REVIEW_LIMITS.maxReviews,
        );
        expect(refused.find(({ status }) => status === 429)?.body ?? "signed in at once").toContain(
          "signed in at once",
        );
      } finally {
        for (const req of flood) req.destroy();
      }
    },
  );

  test(
    `keeps the bodies being read within ${String(limits.trpcBodyBytesInFlight)} bytes, whoever ` +
      "sends them: past it 429 with the body unread, within it read",
    async ({ kubeConfig, namespace }) => {
      const [[slow = "", fast = ""] = []] = await serviceAccountTokens(kubeConfig, namespace, ["sender"], 2);
      const fits = limits.trpcBodyBytesInFlight / limits.trpcBodyBytes;
      // A whole body of trpcBodyBytes, JSON that no procedure takes: read and parsed, then refused for what it says.
      const whole = JSON.stringify({ padding: "x".repeat(limits.trpcBodyBytes - 64) });
      const post = async (token: string) => {
        const res = await fetch(`${api.url}/trpc/vms.create`, {
          method: "POST",
          headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
          body: whole,
        });
        return { status: res.status, body: await res.text() };
      };
      expect((await post(fast)).status).toBe(400);
      const slowBodies = Array.from({ length: fits }, () => held(slow, limits.trpcBodyBytes));
      try {
        await settle();
        const past = Array.from({ length: 4 }, () => held(slow, limits.trpcBodyBytes));
        const answers = await Promise.all(past.map(answer));
        for (const req of past) req.destroy();
        expect(answers.map(({ status }) => status)).toEqual([429, 429, 429, 429]);
        expect(answers[0]?.body).toContain(
          `the API reads at most ${String(limits.trpcBodyBytesInFlight)} bytes of bodies at a time`,
        );
        expect((await post(fast)).status).toBe(429);
        // One slow body ends: its bytes come back, and a whole body is read again.
        slowBodies.pop()?.destroy();
        await settle();
        expect((await post(fast)).status).toBe(400);
      } finally {
        for (const req of slowBodies) req.destroy();
      }
    },
  );

  test("counts a caller's subscriptions apart from its requests, with a bound of their own", async ({
    kubeConfig,
    namespace,
  }) => {
    const { editor } = await users(kubeConfig, namespace);
    const watch = `/trpc/vms.watch?input=${encodeURIComponent(JSON.stringify({ namespace }))}`;
    const streams: AbortController[] = [];
    // A fresh API server answers 429 for a while after a CRD is made ("storage is (re)initializing"), which ends a
    // watch.
    for (
      let tries = 0;
      (await get(`/trpc/vms.list?input=${encodeURIComponent(JSON.stringify({ namespace }))}`, editor)).status !== 200;
      tries++
    ) {
      expect(tries, "the VM list is served").toBeLessThan(60);
      await new Promise((resolve) => setTimeout(resolve, 1_000));
    }
    const inFlight = Array.from({ length: limits.trpcInFlightPerCaller }, () => held(editor));
    try {
      // The caller's requests are at their bound, yet its subscriptions are served, up to theirs.
      for (let i = 0; i < limits.trpcSubscriptionsPerCaller; i++) {
        const controller = new AbortController();
        streams.push(controller);
        const res = await fetch(`${api.url}${watch}`, {
          headers: { authorization: `Bearer ${editor}` },
          signal: controller.signal,
        });
        expect(res.status).toBe(200);
      }
      // Bounded in time: were a stream counted no more (ended), this one would be served, and never end.
      const refused = await fetch(`${api.url}${watch}`, {
        headers: { authorization: `Bearer ${editor}` },
        signal: AbortSignal.timeout(10_000),
      });
      expect({ status: refused.status, retryAfter: refused.headers.get("retry-after") }).toEqual({
        status: 429,
        retryAfter: String(limits.trpcRetryAfterSeconds),
      });
      expect(await refused.text()).toContain(
        "Too many subscriptions (live lists) at once: one caller may have at " +
          `most ${String(limits.trpcSubscriptionsPerCaller)}`,
      );
    } finally {
      for (const controller of streams) controller.abort();
      for (const req of inFlight) req.destroy();
    }
  });
});

describe("the console proxy", () => {
  const open = (namespace: string, token: string) =>
    new WebSocket(`${api.url.replace("http:", "ws:")}${consolePath(namespace)}`, ["plain.kubevirt.io"], {
      headers: { authorization: `Bearer ${token}` },
    });

  test("closes with 1009 on a frame past its bound, while the session is still being authorized", async ({
    kubeConfig,
    namespace,
  }) => {
    const { editor } = await users(kubeConfig, namespace);
    const socket = open(namespace, editor);
    socket.on("open", () => {
      socket.send(Buffer.alloc(limits.consoleFrameBytes + 1));
    });
    const [code] = (await once(socket, "close")) as [number, Buffer];
    expect(code).toBe(1009);
  });

  test(
    "closes with 1009 when small frames sent with the upgrade, before the session " +
      "is authorized, add up past their bound",
    async ({ kubeConfig, namespace }) => {
      const { editor } = await users(kubeConfig, namespace);
      // One write: the upgrade request and, right behind it, more small frames than the bound allows.
      // A binary frame of 1 KiB, masked with zeros.
      const frame = Buffer.concat([Buffer.from([0x82, 0x80 | 126, 0x04, 0x00, 0, 0, 0, 0]), Buffer.alloc(1024)]);
      const frames = Math.ceil(limits.consoleEarlyBytes / 1024) + 1;
      const { port } = new URL(api.url);
      const socket = connect(Number(port), "127.0.0.1");
      await once(socket, "connect");
      socket.write(
        Buffer.concat([
          Buffer.from(
            `GET ${consolePath(namespace)} HTTP/1.1\r\nHost: api\r\nUpgrade: websocket\r\nConnection: ` +
              "Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: " +
              "dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Protocol: plain.kubevirt.io\r\nAuthorization: " +
              `Bearer ${editor}\r\n\r\n`,
          ),
          ...Array.from({ length: frames }, () => frame),
        ]),
      );
      // Read up to the server's first frame (a close frame's length fits its second byte).
      let received = Buffer.alloc(0);
      const headerEnd = () => received.indexOf("\r\n\r\n");
      for await (const chunk of socket) {
        received = Buffer.concat([received, chunk as Buffer]);
        const start = headerEnd() + 4;
        if (
          start >= 4 &&
          received.length >= start + 2 &&
          received.length >= start + 2 + ((received[start + 1] ?? 0) & 0x7f)
        )
          break;
      }
      socket.destroy();
      expect(received.subarray(0, headerEnd()).toString()).toMatch(/^HTTP\/1\.1 101 /);
      // The server's first frame: a close (0x88) with code 1009 and the reason.
      const close = received.subarray(headerEnd() + 4);
      expect(close[0]).toBe(0x88);
      expect(close.readUInt16BE(2)).toBe(1009);
      expect(close.subarray(4).toString()).toContain("before the console is connected");
    },
  );

  test("without such floods, the same session is refused for what it is: the VMI does not exist", async ({
    kubeConfig,
    namespace,
  }) => {
    const { editor } = await users(kubeConfig, namespace);
    const socket = open(namespace, editor);
    socket.on("open", () => {
      socket.send(Buffer.from("ls\r"));
    });
    const [code] = (await once(socket, "close")) as [number, Buffer];
    expect(code).toBe(4404);
  });
});

/** The webhooks' TLS server on a free loopback port, with a certificate for 127.0.0.1 and the CA that signed it. */
async function startWebhooks(
  kubeConfig: Parameters<typeof KubeClient.fromKubeConfig>[0],
): Promise<{ webhooks: ReturnType<typeof createWebhookServer>; ca: Buffer | undefined }> {
  const dir = await tlsSecretDir("127.0.0.1", "server", ["127.0.0.1"]);
  const [ca, cert, key] = await Promise.all(["ca.crt", "tls.crt", "tls.key"].map((name) => readFile(join(dir, name))));
  const webhooks = createWebhookServer(
    { cert: cert ?? Buffer.alloc(0), key: key ?? Buffer.alloc(0) },
    await KubeClient.fromKubeConfig(kubeConfig),
    log,
  );
  webhooks.listen(0, "127.0.0.1");
  await once(webhooks, "listening");
  return { webhooks, ca };
}

describe("the admission webhooks' port", () => {
  test("refuses an AdmissionReview past its bound with 413, whether declared or streamed", async ({ kubeConfig }) => {
    const { webhooks, ca } = await startWebhooks(kubeConfig);
    const post = (headers: Record<string, string>) =>
      httpsRequest({
        host: "127.0.0.1",
        port: (webhooks.address() as AddressInfo).port,
        path: "/validate-virtualmachines",
        method: "POST",
        ca,
        headers,
      });
    try {
      // Declared too large: refused on the header alone, no body sent.
      const declared = post({
        "content-type": "application/json",
        "content-length": String(limits.webhookBodyBytes + 1),
      });
      declared.flushHeaders();
      const [res] = (await once(declared, "response")) as [IncomingMessage];
      res.resume();
      expect(res.statusCode).toBe(413);
      declared.destroy();
      // Sent without a length: refused once it grows past the bound, while it is still coming.
      expect(await streamUntilAnswered(post({ "content-type": "application/json" }), limits.webhookBodyBytes)).toBe(
        413,
      );
      // A review within the bound is answered.
      const small = post({ "content-type": "application/json" });
      small.end(
        JSON.stringify({
          apiVersion: "admission.k8s.io/v1",
          kind: "AdmissionReview",
          request: { uid: "u", operation: "DELETE" },
        }),
      );
      const [ok] = (await once(small, "response")) as [IncomingMessage];
      ok.resume();
      expect(ok.statusCode).toBe(200);
    } finally {
      webhooks.closeAllConnections();
      webhooks.close();
    }
  });

  test(
    "keeps an idle connection open longer than Go's client does (90 s), so the API " +
      "server's next review on it is answered",
    async ({ kubeConfig }) => {
      const { webhooks, ca } = await startWebhooks(kubeConfig);
      expect(webhooks.keepAliveTimeout).toBeGreaterThan(90_000);
      // One kept-alive connection, idle past Node's default of 5 s between two reviews: the second goes on the same
      // socket.
      const agent = new HttpsAgent({ keepAlive: true, maxSockets: 1, ca });
      const review = async () => {
        const req = httpsRequest({
          host: "127.0.0.1",
          port: (webhooks.address() as AddressInfo).port,
          path: "/validate-virtualmachines",
          method: "POST",
          agent,
          headers: { "content-type": "application/json" },
        });
        req.end(
          JSON.stringify({
            apiVersion: "admission.k8s.io/v1",
            kind: "AdmissionReview",
            request: { uid: "u", operation: "DELETE" },
          }),
        );
        const [res] = (await once(req, "response")) as [IncomingMessage];
        res.resume();
        await once(res, "end");
        return { status: res.statusCode, reused: req.reusedSocket };
      };
      try {
        expect(await review()).toEqual({ status: 200, reused: false });
        await new Promise((resolve) => setTimeout(resolve, 6_000));
        expect(await review()).toEqual({ status: 200, reused: true });
      } finally {
        agent.destroy();
        webhooks.closeAllConnections();
        webhooks.close();
      }
    },
  );
});
