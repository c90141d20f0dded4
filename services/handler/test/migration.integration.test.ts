import { chmod, link, lstat, mkdir, mkdtemp, readFile, rm } from "node:fs/promises";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { Pki } from "@kubevirt-ts/control-plane";
import { killLauncherPodProcesses, startLauncherPod } from "@kubevirt-ts/control-plane/launcher-pod";
import { buildTinyGuest, tinyGuestVmiWithScratchDisk } from "@kubevirt-ts/images";
import { ConsoleServer, SocketsVolume } from "@kubevirt-ts/node-contract";
import { LAUNCHER_UID, type MigrationConfiguration, type MigrationState } from "@kubevirt-ts/kubevirt-api";
import { MIGRATION_ABORTED_REASON } from "@kubevirt-ts/vm-rules";
import { MIGRATION_SOCKETS, type ProxyTls } from "@kubevirt-ts/launcher-protocol";
import { createLogger } from "@kubevirt-ts/runtime";
import { Registry } from "prom-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Launchers } from "../src/launchers.ts";
import { MigrationDriver } from "../src/migration/wiring.ts";
import { podVolumePath } from "../src/pod-volume.ts";

// The handlers' migration wiring with real launchers: two launcher pods on
// this machine (each its own mount namespace, its sockets volume where the
// kubelet keeps an emptyDir), the source's and the target's handler halves
// (migration/wiring.ts) with their proxies on loopback, and the VMI's
// migrationState carried from one step to the next as the controller's
// writes would. First a migration cancelled under way, then one that moves
// the tiny guest.

const log = createLogger({ component: "migration-test", level: "error" });
let dir: string;
let podsDir: string;
let launchers: Launchers | undefined;
let tls: ProxyTls;
const drivers: MigrationDriver[] = [];

const vmi = tinyGuestVmiWithScratchDisk("c1f0a2d4-0000-4000-8000-00000000002c");

/** The handler's client of a launcher, by its pod's uid. */
function launcher(podUid: string) {
  if (!launchers) throw new Error("no launchers yet");
  return launchers.get(podUid);
}

const serialOf = (podUid: string) => podVolumePath(podsDir, podUid, SocketsVolume.serial);

