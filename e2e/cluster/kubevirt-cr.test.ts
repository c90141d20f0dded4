import { execFile } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { ensureBinaries } from "@kubevirt-ts/control-plane";
import { KUBECONFIG_PATH } from "@kubevirt-ts/local-cluster";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { custom, imageOf, suiteNamespace } from "./cluster.ts";
import { tinyVm } from "../manifests.ts";

// The KubeVirt CR as the cluster's live configuration: the chart's CR is
// Deployed and Available; a change reaches the components without a restart
// (the log verbosity, as virtctl adm log-verbosity writes it; the next
// launcher pod's CPU request); a field kubevirt-ts does not act on is refused
// by path, and a feature gate it ignores is answered with a warning.

const INSTALL = "kubevirt-ts";
const CR = "kubevirt-ts";
const { name: namespace, launcherPods } = suiteNamespace("e2e-kv");
const poll = { timeout: 120_000, interval: 1_000 };

let binDir = "";
/** kubectl with its stdout and stderr (warnings go there), failing on a non-zero exit with stderr in the error. */
async function kubectl(...args: string[]): Promise<{ stdout: string; stderr: string }> {
  return promisify(execFile)(join(binDir, "kubectl"), [`--kubeconfig=${KUBECONFIG_PATH}`, ...args]);
}
const kubeVirt = async () =>
  JSON.parse((await kubectl("get", "kubevirt", "-n", INSTALL, CR, "-o", "json")).stdout) as {
    spec: {
      configuration: {
        developerConfiguration?: {
          cpuAllocationRatio?: number;
          logVerbosity?: Record<string, number>;
          featureGates?: string[];
        };
      };
    };
    status?: { phase?: string; conditions?: { type: string; status: string }[] };
  };
/** The log lines of a component's pods since `since`, that say the verbosity was applied. */
async function verbosityLines(component: string, since: Date): Promise<{ verbosity: unknown; level: string }[]> {
  const { stdout } = await kubectl(
    "logs",
    "-n",
    INSTALL,
    "-l",
    `app.kubernetes.io/name=${component}`,
    "--tail=-1",
    `--since-time=${since.toISOString()}`,
    "--max-log-requests=10",
  );
  return stdout
    .split("\n")
    .filter((l) => l.includes("log verbosity applied"))
    .map((l) => JSON.parse(l) as { verbosity: unknown; level: string });
}

let original: Awaited<ReturnType<typeof kubeVirt>>["spec"]["configuration"]["developerConfiguration"];
beforeAll(async () => {
  binDir = await ensureBinaries(["kubectl"]);
  original = (await kubeVirt()).spec.configuration.developerConfiguration;
});
afterAll(async () => {
  // What the chart made, back as it was.
  await kubectl(
    "patch",
    "kubevirt",
    "-n",
    INSTALL,
    CR,
    "--type=json",
    "-p",
    JSON.stringify([{ op: "replace", path: "/spec/configuration/developerConfiguration", value: original ?? {} }]),
  );
});

