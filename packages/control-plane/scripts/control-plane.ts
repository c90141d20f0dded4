#!/usr/bin/env node
// `make up` / `make down` for the control plane: a long-running etcd and
// kube-apiserver on 127.0.0.1:6443 with the CRDs installed, state in .local/.
//
//   control-plane.ts up | down | status
import { copyFile, readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { KubeConfig } from "@kubernetes/client-node";
import { CHART_CRD_DIR, REPO_ROOT, ensureBinaries, installCrds, startControlPlane } from "../src/index.ts";

const LOCAL = join(REPO_ROOT, ".local");
const DIR = join(LOCAL, "control-plane");
const KUBECONFIG = join(LOCAL, "kubeconfig");
const PORT = 6443;

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function recordedPids(): Promise<{ name: string; pid: number }[]> {
  const text = await readFile(join(DIR, "pids"), "utf8").catch(() => "");
  return text
    .split("\n")
    .filter(Boolean)
    .map((line) => {
      const [name = "", pid = "0"] = line.split(" ");
      return { name, pid: Number(pid) };
    });
}

async function down(): Promise<void> {
  const pids = (await recordedPids()).reverse();
  for (const { name, pid } of pids) {
    if (!alive(pid)) continue;
    process.kill(pid, "SIGTERM");
    for (let i = 0; i < 100 && alive(pid); i++) await sleep(100);
    if (alive(pid)) process.kill(pid, "SIGKILL");
    console.log(`stopped ${name} (pid ${pid})`);
  }
  await rm(DIR, { recursive: true, force: true });
  await rm(KUBECONFIG, { force: true });
}

async function running(): Promise<boolean> {
  const pids = await recordedPids();
  return pids.length > 0 && pids.every(({ pid }) => alive(pid));
}

async function up(): Promise<void> {
  if (!(await running())) {
    // Whatever an earlier, interrupted run left behind goes first.
    await down();
    const binDir = await ensureBinaries();
    const controlPlane = await startControlPlane({ dir: DIR, binDir, detached: true, apiserverPort: PORT });
    await copyFile(controlPlane.kubeconfigPath, KUBECONFIG);
  }
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromFile(KUBECONFIG);
  const crds = await installCrds(kubeConfig, CHART_CRD_DIR);
  console.log(`
The control plane is up: kube-apiserver at https://127.0.0.1:${PORT}, with the CRDs ${crds.join(", ")}.

  cluster-up/kubectl.sh get crd ${crds.join(" ")}
  cluster-up/kubectl.sh explain vm.spec.template.spec.domain
  export KUBECONFIG=${KUBECONFIG}

Logs: ${join(DIR, "logs")}. Stop it with \`make down\`.`);
}

const command = process.argv[2];
if (command === "up") await up();
else if (command === "down") await down();
else if (command === "status") console.log((await running()) ? "running" : "stopped");
else {
  console.error("usage: control-plane.ts up | down | status");
  process.exitCode = 2;
}
