import { execFile } from "node:child_process";
import { chmod, chown, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LAUNCHER_UID } from "@kubevirt-ts/kubevirt-api";
import { SERIAL_LOG_NAME, SocketName, podVolumePath } from "./pod-volume.ts";

// The chart runs the handler as root with only the capabilities its
// DaemonSet adds. This runs the handler's own way into a launcher pod (open
// by handle, connect through /proc/self/fd, read the serial log) in a child
// process holding exactly those capabilities, against a folder laid out and
// owned as the kubelet and the launcher leave it; and once with none, to
// show the capabilities are what makes it work.

const exec = promisify(execFile);
const CHART_HANDLER = new URL("../../../charts/kubevirt-ts/templates/handler.yaml", import.meta.url);
const POD_VOLUME = new URL("./pod-volume.ts", import.meta.url).href;

async function chartCapabilities(): Promise<string[]> {
  const match = /capabilities:\s*\n\s*drop: \[ALL\]\s*\n\s*add: \[([A-Z_, ]*)\]/.exec(
    await readFile(CHART_HANDLER, "utf8"),
  );
  if (!match?.[1]) throw new Error("the handler's DaemonSet in the chart names no added capabilities");
  return match[1]
    .split(",")
    .map((c) => c.trim())
    .filter(Boolean);
}

const probe = `
import { connect } from "node:net";
import { openPodSocket, readPodFileTail } from ${JSON.stringify(POD_VOLUME)};
const [podsDir, uid, socketName, logName] = process.argv.slice(1);
const result = {};
try {
  const socket = await openPodSocket(podsDir, uid, socketName);
  await new Promise((resolve, reject) => {
    const c = connect(socket.path, () => { c.end(); resolve(); });
    c.on("error", reject);
  });
  await socket.close();
  result.connect = "ok";
} catch (error) { result.connect = error.code ?? error.message; }
try {
  result.log = (await readPodFileTail(podsDir, uid, logName, 100)).toString();
} catch (error) { result.log = error.code ?? error.message; }
console.log(JSON.stringify(result));
`;

/** Runs the probe as root holding only the given capabilities (none inherited, none ambient). */
async function probeWith(capabilities: string[], podsDir: string): Promise<{ connect: string; log: string }> {
  const bounding = ["-all", ...capabilities.map((c) => `+${c.toLowerCase()}`)].join(",");
  const { stdout } = await exec("setpriv", [
    `--bounding-set=${bounding}`,
    "--inh-caps=-all",
    "--",
    process.execPath,
    "--input-type=module",
    "-e",
    probe,
    podsDir,
    "pod-uid",
    SocketName.Launcher,
    SERIAL_LOG_NAME,
  ]);
  return JSON.parse(stdout) as { connect: string; log: string };
}

let podsDir: string;
let server: Server;

beforeAll(async () => {
  // The kubelet's folders: root's, 0750; the emptyDir itself open to all, its group the pod's fsGroup.
  podsDir = await mkdtemp(join(tmpdir(), "kubelet-pods-"));
  const socket = podVolumePath(podsDir, "pod-uid", SocketName.Launcher);
  const volume = dirname(socket);
  await mkdir(volume, { recursive: true, mode: 0o750 });
  for (let dir = dirname(volume); dir !== podsDir; dir = dirname(dir)) await chmod(dir, 0o750);
  await chown(volume, 0, LAUNCHER_UID);
  await chmod(volume, 0o2777);
  // The launcher's files: its user's, nothing for others.
  server = createServer((c) => c.end());
  await new Promise<void>((resolve) => server.listen(socket, resolve));
  await chown(socket, LAUNCHER_UID, LAUNCHER_UID);
  await chmod(socket, 0o660);
  const log = podVolumePath(podsDir, "pod-uid", SERIAL_LOG_NAME);
  await writeFile(log, "login: ");
  await chown(log, LAUNCHER_UID, LAUNCHER_UID);
  await chmod(log, 0o600);
});

afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
  await rm(podsDir, { recursive: true, force: true });
});

// Each probe starts a Node process with its own capabilities: allow for a loaded machine.
describe("the handler's capabilities in the chart", { timeout: 60_000 }, () => {
  it("are DAC_OVERRIDE alone", async () => {
    expect(await chartCapabilities()).toEqual(["DAC_OVERRIDE"]);
  });

  it("let it connect to a launcher's socket and read its serial log", async () => {
    expect(await probeWith(await chartCapabilities(), podsDir)).toEqual({ connect: "ok", log: "login: " });
  });

  it("are needed: without them root may neither connect nor read", async () => {
    expect(await probeWith([], podsDir)).toEqual({ connect: "EACCES", log: "EACCES" });
    // DAC_READ_SEARCH, the narrower one, reads but does not connect.
    expect(await probeWith(["DAC_READ_SEARCH"], podsDir)).toEqual({ connect: "EACCES", log: "login: " });
  });
});
