import { mkdtemp, rm } from "node:fs/promises";
import { type Server, connect, createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type VirtualMachineInstance, defaultVmiSpec } from "@kubevirt-ts/kubevirt-api";
import { afterEach, describe, expect, it } from "vitest";
import { LauncherClient } from "./client.ts";
import { LauncherCallError } from "./errors.ts";
import { type DomainStatus, MAX_ERROR_MESSAGE_LENGTH } from "./protocol.ts";
import { type Handlers, RpcError, type ServeOptions, answer, serveConnection } from "./server.ts";

// The launcher's side: every request is checked against the method's params
// schema before its handler runs, and a refusal names the path of what is
// wrong.

const vmi: VirtualMachineInstance = {
  apiVersion: "kubevirt.io/v1",
  kind: "VirtualMachineInstance",
  metadata: { name: "tiny", namespace: "test", uid: "u-1" },
  spec: defaultVmiSpec({ domain: { memory: { guest: "128Mi" }, devices: {} } }),
};

const synced: VirtualMachineInstance[] = [];
const running: DomainStatus = { state: "Running", domainType: "qemu" };
const handlers: Handlers = {
  sync: (params) => {
    synced.push(params);
    return Promise.resolve(running);
  },
  state: () => Promise.resolve(running),
  watch: ({ since }) => Promise.resolve({ revision: since + 1, status: running }),
  pause: () => Promise.reject(new RpcError("NotDefined", "no domain yet: sync the VMI first")),
  unpause: () => Promise.reject(new Error(`virsh failed: ${"x".repeat(10_000)}`)),
  softReboot: () => Promise.resolve(running),
  reset: () => Promise.resolve(running),
  kill: () => Promise.resolve({ state: "Shutoff" }),
  guestOsInfo: () => Promise.resolve({ id: "debian", prettyName: "Debian GNU/Linux 12" }),
  guestAgentInfo: () => Promise.resolve({ hostname: "debian" }),
  screenshot: () => Promise.resolve({ bytes: 1 }),
  domainStats: () => Promise.resolve({ cpu: { timeNs: 1 }, vcpus: [], memory: {}, interfaces: [], disks: [] }),
  freeze: () => Promise.resolve({ ...running, fsFreezeStatus: "frozen" }),
  unfreeze: () => Promise.resolve(running),
  portForward: () => Promise.resolve({}),
  prepareMigrationTarget: () => Promise.resolve({ role: "Target", phase: "Prepared" }),
  migrate: (options) =>
    Promise.resolve({ role: "Source", phase: "Running", mode: options.postCopy ? "PostCopy" : "PreCopy" }),
  migrationState: () => Promise.resolve({ phase: "None" }),
  abortMigration: () => Promise.reject(new RpcError("BadRequest", "no outgoing migration to abort")),
};

const request = (fields: Record<string, unknown>) => JSON.stringify({ version: 1, id: 3, ...fields });

