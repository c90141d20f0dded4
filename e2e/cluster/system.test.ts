import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { ensureBinaries } from "@kubevirt-ts/control-plane";
import { CHART, KUBECONFIG_PATH, NAMESPACE, RELEASE, chartValues, clusterSync } from "@kubevirt-ts/local-cluster";
import { describe, expect, it } from "vitest";
import { parseAllDocuments, stringify } from "yaml";
import { tinyVm } from "../manifests.ts";
import {
  admission,
  apps,
  core,
  createVm,
  custom,
  imageOf,
  installedImages,
  nodeNames,
  rbac,
  suiteNamespace,
} from "./cluster.ts";
import { runPod } from "./pods.ts";

// The system as `make up` leaves it: a real node, our images, our chart.

const releaseSelector = `app.kubernetes.io/instance=${RELEASE}`;
const system = suiteNamespace("e2e-system");
const exec = promisify(execFile);

describe("the local cluster", () => {
  it("has every node cluster-up made, Ready", async () => {
    const nodes = (await core.listNode()).items;
    expect(nodes.map((n) => n.metadata?.name).sort()).toEqual([...nodeNames].sort());
    for (const node of nodes)
      expect(node.status?.conditions?.find((c) => c.type === "Ready")?.status, node.metadata?.name).toBe("True");
  });

  it("runs every kubevirt-ts pod Running and Ready from the locally built images", async () => {
    // Waited for, not read once: a component the suites before this one killed or restarted may still be coming back.
    const problems = async () => {
      const pods = (
        await core.listNamespacedPod({ namespace: NAMESPACE, labelSelector: releaseSelector })
      ).items.filter((p) => !p.metadata?.deletionTimestamp);
      const components = [...new Set(pods.map((p) => p.metadata?.labels?.["app.kubernetes.io/name"]))].sort().join(",");
      return [
        ...(components === "kubevirt-ts-web,virt-api,virt-controller,virt-handler"
          ? []
          : [`components: ${components}`]),
        ...pods.flatMap((pod) => [
          ...(pod.status?.phase === "Running" ? [] : [`${pod.metadata?.name ?? ""} is ${pod.status?.phase ?? "?"}`]),
          ...(pod.status?.conditions?.find((c) => c.type === "Ready")?.status === "True"
            ? []
            : [`${pod.metadata?.name ?? ""} is not Ready`]),
          ...(pod.spec?.containers ?? []).flatMap((container) => [
            ...(installedImages.some((i) => i.reference === container.image)
              ? []
              : [`${pod.metadata?.name ?? ""} runs ${container.image ?? ""}, not a locally built image`]),
            ...(container.imagePullPolicy === "IfNotPresent"
              ? []
              : [`${pod.metadata?.name ?? ""} pulls ${container.imagePullPolicy ?? "?"}`]),
          ]),
        ]),
      ];
    };
    await expect.poll(problems, { timeout: 120_000, interval: 2_000 }).toEqual([]);
  });

  it("runs the handler DaemonSet with a ready pod on every node", async () => {
    await expect
      .poll(
        async () => {
          const handler = await apps.readNamespacedDaemonSet({ name: "virt-handler", namespace: NAMESPACE });
          return [handler.status?.desiredNumberScheduled, handler.status?.numberReady];
        },
        { timeout: 120_000, interval: 2_000 },
      )
      .toEqual([nodeNames.length, nodeNames.length]);
    const pods = (
      await core.listNamespacedPod({ namespace: NAMESPACE, labelSelector: "app.kubernetes.io/name=virt-handler" })
    ).items.filter((p) => !p.metadata?.deletionTimestamp);
    expect(pods.map((p) => p.spec?.nodeName).sort()).toEqual([...nodeNames].sort());
  });
});

/** Runs a Node script, given as its lines, in a pod of ours (the controller's image has Node); its log. */
function nodeInPod(lines: string[], serviceAccountName?: string): Promise<string> {
  return runPod(core, {
    namespace: NAMESPACE,
    image: imageOf("virt-controller"),
    command: ["node", "-e", lines.join("\n")],
    serviceAccountName,
  });
}