/** Reads a unix socket's stream, after writing `send`, until it contains `text`. */
function readUntil(path: string, text: string, send: string, timeoutMs = 60_000): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(path, () => socket.write(send));
    let output = "";
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no ${text} within ${String(timeoutMs)} ms; got ${JSON.stringify(output.slice(-300))}`));
    }, timeoutMs);
    socket.on("data", (chunk: Buffer) => {
      output += chunk.toString("latin1");
      if (output.includes(text)) {
        clearTimeout(timer);
        socket.destroy();
        resolve(output);
      }
    });
    socket.on("error", reject);
  });
}

/** The two handlers' drivers of one migration: the target's on node-b, the source's on node-a. */
async function drivers2(registry: Registry): Promise<{ source: MigrationDriver; target: MigrationDriver }> {
  const common = {
    address: "127.0.0.1",
    port: 0,
    tls,
    handlerIdentity: ConsoleServer.handlerIdentity,
    podsDir,
    launcher,
    log,
  };
  const target = await MigrationDriver.start(common);
  const source = await MigrationDriver.start({ ...common, registry });
  drivers.push(target, source);
  return { source, target };
}

/** One round of both handlers, the state patched as the controller writes it. */
async function round(
  state: MigrationState,
  d: { source: MigrationDriver; target: MigrationDriver },
): Promise<MigrationState> {
  const afterTarget = { ...state, ...(await d.target.targetSide(vmi, state, "pod-b")) };
  return { ...afterTarget, ...(await d.source.sourceSide(vmi, afterTarget, "pod-a")) };
}

async function until(
  state: MigrationState,
  d: { source: MigrationDriver; target: MigrationDriver },
  done: (s: MigrationState) => boolean,
  what: string,
  timeoutMs = 120_000,
): Promise<MigrationState> {
  const deadline = Date.now() + timeoutMs;
  let current = state;
  while (!done(current)) {
    if (Date.now() > deadline)
      throw new Error(`${what} did not happen within ${String(timeoutMs)} ms; state: ${JSON.stringify(current)}`);
    await new Promise((resolve) => setTimeout(resolve, 300));
    current = await round(current, d);
  }
  return current;
}

/**
 * The VMI's migration state as the controller hands it over, with the configuration it writes (a MigrationPolicy's,
 * say).
 */
const handedOver = (uid: string, migrationConfiguration: MigrationConfiguration = {}): MigrationState => ({
  migrationUid: uid,
  sourceNode: "node-a",
  sourcePod: "launcher-a",
  targetNode: "node-b",
  targetPod: "launcher-b",
  startTimestamp: new Date().toISOString(),
  migrationConfiguration,
});

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "handler-migration-"));
  // The launchers' user passes through it to their folders.
  await chmod(dir, 0o755);
  podsDir = join(dir, "pods");
  const guest = await buildTinyGuest();
  const root = join(dir, "p");
  await mkdir(root);
  // The qemu user cannot reach this Node under root's home; a hard link in a folder it can.
  const node = join(dir, "node");
  await link(process.execPath, node);
  const main = fileURLToPath(new URL("../../launcher/src/main.ts", import.meta.url));
  const start = (name: string, podUid: string) =>
    startLauncherPod({
      name,
      root,
      dir: join(dir, name),
      socketsDir: dirname(podVolumePath(podsDir, podUid, "x")),
      kernelBoot: guest,
      uid: LAUNCHER_UID,
      node,
      main,
    });
  await Promise.all([start("a", "pod-a"), start("b", "pod-b")]);
  launchers = new Launchers(podsDir, log);
  const pki = new Pki(dir);
  await pki.createCa("kubevirt-ts-console-ca");
  const pair = await pki.issue({
    name: "handler",
    commonName: ConsoleServer.handlerIdentity,
    usage: "both",
    hosts: [ConsoleServer.handlerIdentity],
  });
  tls = { ca: await readFile(pki.ca.cert), cert: await readFile(pair.cert), key: await readFile(pair.key) };
  expect(await (await launcher("pod-a")).call("sync", vmi)).toMatchObject({ state: "Running" });
  await readUntil(serialOf("pod-a"), "/ # ", "\n");
  await readUntil(serialOf("pod-a"), "marked-7", "echo kept-in-ram > /tmp/mark; echo marked-$((3+4))\n");
}, 300_000);

afterAll(async () => {
  for (const driver of drivers) await driver.close();
  launchers?.closeAll();
  await killLauncherPodProcesses(dir);
  await rm(dir, { recursive: true, force: true });
});

describe("the handlers' migration wiring", () => {
  it("cancels a migration under way: the progress published, the source launcher aborts, the guest stays", async () => {
    const registry = new Registry();
    const d = await drivers2(registry);
    // A policy's bandwidth of 1 MiB/s keeps the copy going long enough to be cancelled.
    let state = await until(
      handedOver("mig-0", { bandwidthPerMigration: "1Mi" }),
      d,
      (s) => s.mode !== undefined,
      "the migration's start",
    );
    // The target wrote where to send the guest: its address and its proxy's port.
    expect(state).toMatchObject({
      targetNodeAddress: "127.0.0.1",
      targetDirectMigrationNodePorts: { [String(d.target.port)]: 0 },
      mode: "PreCopy",
    });
    // Its proxy's sockets are in the source pod's sockets volume, for the launcher's user.
    expect((await lstat(podVolumePath(podsDir, "pod-a", MIGRATION_SOCKETS.memory))).mode & 0o777).toBe(0o777);
    // The progress, from the source launcher's job stats, as KubeVirt's gauges.
    let processed = "";
    for (const deadline = Date.now() + 60_000; Date.now() < deadline && !/\} [1-9]/.test(processed);) {
      state = await round(state, d);
      processed = await registry.getSingleMetricAsString("kubevirt_vmi_migration_data_processed_bytes");
      await new Promise((resolve) => setTimeout(resolve, 300));
    }
    expect(processed).toMatch(/kubevirt_vmi_migration_data_processed_bytes\{namespace="test",name="tiny"\} [1-9]\d*/);
    state = await until({ ...state, abortRequested: true }, d, (s) => s.failed === true, "the abort");
    expect(state).toMatchObject({
      failed: true,
      failureReason: MIGRATION_ABORTED_REASON,
      abortStatus: "Succeeded",
      endTimestamp: expect.any(String) as unknown,
    });
    // The source's handler keeps what it last read of the migration, for the API; the target's sent none.
    expect(d.source.report("mig-0")).toMatchObject({
      namespace: "test",
      name: "tiny",
      status: { role: "Source", migrationUid: "mig-0", phase: "Failed" },
    });
    expect(d.target.report("mig-0")).toBeUndefined();
    // The proxy's sockets are gone with it; the guest runs on at the source.
    await expect(lstat(podVolumePath(podsDir, "pod-a", MIGRATION_SOCKETS.memory))).rejects.toThrow(/ENOENT/);
    expect(await (await launcher("pod-a")).call("state")).toMatchObject({ state: "Running" });
    expect(await (await launcher("pod-b")).call("state")).toEqual({ state: "NoDomain" });
  });

  it("moves the guest to the target pod and writes completed, then the target's detection", async () => {
    const d = await drivers2(new Registry());
    const state = await until(
      handedOver("mig-1"),
      d,
      (s) => s.completed === true && s.targetNodeDomainDetected === true,
      "the migration's end",
      180_000,
    );
    expect(state).toMatchObject({
      completed: true,
      mode: "PreCopy",
      endTimestamp: expect.any(String) as unknown,
      targetNodeDomainReadyTimestamp: expect.any(String) as unknown,
    });
    expect(state.failed).toBeUndefined();
    // The finished job's figures outlive the source launcher's domain: the switch-over's real downtime among them.
    const report = d.source.report("mig-1");
    expect(report?.status).toMatchObject({
      phase: "Completed",
      progress: { elapsedMs: expect.any(Number) as unknown, downtimeMs: expect.any(Number) as unknown },
    });
    expect(report?.status.progress?.dataProcessed).toBeGreaterThan(0);
    expect(await (await launcher("pod-a")).call("state")).toMatchObject({ state: "Shutoff", reason: "Migrated" });
    expect(await (await launcher("pod-b")).call("state")).toMatchObject({ state: "Running" });
    expect(await readUntil(serialOf("pod-b"), "ram=kept-in-ram", "echo ram=$(cat /tmp/mark)\n")).toContain(
      "ram=kept-in-ram",
    );
    await expect(lstat(podVolumePath(podsDir, "pod-a", MIGRATION_SOCKETS.libvirt))).rejects.toThrow(/ENOENT/);
  });
});
