import type { Socket } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { type Peer, greeting, onRequests, prng, randomBytes, startPeer, writeFragmented } from "../test/peer.ts";
import { LauncherClient, MAX_PENDING_CALLS } from "./client.ts";
import {
  LauncherBusyError,
  LauncherCallError,
  LauncherError,
  LauncherProtocolError,
  LauncherTimeoutError,
} from "./errors.ts";
import { MAX_RESPONSE_LINE_BYTES } from "./protocol.ts";

// The client against a real unix socket whose far end plays a broken or
// hostile launcher: whatever it sends, the client's buffer stays bounded,
// every call ends with a typed error, and nothing escapes as an uncaught
// exception (vitest fails a test on one). Random cases come from fixed
// seeds, named in each test, so that a failure can be run again.

const SEEDS = [1, 2, 3, 5, 8, 13, 21, 34, 55, 89];
const running = '{"state":"Running"}';
/** The id of a connection's first call: its hello (which `greeting` answers) was 1. */
const FIRST_CALL = 2;

let peer: Peer | undefined;
let client: LauncherClient | undefined;
afterEach(async () => {
  client?.close();
  await peer?.close();
  peer = undefined;
  client = undefined;
});

async function connectTo(onConnection: (socket: Socket) => void): Promise<{ peer: Peer; client: LauncherClient }> {
  peer = await startPeer(greeting(onConnection));
  client = await LauncherClient.connect(peer.path);
  return { peer, client };
}

/** The first request the peer receives, then answered by `reply`. */
function answeringWith(reply: (socket: Socket, id: number) => void): (socket: Socket) => void {
  return (socket) => {
    onRequests(socket, (request) => {
      reply(socket, request.id);
    });
  };
}

async function violation(call: Promise<unknown>): Promise<string> {
  const error: unknown = await call.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(LauncherProtocolError);
  return (error as LauncherProtocolError).violation;
}