describe("a pod of ours", () => {
  it("reaches the API server through the kubernetes Service (kube-proxy works)", async () => {
    // The service account's token and CA are mounted; the Service's address comes from the environment, as for any pod.
    const log = await nodeInPod(
      [
        "const fs = require('node:fs'), https = require('node:https');",
        "const dir = '/var/run/secrets/kubernetes.io/serviceaccount/';",
        "https.get({ host: process.env.KUBERNETES_SERVICE_HOST, port: " +
          "process.env.KUBERNETES_SERVICE_PORT, path: '/version',",
        "  ca: fs.readFileSync(dir + 'ca.crt'), headers: { authorization: 'Bearer ' + " +
          "fs.readFileSync(dir + 'token', 'utf8') } },",
        "  (res) => { let body = ''; res.on('data', (c) => body += c); res.on('end', () => " +
          "console.log(process.env.KUBERNETES_SERVICE_HOST, res.statusCode, JSON.parse(body).gitVersion)); })",
        "  .on('error', (e) => { console.error(e.message); process.exit(1); });",
      ],
      "virt-controller",
    );
    expect(log.trim()).toMatch(/^198\.19\.0\.1 200 v1\.34\.\d+$/);
  });
});

describe("the cluster's DNS", () => {
  it(
    "resolves Services by name in a pod, with the namespace's search domains, and the " +
      "kubelet no longer warns of a missing cluster DNS",
    async () => {
      const log = await nodeInPod([
        "const dns = require('node:dns').promises, fs = require('node:fs');",
        "(async () => {",
        "  console.log(fs.readFileSync('/etc/resolv.conf', 'utf8').match(/^nameserver .*$/m)[0]);",
        "  for (const name of ['kubernetes.default.svc.cluster.local', 'kubernetes.default']) " +
          "console.log(name, (await dns.lookup(name)).address);",
        "  console.log('reverse', (await dns.reverse(process.env.KUBERNETES_SERVICE_HOST)).join(','));",
        "})().catch((e) => { console.error(e.message); process.exit(1); });",
      ]);
      expect(log.trim().split("\n")).toEqual([
        "nameserver 198.19.0.10",
        "kubernetes.default.svc.cluster.local 198.19.0.1",
        "kubernetes.default 198.19.0.1",
        "reverse kubernetes.default.svc.cluster.local",
      ]);
      const warnings = (await core.listEventForAllNamespaces({ fieldSelector: "reason=MissingClusterDNS" })).items;
      expect(warnings.map((e) => `${e.involvedObject.namespace ?? ""}/${e.involvedObject.name ?? ""}`)).toEqual([]);
    },
  );
});

describe("the launcher image", () => {
  it("holds QEMU, the libvirt daemons and a libvirt addon that loads", async () => {
    const log = await runPod(core, {
      namespace: NAMESPACE,
      image: imageOf("virt-launcher"),
      command: [
        "sh",
        "-c",
        "qemu-system-x86_64 --version | head -1 && libvirtd --version && virtlogd --version && " +
          'node --input-type=module -e "const { Hypervisor } = await ' +
          "import('@unraid/libvirt'); console.log('addon', typeof Hypervisor)\"",
      ],
    });
    expect(log).toMatch(/QEMU emulator version 7\./);
    expect(log).toMatch(/libvirtd \(libvirt\) 9\./);
    expect(log).toMatch(/virtlogd \(libvirt\) 9\./);
    expect(log).toContain("addon function");
  });
});