describe("the KubeVirt CR", () => {
  it("is the chart's, Deployed and Available, and kubectl finds it as kubevirt and kv", async () => {
    await expect.poll(async () => (await kubeVirt()).status?.phase, poll).toBe("Deployed");
    const status = (await kubeVirt()).status;
    expect(status?.conditions?.find((c) => c.type === "Available")?.status).toBe("True");
    expect(status?.conditions?.find((c) => c.type === "Degraded")?.status).toBe("False");
    expect((await kubectl("get", "kv", "-n", INSTALL)).stdout).toMatch(/kubevirt-ts\s+\S+\s+Deployed/);
  });

  it(
    "takes virtctl adm log-verbosity --all=5 and --reset: every component " + "changes its log level without a restart",
    async () => {
      // What virtctl does: list KubeVirt CRs in every namespace, find exactly one, and JSON-patch its logVerbosity.
      const all = JSON.parse((await kubectl("get", "kubevirts", "--all-namespaces", "-o", "json")).stdout) as {
        items: { metadata: { name: string; namespace: string } }[];
      };
      expect(all.items.map((i) => `${i.metadata.namespace}/${i.metadata.name}`)).toEqual([`${INSTALL}/${CR}`]);
      const since = new Date(Date.now() - 1_000);
      const five = { virtAPI: 5, virtController: 5, virtHandler: 5, virtLauncher: 5, virtOperator: 5 };
      await kubectl(
        "patch",
        "kubevirt",
        "-n",
        INSTALL,
        CR,
        "--type=json",
        "-p",
        JSON.stringify([{ op: "add", path: "/spec/configuration/developerConfiguration/logVerbosity", value: five }]),
      );
      for (const component of ["virt-api", "virt-controller", "virt-handler"]) {
        await expect
          .poll(
            async () => (await verbosityLines(component, since)).some((l) => l.verbosity === 5 && l.level === "debug"),
            poll,
          )
          .toBe(true);
      }
      const reset = new Date(Date.now() - 1_000);
      await kubectl(
        "patch",
        "kubevirt",
        "-n",
        INSTALL,
        CR,
        "--type=json",
        "-p",
        JSON.stringify([{ op: "add", path: "/spec/configuration/developerConfiguration/logVerbosity", value: {} }]),
      );
      for (const component of ["virt-api", "virt-controller", "virt-handler"]) {
        await expect
          .poll(
            async () =>
              (await verbosityLines(component, reset)).some((l) => l.verbosity === "unset" && l.level === "info"),
            poll,
          )
          .toBe(true);
      }
    },
  );

  it("gives the next launcher pod the CPU request of a changed cpuAllocationRatio", async () => {
    await kubectl(
      "patch",
      "kubevirt",
      "-n",
      INSTALL,
      CR,
      "--type=merge",
      "-p",
      JSON.stringify({ spec: { configuration: { developerConfiguration: { cpuAllocationRatio: 4 } } } }),
    );
    // The controller follows the CR through its watch; a VM made before the change reached it would keep the old share,
    // so VMs are made until one's pod is rendered after it (the first, but for a race).
    const cpuOf = async (vm: string) =>
      (await launcherPods())
        .find((p) => p.metadata?.labels?.["vm.kubevirt.io/name"] === vm)
        ?.spec?.containers.find((c) => c.name === "compute")?.resources?.requests?.cpu;
    let made = 0;
    await expect
      .poll(async () => {
        const vm = `ratio-${String(made++)}`;
        await custom.createNamespacedCustomObject({
          group: "kubevirt.io",
          version: "v1",
          namespace,
          plural: "virtualmachines",
          body: tinyVm(vm, imageOf("tiny-guest"), namespace),
        });
        await expect.poll(() => cpuOf(vm), poll).toBeDefined();
        // 1 vCPU at 4 vCPUs per CPU: 250m, where the local cluster's 100 gives 10m.
        return cpuOf(vm);
      }, poll)
      .toBe("250m");
  });

  it("refuses a field kubevirt-ts does not act on by its path, and warns of a feature gate it ignores", async () => {
    // As kubectl apply or replace send it (strict field validation; a patch's unknown fields are pruned, as for any
    // CRD).
    const changed = JSON.parse((await kubectl("get", "kubevirt", "-n", INSTALL, CR, "-o", "json")).stdout) as {
      spec: { configuration: Record<string, unknown> };
    };
    changed.spec.configuration.network = { defaultNetworkInterface: "bridge" };
    const file = join(mkdtempSync(join(tmpdir(), "kv-")), "kubevirt.json");
    writeFileSync(file, JSON.stringify(changed));
    await expect(kubectl("replace", "-f", file)).rejects.toThrow(/spec\.configuration\.network/);
    const { stderr } = await kubectl(
      "patch",
      "kubevirt",
      "-n",
      INSTALL,
      CR,
      "--type=merge",
      "-p",
      JSON.stringify({ spec: { configuration: { developerConfiguration: { featureGates: ["VMExport"] } } } }),
    );
    expect(stderr).toContain(
      "featureGates[0] (VMExport): kubevirt-ts does not have this feature yet; the gate is ignored",
    );
  });
});
