import { once } from "node:events";
import { type IncomingMessage, type Server, type ServerResponse, createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { fetchBoundedText } from "./bounded-fetch.ts";

// A real HTTP server on 127.0.0.1 plays the hostile pod: it streams forever,
// trickles, or announces a huge body.

const KiB = 1024;
const MiB = 1024 * KiB;
let server: Server | undefined;

afterEach(async () => {
  server?.closeAllConnections();
  if (server) await new Promise((resolve) => server?.close(resolve));
  server = undefined;
});

async function serve(handler: (req: IncomingMessage, res: ServerResponse) => void): Promise<string> {
  server = createServer(handler);
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return `http://127.0.0.1:${String((server.address() as AddressInfo).port)}/metrics`;
}

/**
 * A server that writes 64 KiB chunks as fast as the socket takes them, for ever; `sent` counts what it wrote, `closed`
 * settles when the client hung up.
 */
async function streamsForever() {
  const state = { sent: 0, closed: Promise.withResolvers<undefined>() };
  const url = await serve((_req, res) => {
    res.writeHead(200, { "content-type": "text/plain" });
    const chunk = Buffer.alloc(64 * KiB, "x");
    const pump = () => {
      while (!res.destroyed && res.write(chunk)) state.sent += chunk.length;
    };
    res.on("drain", pump);
    res.on("close", () => {
      state.closed.resolve(undefined);
    });
    pump();
  });
  return { url, state };
}

describe("a bounded read from a pod", () => {
  it("returns a small body whole", async () => {
    const url = await serve((_req, res) => {
      res.end("kubevirt_cdi_import_progress_total 45.5\n");
    });
    expect(await fetchBoundedText(url, { maxBytes: 16 * KiB, timeoutMs: 2_000 })).toEqual({
      text: "kubevirt_cdi_import_progress_total 45.5\n",
    });
  });

  it(
    "stops at its bound against a server that streams for ever, hangs up on " + "it, and holds no more than the bound",
    async () => {
      const { url, state } = await streamsForever();
      const before = process.memoryUsage();
      const started = performance.now();
      const read = await fetchBoundedText(url, { maxBytes: 16 * KiB, timeoutMs: 2_000 });
      const took = performance.now() - started;
      const after = process.memoryUsage();
      expect(read).toEqual({ failed: `sent more than the ${String(16 * KiB)} bytes read` });
      expect(took).toBeLessThan(1_000);
      // The connection is closed: the server writes no more, and what it got out is only what the sockets buffer.
      await state.closed.promise;
      const sent = state.sent;
      expect(sent).toBeLessThan(64 * MiB);
      expect(after.arrayBuffers - before.arrayBuffers).toBeLessThan(8 * MiB);
    },
  );

  it("keeps its memory bounded over many reads of an endless stream (the controller reads every 3 s)", async () => {
    const { url } = await streamsForever();
    const before = process.memoryUsage();
    for (let i = 0; i < 20; i++)
      expect(await fetchBoundedText(url, { maxBytes: 16 * KiB, timeoutMs: 2_000 })).toHaveProperty("failed");
    const after = process.memoryUsage();
    expect(after.rss - before.rss).toBeLessThan(64 * MiB);
    expect(after.arrayBuffers - before.arrayBuffers).toBeLessThan(16 * MiB);
  });

  it("gives up at its time bound on a server that trickles a byte at a time and never ends", async () => {
    const url = await serve((_req, res) => {
      res.writeHead(200);
      const timer = setInterval(() => res.write("x"), 20);
      res.on("close", () => {
        clearInterval(timer);
      });
    });
    const started = performance.now();
    const read = await fetchBoundedText(url, { maxBytes: 16 * KiB, timeoutMs: 300 });
    expect(read).toEqual({ failed: "no whole answer within 300 ms" });
    expect(performance.now() - started).toBeLessThan(1_000);
  });

  it("gives up at its time bound on a server that never answers", async () => {
    const url = await serve(() => undefined);
    const started = performance.now();
    expect(await fetchBoundedText(url, { maxBytes: 16 * KiB, timeoutMs: 300 })).toEqual({
      failed: "no whole answer within 300 ms",
    });
    expect(performance.now() - started).toBeLessThan(1_000);
  });

  it("refuses a body announced larger than its bound without reading it", async () => {
    const url = await serve((_req, res) => {
      res.writeHead(200, { "content-length": String(1024 * MiB) });
      res.write("x");
    });
    expect(await fetchBoundedText(url, { maxBytes: 16 * KiB, timeoutMs: 2_000 })).toEqual({
      failed: `announced ${String(1024 * MiB)} bytes, more than the ${String(16 * KiB)} read`,
    });
  });

  it("reads nothing from an answer that is not 2xx, nor follows a redirect", async () => {
    const url = await serve((req, res) => {
      if (req.url === "/metrics") {
        res.writeHead(302, { location: "/elsewhere" });
        res.end();
        return;
      }
      if (req.url === "/elsewhere") {
        res.end("kubevirt_cdi_import_progress_total 45.5\n");
        return;
      }
      res.writeHead(500);
      res.end("kubevirt_cdi_import_progress_total 45.5\n");
    });
    expect(await fetchBoundedText(url, { maxBytes: 16 * KiB, timeoutMs: 2_000 })).toEqual({ failed: "fetch failed" });
    expect(
      await fetchBoundedText(url.replace("/metrics", "/broken"), { maxBytes: 16 * KiB, timeoutMs: 2_000 }),
    ).toEqual({ failed: "answered 500" });
  });
});