describe("uninstalling the chart", () => {
  async function installedObjects(): Promise<string[]> {
    const names = (kind: string, items: { metadata?: { name?: string } }[]) =>
      items.map((i) => `${kind}/${i.metadata?.name ?? ""}`);
    return [
      ...names(
        "Deployment",
        (await apps.listNamespacedDeployment({ namespace: NAMESPACE, labelSelector: releaseSelector })).items,
      ),
      ...names(
        "DaemonSet",
        (await apps.listNamespacedDaemonSet({ namespace: NAMESPACE, labelSelector: releaseSelector })).items,
      ),
      ...names(
        "Service",
        (await core.listNamespacedService({ namespace: NAMESPACE, labelSelector: releaseSelector })).items,
      ),
      ...names(
        "ServiceAccount",
        (await core.listNamespacedServiceAccount({ namespace: NAMESPACE, labelSelector: releaseSelector })).items,
      ),
      ...names("ClusterRole", (await rbac.listClusterRole({ labelSelector: releaseSelector })).items),
      ...names("ClusterRoleBinding", (await rbac.listClusterRoleBinding({ labelSelector: releaseSelector })).items),
      ...names(
        "Secret",
        (await core.listNamespacedSecret({ namespace: NAMESPACE, labelSelector: releaseSelector })).items,
      ),
      ...names(
        "ValidatingWebhookConfiguration",
        (await admission.listValidatingWebhookConfiguration({ labelSelector: releaseSelector })).items,
      ),
      ...names(
        "MutatingWebhookConfiguration",
        (await admission.listMutatingWebhookConfiguration({ labelSelector: releaseSelector })).items,
      ),
    ];
  }

  /**
   * The chart as GitOps tools install it, with no Helm release: `helm template` (no `lookup`, no hooks) piped to
   * `kubectl apply`. The release it makes must work (a VM runs), and is deleted again, in the reverse order.
   */
  async function applyRendered(binDir: string): Promise<void> {
    const kubectl = (...args: string[]) =>
      exec(join(binDir, "kubectl"), [`--kubeconfig=${KUBECONFIG_PATH}`, ...args], { maxBuffer: 64 << 20 });
    // Helm template assumes an old Kubernetes unless told: the cluster's version, as Argo CD gives it.
    const { serverVersion } = JSON.parse((await kubectl("version", "-o", "json")).stdout) as {
      serverVersion: { gitVersion: string };
    };
    const rendered = await exec(
      join(binDir, "helm"),
      [
        "template",
        RELEASE,
        CHART,
        "--namespace",
        NAMESPACE,
        "--no-hooks",
        "--kube-version",
        serverVersion.gitVersion,
        ...(await chartValues(installedImages)),
      ],
      { maxBuffer: 64 << 20 },
    );
    const dir = await mkdtemp(join(tmpdir(), "rendered-"));
    const file = join(dir, "release.yaml");
    await writeFile(file, rendered.stdout);
    try {
      // Forced: the DataVolume CRDs the uninstalled release kept are Helm's, and are taken over.
      await kubectl("apply", "--server-side", "--force-conflicts", "--field-manager=gitops", "-f", file);
      for (const workload of ["deployment/virt-api", "deployment/virt-controller", "daemonset/virt-handler"])
        await kubectl("rollout", "status", "-n", NAMESPACE, workload, "--timeout=5m");
      await createVm(system.name, tinyVm("rendered", imageOf("tiny-guest"), system.name));
      await expect
        .poll(async () => (await system.get("virtualmachineinstances", "rendered"))?.status?.phase, {
          timeout: 180_000,
          interval: 1_000,
        })
        .toBe("Running");
      await custom.deleteNamespacedCustomObject({
        group: "kubevirt.io",
        version: "v1",
        namespace: system.name,
        plural: "virtualmachines",
        name: "rendered",
      });
      await expect.poll(() => system.get("virtualmachineinstances", "rendered"), { timeout: 120_000 }).toBeUndefined();
    } finally {
      // As helm uninstall deletes: the last object first, and not what the chart keeps (the DataVolume CRDs).
      const reversed = join(dir, "reversed.yaml");
      const objects = parseAllDocuments(rendered.stdout)
        .map((d) => d.toJS() as { metadata?: { annotations?: Record<string, string> } } | null)
        .filter((o) => o !== null && o.metadata?.annotations?.["helm.sh/resource-policy"] !== "keep");
      await writeFile(
        reversed,
        objects
          .reverse()
          .map((o) => stringify(o))
          .join("---\n"),
      );
      await kubectl("delete", "--ignore-not-found", "--wait", "-f", reversed);
      await rm(dir, { recursive: true, force: true });
    }
  }

  // Last, since it takes the system away; it is installed again afterwards.
  it("removes everything it installed but the CRDs; rendered and applied by kubectl, it works too", async () => {
    const binDir = await ensureBinaries(["kubectl", "helm"]);
    expect(await installedObjects()).toEqual(
      expect.arrayContaining([
        "Deployment/virt-controller",
        "DaemonSet/virt-handler",
        "ClusterRole/kubevirt.io:view",
        "Secret/kubevirt-ts-handler-console-tls",
        "ValidatingWebhookConfiguration/kubevirt-ts-validating",
        "MutatingWebhookConfiguration/kubevirt-ts-mutating",
      ]),
    );
    try {
      await exec(join(binDir, "helm"), [
        `--kubeconfig=${KUBECONFIG_PATH}`,
        "uninstall",
        RELEASE,
        "--namespace",
        NAMESPACE,
        "--wait",
      ]);
      expect(await installedObjects()).toEqual([]);
      await expect
        .poll(
          async () =>
            (await core.listNamespacedPod({ namespace: NAMESPACE, labelSelector: releaseSelector })).items.length,
          { timeout: 60_000 },
        )
        .toBe(0);
      // Helm keeps CRDs by design, so that uninstalling never deletes users' VMs.
      const crds = await exec(join(binDir, "kubectl"), [
        `--kubeconfig=${KUBECONFIG_PATH}`,
        "get",
        "crd",
        "virtualmachines.kubevirt.io",
        "-o",
        "name",
      ]);
      expect(crds.stdout.trim()).toBe("customresourcedefinition.apiextensions.k8s.io/virtualmachines.kubevirt.io");
      await applyRendered(binDir);
    } finally {
      await clusterSync(binDir);
    }
  }, 900_000);
});