describe("the launcher client", () => {
  it("takes results in any order and any fragmentation (seeds 1..89)", async () => {
    for (const seed of SEEDS) {
      const random = prng(seed);
      const { client: c } = await connectTo((socket) => {
        const ids: number[] = [];
        onRequests(socket, (request) => {
          ids.push(request.id);
          if (ids.length < MAX_PENDING_CALLS) return;
          // All calls are in: answer them shuffled, as one stream cut at random places.
          ids.sort(() => random() - 0.5);
          const answers = ids
            .map(
              (id) =>
                `{"id":${String(id)},"result":{"state":"${id % 2 ? "Running" : "Paused"}","domainType":"qemu"}}\n`,
            )
            .join("");
          void writeFragmented(socket, Buffer.from(answers), random);
        });
      });
      const calls = Array.from({ length: MAX_PENDING_CALLS }, () => c.call("state"));
      const results = await Promise.all(calls);
      results.forEach((result, i) => {
        expect(result, `seed ${String(seed)}`).toEqual({
          state: (i + FIRST_CALL) % 2 ? "Running" : "Paused",
          domainType: "qemu",
        });
      });
      c.close();
      await peer?.close();
      peer = undefined;
    }
  });

  it(
    "ends every call with a typed error on random bytes, and holds at most " + "one line of them (seeds 1..89)",
    async () => {
      for (const seed of SEEDS) {
        const random = prng(seed);
        const sent = randomBytes(random, 1 + Math.floor(random() * 256 * 1024));
        const { client: c } = await connectTo(answeringWith((socket) => void writeFragmented(socket, sent, random)));
        const error: unknown = await c.call("state", undefined, { timeoutMs: 2_000 }).then(
          () => undefined,
          (e: unknown) => e,
        );
        // A stream without a complete line ends in the timeout; any line in it breaks the protocol.
        expect(error, `seed ${String(seed)}`).toBeInstanceOf(
          sent.includes(0x0a) ? LauncherProtocolError : LauncherTimeoutError,
        );
        expect(c.bufferedBytes).toBeLessThanOrEqual(MAX_RESPONSE_LINE_BYTES);
        c.close();
        await peer?.close();
        peer = undefined;
      }
    },
  );

  it("drops a launcher that never sends a newline once it has sent more than one line's limit", async () => {
    const random = prng(7);
    const chunk = randomBytes(random, 64 * 1024, 0x0a);
    let written = 0;
    let samples = 0;
    const { peer: p, client: c } = await connectTo(
      answeringWith((socket) => {
        const flood = () => {
          while (!socket.destroyed && socket.write(chunk)) written += chunk.length;
          if (!socket.destroyed) socket.once("drain", flood);
        };
        flood();
      }),
    );
    const watch = setInterval(() => {
      samples++;
      expect(c.bufferedBytes).toBeLessThanOrEqual(MAX_RESPONSE_LINE_BYTES);
    }, 1);
    const started = Date.now();
    expect(await violation(c.call("state"))).toBe("LineTooLong");
    clearInterval(watch);
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(samples).toBeGreaterThan(0);
    // The connection is gone: the flood stops at the limit and what the kernel buffered.
    await expect.poll(() => p.connections[0]?.destroyed).toBe(true);
    expect(written).toBeLessThan(MAX_RESPONSE_LINE_BYTES + 16 * 1024 * 1024);
  });

  it("refuses a 100 MiB line quickly, having read about 1 MiB of it", async () => {
    const total = 100 * 1024 * 1024;
    const piece = Buffer.alloc(1024 * 1024, "A");
    let written = 0;
    const { peer: p, client: c } = await connectTo(
      answeringWith((socket, id) => {
        socket.write(`{"id":${String(id)},"result":"`);
        const stream = () => {
          while (!socket.destroyed && written < total) {
            written += piece.length;
            if (!socket.write(piece)) return void socket.once("drain", stream);
          }
          if (!socket.destroyed) socket.write('"}\n');
        };
        stream();
      }),
    );
    const started = Date.now();
    expect(await violation(c.call("state"))).toBe("LineTooLong");
    expect(Date.now() - started).toBeLessThan(5_000);
    await expect.poll(() => p.connections[0]?.destroyed).toBe(true);
    expect(written).toBeLessThan(total / 4);
    expect(c.bufferedBytes).toBeLessThanOrEqual(MAX_RESPONSE_LINE_BYTES);
  });

  it.each([
    ["invalid JSON", () => "{not json\n", "InvalidJson"],
    ["bytes that are not UTF-8", () => "\xff\xfe{}\n", "InvalidUtf8"],
    ["JSON that is no response", () => "[1,2,3]\n", "InvalidResponse"],
    ["a response without result or error", (id: number) => `{"id":${String(id)}}\n`, "InvalidResponse"],
    ["a string id", (id: number) => `{"id":"${String(id)}","result":${running}}\n`, "InvalidResponse"],
    [
      "an unknown error code",
      (id: number) => `{"id":${String(id)},"error":{"code":"Oops","message":"x"}}\n`,
      "InvalidResponse",
    ],
    [
      "an error message over the limit",
      (id: number) => `{"id":${String(id)},"error":{"code":"Failed","message":"${"x".repeat(10_000)}"}}\n`,
      "InvalidResponse",
    ],
    [
      "a result of the wrong shape",
      (id: number) => `{"id":${String(id)},"result":{"state":"Exploded"}}\n`,
      "InvalidResult",
    ],
    [
      "a result with fields the protocol lacks",
      (id: number) => `{"id":${String(id)},"result":{"state":"Running","sockets":"/etc"}}\n`,
      "InvalidResult",
    ],
    [
      "an answer to a call never made",
      (id: number) => `{"id":${String(id + 1000)},"result":${running}}\n`,
      "UnknownId",
    ],
  ])("treats %s as a broken launcher: every call fails and the connection goes", async (_, line, expected) => {
    const { peer: p, client: c } = await connectTo((socket) => {
      let answered = false;
      onRequests(socket, (request) => {
        if (answered) return;
        answered = true;
        socket.write(Buffer.from(line(request.id), "latin1"));
      });
    });
    const first = c.call("state");
    const second = c.call("pause");
    expect(await violation(first)).toBe(expected);
    expect(await violation(second)).toBe(expected);
    expect(await violation(c.call("state"))).toBe(expected);
    await expect.poll(() => p.connections[0]?.destroyed).toBe(true);
  });

  it(
    "settles every call on random JSON values as answers: a checked result " + "or a typed error (seeds 1..89)",
    async () => {
      for (const seed of SEEDS) {
        const random = prng(seed);
        const { client: c } = await connectTo(
          answeringWith((socket, id) => {
            const choices = [
              { id, result: { state: "Running" } },
              { id, result: { state: random() < 0.5 ? "Paused" : 42 } },
              { id: random() < 0.5 ? id : -id, error: { code: "Failed", message: "no" } },
              { id, result: null },
              { id, result: [random()] },
              random(),
              "text",
              { id: id + 0.5, result: { state: "Running" } },
            ];
            socket.write(`${JSON.stringify(choices[Math.floor(random() * choices.length)])}\n`);
          }),
        );
        const outcome: unknown = await c.call("state").then(
          (r) => r,
          (e: unknown) => e,
        );
        if (outcome instanceof Error) expect(outcome, `seed ${String(seed)}`).toBeInstanceOf(LauncherError);
        else expect(outcome, `seed ${String(seed)}`).toEqual({ state: "Running" });
        c.close();
        await peer?.close();
        peer = undefined;
      }
    },
  );

  it("passes the launcher's own error on as a call error, and the connection stays", async () => {
    const { client: c } = await connectTo(
      answeringWith((socket, id) => {
        socket.write(
          id === FIRST_CALL
            ? `{"id":${String(id)},"error":{"code":"NotDefined","message":"no domain yet"}}\n`
            : `{"id":${String(id)},"result":${running}}\n`,
        );
      }),
    );
    const error: unknown = await c.call("pause").then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(LauncherCallError);
    expect(error).toMatchObject({
      code: "NotDefined",
      reason: "LauncherNotDefined",
      message: "NotDefined: no domain yet",
    });
    expect(await c.call("state")).toEqual({ state: "Running" });
  });

  it("times a call out, drops its late answer, and goes on", async () => {
    const { client: c } = await connectTo(
      answeringWith((socket, id) => {
        setTimeout(() => socket.write(`{"id":${String(id)},"result":${running}}\n`), id === FIRST_CALL ? 300 : 0);
      }),
    );
    await expect(c.call("state", undefined, { timeoutMs: 50 })).rejects.toBeInstanceOf(LauncherTimeoutError);
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(await c.call("state")).toEqual({ state: "Running" });
  });

  it("speaks version 1 with a launcher of the previous release, which answers hello as an unknown method", async () => {
    // What 0.1.0's launcher answers to this release's hello, as it wrote it.
    const refusal =
      '{"id":1,"error":{"code":"BadRequest","message":"not a request: request.method: Invalid option: expected one ' +
      'of \\"sync\\"|\\"state\\"|\\"watch\\"|\\"pause\\"|\\"unpause\\"|\\"kill\\"|\\"softReboot\\"|\\"reset\\"|' +
      '\\"guestOsInfo\\"|\\"guestAgentInfo\\"|\\"freeze\\"|\\"unfreeze\\"|\\"domainStats\\"|\\"screenshot\\"|' +
      '\\"portForward\\"|\\"prepareMigrationTarget\\"|\\"migrate\\"|\\"migrationState\\"|\\"abortMigration\\""}}\n';
    const requests: { version?: number; method: string }[] = [];
    peer = await startPeer((socket) => {
      onRequests(socket, (request) => {
        requests.push(request);
        socket.write(request.method === "hello" ? refusal : `{"id":${String(request.id)},"result":${running}}\n`);
      });
    });
    client = await LauncherClient.connect(peer.path);
    expect(client.version).toBe(1);
    expect(await client.call("state")).toEqual({ state: "Running" });
    expect(requests.map((r) => `${r.method} ${String(r.version)}`)).toEqual(["hello 2", "state 1"]);
  });

  it("drops a launcher that chooses a version it was not offered, or never answers hello", async () => {
    peer = await startPeer(greeting(() => undefined, 7));
    await expect(LauncherClient.connect(peer.path).catch((e: unknown) => e)).resolves.toMatchObject({
      violation: "InvalidResult",
      message: expect.stringContaining("chose version 7, which was not offered (versions 1 and 2)") as string,
    });
    await peer.close();
    peer = await startPeer(() => undefined);
    await expect(LauncherClient.connect(peer.path, { timeoutMs: 100 })).rejects.toBeInstanceOf(LauncherTimeoutError);
  });

  it(`refuses more than ${String(MAX_PENDING_CALLS)} calls waiting at once`, async () => {
    const { client: c } = await connectTo(() => undefined);
    const waiting = Array.from({ length: MAX_PENDING_CALLS }, () =>
      c.call("state", undefined, { timeoutMs: 200 }).catch(() => undefined),
    );
    await expect(c.call("state")).rejects.toBeInstanceOf(LauncherBusyError);
    await Promise.all(waiting);
  });
});
