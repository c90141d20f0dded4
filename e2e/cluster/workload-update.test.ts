import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { REPO_ROOT, type StartedPrometheus, ensureBinaries } from "@kubevirt-ts/control-plane";
import { CHART, KUBECONFIG_PATH, NAMESPACE, RELEASE, tagImageOnNodes } from "@kubevirt-ts/local-cluster";
import { PatchStrategy, setHeaderOptions } from "@kubernetes/client-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { tinyVm, tinyVmOnClaim } from "../manifests.ts";
import { apiextensions as crds, core, createVm, custom, imageOf, suiteNamespace } from "./cluster.ts";
import { alertState, startClusterPrometheus } from "./prometheus.ts";

// An upgrade with VMs running, as a platform team makes one: `helm upgrade` brings a new launcher image (here the
// release's own launcher under a second tag, so that what the running VMIs use becomes the earlier release's) with
// the KubeVirt CR's workloadUpdateStrategy LiveMigrate. The VMI that can migrate moves onto the new launcher without
// a restart; the one that cannot (a disk on a ReadWriteOnce claim) keeps running, labelled
// kubevirt.io/outdatedLauncherImage and counted in the CR's status; a VM started afterwards gets the new launcher.
// `helm rollback` brings the first launcher back, and with it the labels the other way round. The upgrade also
// applies the chart's CRDs (its pre-upgrade hook): a CRD changed since the install is the chart's again. A Prometheus
// with the chart's rules (./prometheus.ts) fires OutdatedVirtualMachineInstanceWorkloads once a VMI is outdated.

const { name: namespace, get, launcherPods } = suiteNamespace("e2e-upgrade");
const poll = { timeout: 300_000, interval: 2_000 };
const OUTDATED = "kubevirt.io/outdatedLauncherImage";
const exec = promisify(execFile);
let binDir = "";
/** The release's revision now (helm status). */
const releaseRevision = async () => (JSON.parse(await helmStatus()) as { version: number }).version;
const helm = async (...args: string[]) =>
  (await exec(join(binDir, "helm"), [`--kubeconfig=${KUBECONFIG_PATH}`, ...args, "--namespace", NAMESPACE])).stdout;
const helmStatus = () => helm("status", RELEASE, "-o", "json");
const EXPORTS_CRD = "virtualmachineexports.export.kubevirt.io";
/** The export CRD's short names as the chart has them. */
const chartShortNames = (
  parse(
    readFileSync(join(REPO_ROOT, "charts/kubevirt-ts/crds/export.kubevirt.io_virtualmachineexports.yaml"), "utf8"),
  ) as {
    spec: { names: { shortNames?: string[] } };
  }
).spec.names.shortNames;
const exportShortNames = async () =>
  (await crds.readCustomResourceDefinition({ name: EXPORTS_CRD })).spec.names.shortNames;

interface Vmi {
  metadata: { uid?: string; labels?: Record<string, string> };
  status?: { phase?: string; launcherContainerImageVersion?: string };
}
const vmi = async (name: string): Promise<Vmi | undefined> => get("virtualmachineinstances", name);
const kubevirtStatus = async () =>
  (
    (await custom.getNamespacedCustomObject({
      group: "kubevirt.io",
      version: "v1",
      namespace: NAMESPACE,
      plural: "kubevirts",
      name: "kubevirt-ts",
    })) as { status?: { outdatedVirtualMachineInstanceWorkloads?: number } }
  ).status?.outdatedVirtualMachineInstanceWorkloads;
const view = async (name: string) => {
  const found = await vmi(name);
  return {
    phase: found?.status?.phase,
    image: found?.status?.launcherContainerImageVersion,
    outdated: found?.metadata.labels?.[OUTDATED] !== undefined,
  };
};

async function startVm(name: string, pinned = false) {
  // A disk on a ReadWriteOnce claim cannot migrate (KubeVirt's DisksNotLiveMigratable).
  if (pinned)
    await core.createNamespacedPersistentVolumeClaim({
      namespace,
      body: {
        metadata: { name: `${name}-data` },
        spec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "64Mi" } } },
      },
    });
  const image = imageOf("tiny-guest");
  await createVm(
    namespace,
    pinned ? tinyVmOnClaim(name, image, `${name}-data`, namespace) : tinyVm(name, image, namespace),
  );
  await expect.poll(async () => (await vmi(name))?.status?.phase, poll).toBe("Running");
}

