import { mkdtemp, rm } from "node:fs/promises";
import { type Server, createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import {
  type DomainChange,
  type Handlers,
  LauncherClient,
  METHODS,
  RpcError,
  serveConnection,
} from "@kubevirt-ts/launcher-protocol";
import { createLogger } from "@kubevirt-ts/runtime";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { DomainWatches, WATCH_GAP_MS, WATCH_RETRY_MS } from "./domain-watch.ts";

// The handler's watches against a real unix socket whose far end is the
// protocol's own server, with a `watch` that behaves as the test needs.

const log = createLogger({ component: "domain-watch-test", level: "error" });
let dir: string;
let server: Server | undefined;
let client: LauncherClient | undefined;

async function launcher(watch: Handlers["watch"]): Promise<LauncherClient> {
  const others = Object.fromEntries(
    METHODS.map((m) => [m, () => Promise.reject(new RpcError("Failed", `${m} is not part of this test`))]),
  );
  const handlers = { ...others, watch } as Handlers;
  const path = join(dir, "launcher.sock");
  server = createServer((socket) => {
    serveConnection(socket, handlers);
  });
  await new Promise<void>((resolve) => server?.listen(path, resolve));
  client = await LauncherClient.connect(path);
  return client;
}

/** A launcher's revision and the watch waiting on it, as the launcher keeps them. */
function domain() {
  let revision = 1;
  let waiting: (() => void) | undefined;
  return {
    change: () => {
      revision++;
      waiting?.();
    },
    watch: ({ since, timeoutSeconds }: { since: number; timeoutSeconds: number }) =>
      new Promise<DomainChange>((resolve) => {
        const answer = () => {
          clearTimeout(timer);
          waiting = undefined;
          resolve({ revision, status: { state: "Running" } });
        };
        const timer = setTimeout(answer, timeoutSeconds * 1000);
        if (since !== revision) answer();
        else waiting = answer;
      }),
  };
}

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "domain-watch-"));
});

afterEach(async () => {
  client?.close();
  server?.close();
  await rm(dir, { recursive: true, force: true });
});

describe("the handler's watch on a launcher", () => {
  it("queues the VMI on the first answer and on each change, and not while nothing changes", async () => {
    const d = domain();
    const changed: string[] = [];
    const watches = new DomainWatches({ changed: (key) => changed.push(key), lost: () => expect.unreachable(), log });
    const c = await launcher(d.watch);
    expect(watches.ensure("pod", "ns/vm", c)).toBe(false);
    await expect.poll(() => changed).toEqual(["ns/vm"]);
    expect(watches.ensure("pod", "ns/vm", c)).toBe(true);
    await sleep(WATCH_GAP_MS * 3);
    expect(changed).toHaveLength(1);
    d.change();
    await expect.poll(() => changed).toEqual(["ns/vm", "ns/vm"]);
    // One watch per launcher, however often the VMI is looked at.
    expect(watches.ensure("pod", "ns/vm", c)).toBe(true);
    expect(watches.size).toBe(1);
    watches.forget("pod");
    d.change();
    await sleep(WATCH_GAP_MS * 3);
    expect(changed).toHaveLength(2);
  });

  it("polls a launcher from before watch: its BadRequest is the answer, once", async () => {
    let calls = 0;
    const lost: string[] = [];
    const watches = new DomainWatches({ changed: () => expect.unreachable(), lost: (key) => lost.push(key), log });
    const c = await launcher(() => {
      calls++;
      return Promise.reject(new RpcError("BadRequest", "not a request: request.method: Invalid option"));
    });
    expect(watches.ensure("pod", "ns/vm", c)).toBe(false);
    await expect.poll(() => lost).toEqual(["ns/vm"]);
    expect(watches.ensure("pod", "ns/vm", c)).toBe(false);
    await sleep(WATCH_GAP_MS * 3);
    expect(calls).toBe(1);
  });

  it("asks a launcher that answers every watch at once with a new revision at most once per WATCH_GAP_MS", async () => {
    let revision = 1;
    let calls = 0;
    const watches = new DomainWatches({ changed: () => undefined, lost: () => undefined, log });
    const c = await launcher(() => {
      calls++;
      return Promise.resolve({ revision: ++revision, status: { state: "Running" } });
    });
    watches.ensure("pod", "ns/vm", c);
    await sleep(1_000);
    watches.forget("pod");
    expect(calls).toBeGreaterThan(1);
    expect(calls).toBeLessThanOrEqual(1_000 / WATCH_GAP_MS + 1);
  });

  it("asks a launcher that answers every watch at once, unchanged, at most once per WATCH_GAP_MS", async () => {
    let calls = 0;
    const changed: string[] = [];
    const watches = new DomainWatches({ changed: (key) => changed.push(key), lost: () => undefined, log });
    const c = await launcher(() => {
      calls++;
      return Promise.resolve({ revision: 7, status: { state: "Running" } });
    });
    watches.ensure("pod", "ns/vm", c);
    await sleep(1_000);
    watches.forget("pod");
    expect(changed).toEqual(["ns/vm"]);
    expect(calls).toBeGreaterThan(1);
    expect(calls).toBeLessThanOrEqual(1_000 / WATCH_GAP_MS + 1);
  });

  it("polls a launcher whose watch failed only until its watch is asked again and answers", async () => {
    let calls = 0;
    const lost: string[] = [];
    const changed: string[] = [];
    const watches = new DomainWatches({
      changed: (key) => changed.push(key),
      lost: (key) => lost.push(key),
      log,
    });
    const c = await launcher(() => {
      calls++;
      return calls === 1
        ? Promise.reject(new RpcError("Failed", "could not read the domain's state"))
        : Promise.resolve({ revision: 3, status: { state: "Running" } });
    });
    expect(watches.ensure("pod", "ns/vm", c)).toBe(false);
    await expect.poll(() => lost).toEqual(["ns/vm"]);
    expect(watches.ensure("pod", "ns/vm", c)).toBe(false);
    await expect.poll(() => changed, { timeout: WATCH_RETRY_MS * 3 }).toEqual(["ns/vm"]);
    expect(watches.ensure("pod", "ns/vm", c)).toBe(true);
    watches.forget("pod");
  });
});