describe("the launcher's answer to a request line", () => {
  it("runs the method with its checked params", async () => {
    expect(await answer(request({ method: "sync", params: vmi }), handlers)).toEqual({ id: 3, result: running });
    expect(synced.at(-1)).toEqual(vmi);
    expect(await answer(request({ method: "guestOsInfo" }), handlers)).toEqual({
      id: 3,
      result: { id: "debian", prettyName: "Debian GNU/Linux 12" },
    });
  });

  it("fills in a migration's options with KubeVirt's defaults", async () => {
    expect(await answer(request({ method: "migrate", params: {} }), handlers)).toEqual({
      id: 3,
      result: { role: "Source", phase: "Running", mode: "PreCopy" },
    });
    expect(await answer(request({ method: "migrate", params: { postCopy: true } }), handlers)).toEqual({
      id: 3,
      result: { role: "Source", phase: "Running", mode: "PostCopy" },
    });
  });

  it.each([
    [
      "a VMI without its spec",
      { method: "sync", params: { ...vmi, spec: undefined } },
      "invalid params of sync: params.spec: ",
    ],
    [
      "a VMI whose memory is an object",
      {
        method: "sync",
        params: { ...vmi, spec: { ...vmi.spec, domain: { ...vmi.spec.domain, memory: { guest: { much: true } } } } },
      },
      "params.spec.domain.memory.guest: ",
    ],
    [
      "a VMI with a field kubevirt-ts lacks",
      { method: "sync", params: { ...vmi, spec: { ...vmi.spec, hostDevices: [] } } },
      'params.spec: Unrecognized key: "hostDevices"',
    ],
    ["no VMI at all", { method: "sync" }, "invalid params of sync: params: "],
    [
      "params to a method that takes none",
      { method: "state", params: { all: true } },
      "invalid params of state: params: ",
    ],
    ["a method the protocol lacks", { method: "teleport" }, "not a request: request.method: "],
    [
      "a migration whose bandwidth is not a whole number",
      { method: "migrate", params: { bandwidthMiB: 1.5 } },
      "invalid params of migrate: params.bandwidthMiB: ",
    ],
    [
      "a migration option the protocol lacks",
      { method: "migrate", params: { unsafe: true } },
      'params: Unrecognized key: "unsafe"',
    ],
    [
      "a request with fields the protocol lacks",
      { method: "state", extra: 1 },
      'not a request: request: Unrecognized key: "extra"',
    ],
  ])("refuses %s with BadRequest and the path", async (_, fields, message) => {
    const response = await answer(request(fields), handlers);
    expect(response).toMatchObject({ id: 3, error: { code: "BadRequest" } });
    expect((response as { error: { message: string } }).error.message).toContain(message);
  });

  it("refuses a line that is not JSON with id 0", async () => {
    expect(await answer("{nope", handlers)).toMatchObject({
      id: 0,
      error: { code: "BadRequest", message: expect.stringMatching(/^not JSON: /) as unknown },
    });
  });

  it("refuses another version, saying which it speaks", async () => {
    expect(await answer(JSON.stringify({ version: 99, id: 7, method: "state" }), handlers)).toEqual({
      id: 7,
      error: { code: "UnsupportedVersion", message: "this launcher speaks versions 1 and 2, not 99" },
    });
  });

  it("answers a handler's failure with its code, and cuts a long message to the protocol's limit", async () => {
    expect(await answer(request({ method: "pause" }), handlers)).toEqual({
      id: 3,
      error: { code: "NotDefined", message: "no domain yet: sync the VMI first" },
    });
    const failed = await answer(request({ method: "unpause" }), handlers);
    expect(failed).toMatchObject({ id: 3, error: { code: "Failed" } });
    expect((failed as { error: { message: string } }).error.message).toHaveLength(MAX_ERROR_MESSAGE_LENGTH);
  });
});

describe("the launcher's versions", () => {
  const hello = (versions: unknown, version = 2, speaks?: number[]) =>
    answer(JSON.stringify({ version, id: 4, method: "hello", params: { versions } }), handlers, speaks);

  it("answers hello with the highest version both sides speak, whatever version the hello names", async () => {
    expect(await hello([1, 2])).toEqual({ id: 4, result: { version: 2 } });
    expect(await hello([1], 1)).toEqual({ id: 4, result: { version: 1 } });
    expect(await hello([2, 3], 3)).toEqual({ id: 4, result: { version: 2 } });
    expect(await hello([3, 4], 4)).toEqual({
      id: 4,
      error: {
        code: "UnsupportedVersion",
        message: "this launcher speaks versions 1 and 2, the handler versions 3 and 4",
      },
    });
    expect(await hello([])).toMatchObject({ id: 4, error: { code: "BadRequest" } });
    expect(await hello(Array.from({ length: 17 }, (_, i) => i + 1))).toMatchObject({
      id: 4,
      error: { code: "BadRequest" },
    });
  });

  it("serves a handler of the previous release, which sends version 1 and no hello", async () => {
    // The bytes 0.1.0's handler sends for its first call.
    expect(await answer('{"version":1,"id":1,"method":"state"}', handlers)).toEqual({ id: 1, result: running });
  });

  it("speaking only version 1, answers as the previous release's launcher: it knows no hello", async () => {
    expect(await hello([1, 2], 2, [1])).toMatchObject({ id: 4, error: { code: "BadRequest" } });
    expect(await answer(request({ method: "state" }), handlers, [1])).toEqual({ id: 3, result: running });
    expect(await answer('{"version":2,"id":6,"method":"state"}', handlers, [1])).toEqual({
      id: 6,
      error: { code: "UnsupportedVersion", message: "this launcher speaks version 1, not 2" },
    });
  });
});