describe("an upgrade with VMs running", () => {
  const original = imageOf("virt-launcher");
  let next = "";
  let revision = 0;
  const uids: Record<string, string | undefined> = {};
  let prometheus: StartedPrometheus | undefined;
  const outdatedAlert = () => {
    if (!prometheus) throw new Error("Prometheus did not start");
    return alertState(prometheus, "OutdatedVirtualMachineInstanceWorkloads");
  };

  beforeAll(async () => {
    binDir = await ensureBinaries(["helm"]);
    revision = await releaseRevision();
    next = await tagImageOnNodes(original, `${original.split(":").pop() ?? ""}-next`);
    prometheus = await startClusterPrometheus();
  }, 600_000);

  afterAll(async () => {
    await prometheus?.stop();
    // The release as it was, whatever failed.
    if (revision > 0 && (await releaseRevision()) !== revision)
      await helm("rollback", RELEASE, String(revision), "--wait", "--timeout", "5m");
  }, 600_000);

  it("moves the VMI that can migrate onto the new launcher and labels the one that cannot", async () => {
    await Promise.all([startVm("movable"), startVm("pinned", true)]);
    for (const name of ["movable", "pinned"]) uids[name] = (await vmi(name))?.metadata.uid;
    expect(await view("movable")).toEqual({ phase: "Running", image: original, outdated: false });
    // Prometheus reads the controller's count of outdated VMIs, none yet, so the alert is not active.
    await expect
      .poll(async () => (await prometheus?.query("kubevirt_vmi_number_of_outdated"))?.length ?? 0, poll)
      .toBeGreaterThan(0);
    expect(await outdatedAlert()).toBe("inactive");
    // A CRD left behind, as an earlier release's would be.
    await crds.patchCustomResourceDefinition(
      { name: EXPORTS_CRD, body: { spec: { names: { shortNames: ["earlier"] } } } },
      setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
    );
    await helm(
      "upgrade",
      RELEASE,
      CHART,
      "--reuse-values",
      "--set-string",
      `tags.launcher=${next.split(":").pop() ?? ""}`,
      "--set-json",
      'workloadUpdateStrategy={"workloadUpdateMethods":["LiveMigrate"]}',
      "--wait",
      "--timeout",
      "5m",
    );
    // The hook applied the chart's CRDs before the upgrade went on.
    expect(await exportShortNames()).toEqual(chartShortNames);
    await expect.poll(() => view("movable"), poll).toEqual({ phase: "Running", image: next, outdated: false });
    await expect.poll(() => view("pinned"), poll).toEqual({ phase: "Running", image: original, outdated: true });
    // Neither restarted: the same VMIs.
    expect((await vmi("movable"))?.metadata.uid).toBe(uids.movable);
    expect((await vmi("pinned"))?.metadata.uid).toBe(uids.pinned);
    const migrations = (await custom.listNamespacedCustomObject({
      group: "kubevirt.io",
      version: "v1",
      namespace,
      plural: "virtualmachineinstancemigrations",
    })) as {
      items: { metadata: { name?: string; annotations?: Record<string, string> }; spec: { vmiName: string } }[];
    };
    expect(
      migrations.items.map((m) => ({
        vmi: m.spec.vmiName,
        name: m.metadata.name?.startsWith("kubevirt-workload-update-"),
        ours: m.metadata.annotations?.["kubevirt.io/workloadUpdateMigration"] !== undefined,
      })),
    ).toEqual([{ vmi: "movable", name: true, ours: true }]);
    await expect.poll(kubevirtStatus, poll).toBe(1);
    await expect.poll(outdatedAlert, poll).toBe("firing");
  });

  it("starts a new VM in the new launcher", async () => {
    await startVm("fresh");
    expect(await view("fresh")).toEqual({ phase: "Running", image: next, outdated: false });
    const pods = (await launcherPods()).filter((p) => p.metadata?.labels?.["vm.kubevirt.io/name"] === "fresh");
    expect(pods.map((p) => p.spec?.containers.find((c) => c.name === "compute")?.image)).toEqual([next]);
  });

  it("helm rollback brings the first launcher back: the labels follow, nothing restarts", async () => {
    await helm("rollback", RELEASE, String(revision), "--wait", "--timeout", "5m");
    // The strategy went with the rollback: the VMIs are only labelled.
    await expect.poll(() => view("pinned"), poll).toEqual({ phase: "Running", image: original, outdated: false });
    await expect.poll(() => view("movable"), poll).toEqual({ phase: "Running", image: next, outdated: true });
    expect(await view("fresh")).toMatchObject({ image: next, outdated: true });
    expect((await vmi("movable"))?.metadata.uid).toBe(uids.movable);
    await expect.poll(kubevirtStatus, poll).toBe(2);
  });
});