describe("a launcher connection", () => {
  const servers: Server[] = [];
  const dirs: string[] = [];
  afterEach(async () => {
    for (const server of servers.splice(0)) await new Promise((resolve) => server.close(resolve));
    for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
  });

  async function serve(options?: ServeOptions): Promise<string> {
    const dir = await mkdtemp(join(tmpdir(), "launcher-server-"));
    dirs.push(dir);
    const path = join(dir, "launcher.sock");
    const server = createServer((socket) => {
      serveConnection(socket, handlers, options);
    });
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(path, resolve));
    return path;
  }

  it("agrees on version 2 with a launcher of this release, and on 1 across releases either way", async () => {
    const current = await LauncherClient.connect(await serve());
    expect(current.version).toBe(2);
    expect(await current.call("state")).toEqual(running);
    current.close();
    // This release's handler, a launcher of the previous one.
    const previousLauncher = await LauncherClient.connect(await serve({ versions: [1] }));
    expect(previousLauncher.version).toBe(1);
    expect(await previousLauncher.call("sync", vmi)).toEqual(running);
    previousLauncher.close();
    // The previous release's handler (it offers 1, and sends no hello), a launcher of this one.
    const previousHandler = await LauncherClient.connect(await serve(), { versions: [1] });
    expect(previousHandler.version).toBe(1);
    expect(await previousHandler.call("state")).toEqual(running);
    previousHandler.close();
  });

  it("connects to no launcher it shares no version with, saying what each speaks", async () => {
    await expect(LauncherClient.connect(await serve(), { versions: [3, 4] })).rejects.toEqual(
      new LauncherCallError(
        "UnsupportedVersion",
        "this launcher speaks versions 1 and 2, the handler versions 3 and 4",
      ),
    );
    await expect(LauncherClient.connect(await serve({ versions: [1] }), { versions: [2, 3] })).rejects.toEqual(
      new LauncherCallError(
        "UnsupportedVersion",
        "the launcher speaks only version 1 (it has no hello), this handler versions 2 and 3",
      ),
    );
  });

  it("speaks the protocol with the handler's client, both sides checked", async () => {
    const client = await LauncherClient.connect(await serve());
    expect(await client.call("sync", vmi)).toEqual(running);
    expect(await client.call("guestOsInfo")).toEqual({ id: "debian", prettyName: "Debian GNU/Linux 12" });
    await expect(client.call("pause")).rejects.toEqual(
      new LauncherCallError("NotDefined", "no domain yet: sync the VMI first"),
    );
    client.close();
  });

  it("answers a line over its limit with BadRequest and hangs up", async () => {
    const path = await serve({ maxLineBytes: 1024 });
    const socket = connect(path);
    let received = "";
    socket.setEncoding("utf8").on("data", (chunk: string) => (received += chunk));
    socket.write("x".repeat(4096));
    await new Promise((resolve) => socket.once("close", resolve));
    expect(JSON.parse(received)).toEqual({
      id: 0,
      error: { code: "BadRequest", message: "a line longer than 1024 bytes; closing the connection" },
    });
  });
});
