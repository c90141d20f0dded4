import { execFile } from "node:child_process";
import { X509Certificate } from "node:crypto";
import { mkdtemp, readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { KubeConfig, VersionApi } from "@kubernetes/client-node";
import { Pki, REPO_ROOT, ensureBinaries } from "@kubevirt-ts/control-plane";
import { test } from "@kubevirt-ts/control-plane/testing";
import { beforeAll, describe, expect, inject } from "vitest";
import { parseAllDocuments } from "yaml";

const CHART = join(REPO_ROOT, "charts/kubevirt-ts");
const exec = promisify(execFile);
let helm: (...args: string[]) => Promise<string>;
/** Offline, helm renders for an old default version; the chart needs a recent one. */
let kubeVersion: string;

beforeAll(async () => {
  const binDir = await ensureBinaries(["helm"]);
  helm = async (...args) => (await exec(join(binDir, "helm"), args, { maxBuffer: 16 << 20 })).stdout;
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromString(inject("kubeconfig"));
  kubeVersion = (await kubeConfig.makeApiClient(VersionApi).getCode()).gitVersion;
});

interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string };
  spec?: { template?: { spec?: { containers?: Record<string, unknown>[] } } };
}

async function render(...set: string[]): Promise<K8sObject[]> {
  const yaml = await helm(
    "template",
    "kubevirt-ts",
    CHART,
    "--kube-version",
    kubeVersion,
    "--namespace",
    "kubevirt-ts",
    ...set.flatMap((s) => ["--set", s]),
  );
  return parseAllDocuments(yaml)
    .map((d) => d.toJS() as K8sObject | null)
    .filter((o): o is K8sObject => o !== null);
}

describe("the Helm chart", () => {
  test("passes helm lint --strict", async () => {
    expect(await helm("lint", "--strict", CHART)).toContain("1 chart(s) linted, 0 chart(s) failed");
  });

  test("refuses values its schema does not allow, naming them", async () => {
    const error = await helm("template", CHART, "--kube-version", kubeVersion, "--set", "web.service.type=Bogus").then(
      () => undefined,
      (e: unknown) => String(e),
    );
    expect(error).toMatch(/web\.service\.type/);
  });

  test("renders workloads with probes, resources, images of its registry and hardened containers", async () => {
    const objects = await render("tags.controller=abc123");
    const workloads = objects.filter((o) => o.kind === "Deployment" || o.kind === "DaemonSet");
    expect(workloads.map((w) => w.metadata.name).sort()).toEqual([
      "kubevirt-ts-web",
      "virt-api",
      "virt-controller",
      "virt-handler",
    ]);
    for (const workload of workloads) {
      for (const container of workload.spec?.template?.spec?.containers ?? []) {
        for (const key of ["readinessProbe", "livenessProbe", "startupProbe", "resources"])
          expect(container[key], `${workload.metadata.name} ${key}`).toBeDefined();
        expect(container.image).toMatch(/^kubevirt-ts\.local\//);
        const security = container.securityContext as Record<string, unknown>;
        const hardened = {
          allowPrivilegeEscalation: false,
          readOnlyRootFilesystem: true,
          seccompProfile: { type: "RuntimeDefault" },
        };
        // The handler runs as root with one capability (see handler.yaml and the handler's capabilities test), never
        // privileged.
        if (workload.metadata.name === "virt-handler")
          expect(security).toEqual({
            ...hardened,
            runAsUser: 0,
            runAsNonRoot: false,
            capabilities: { drop: ["ALL"], add: ["DAC_OVERRIDE"] },
          });
        else expect(security).toMatchObject({ ...hardened, runAsNonRoot: true, capabilities: { drop: ["ALL"] } });
      }
    }
    const controller = workloads.find((w) => w.metadata.name === "virt-controller");
    expect(controller?.spec?.template?.spec?.containers?.[0]?.image).toBe("kubevirt-ts.local/virt-controller:abc123");
  });

  test(
    "has Prometheus scrape the handlers, controllers and virt-api where the Prometheus " +
      "operator runs, and asks nothing of a cluster without it",
    async () => {
      expect((await render()).filter((o) => o.kind === "ServiceMonitor")).toEqual([]);
      const yaml = await helm(
        "template",
        "kubevirt-ts",
        CHART,
        "--kube-version",
        kubeVersion,
        "--namespace",
        "kubevirt-ts",
        "--api-versions",
        "monitoring.coreos.com/v1/ServiceMonitor",
      );
      const objects = parseAllDocuments(yaml)
        .map((d) => d.toJS() as (K8sObject & { spec?: Record<string, unknown> }) | null)
        .filter((o) => o !== null);
      const monitor = objects.find((o) => o.kind === "ServiceMonitor");
      expect(monitor?.spec).toMatchObject({
        endpoints: [{ port: "ops", path: "/metrics", interval: "30s", honorLabels: true }],
        namespaceSelector: { matchNames: ["kubevirt-ts"] },
      });
      const services = objects.filter((o) => o.kind === "Service" && o.metadata.name.endsWith("-metrics"));
      expect(services.map((o) => [o.metadata.name, (o.spec as { ports: { port: number }[] }).ports[0]?.port])).toEqual([
        ["virt-api-metrics", 9103],
        ["virt-controller-metrics", 9100],
        ["virt-handler-metrics", 9101],
      ]);
    },
  );

  test("gives virt-api the Prometheus the graphs come from, when named, with how often it scrapes", async () => {
    const apiEnv = async (...set: string[]) =>
      ((await render(...set)).find((o) => o.metadata.name === "virt-api" && o.kind === "Deployment")?.spec?.template
        ?.spec?.containers?.[0]?.env ?? []) as { name: string; value?: string }[];
    expect((await apiEnv()).map((e) => e.name)).not.toContain("PROMETHEUS_URL");
    expect(
      await apiEnv("metrics.prometheusUrl=http://prometheus-operated.monitoring.svc:9090", "metrics.scrapeSeconds=15"),
    ).toEqual(
      expect.arrayContaining([
        { name: "PROMETHEUS_URL", value: "http://prometheus-operated.monitoring.svc:9090" },
        { name: "PROMETHEUS_SCRAPE_SECONDS", value: "15" },
      ]),
    );
    const error = await render("metrics.prometheusUrl=prometheus:9090").then(
      () => undefined,
      (e: unknown) => String(e),
    );
    expect(error).toMatch(/metrics\.prometheusUrl/);
  });

  test(
    "has virt-controller, virt-handler and virt-api answer /metrics only to an allowed " +
      "token unless metrics.requireAuthorization is false",
    async () => {
      const flags = async (...set: string[]) =>
        (await render(...set))
          .filter(
            (o) =>
              (o.kind === "Deployment" || o.kind === "DaemonSet") &&
              ["virt-controller", "virt-handler", "virt-api"].includes(o.metadata.name),
          )
          .map((o) => [
            o.metadata.name,
            (o.spec?.template?.spec?.containers?.[0]?.env as { name: string; value?: string }[] | undefined)?.find(
              (e) => e.name === "METRICS_REQUIRE_AUTHORIZATION",
            )?.value,
          ])
          .sort(([a = ""], [b = ""]) => a.localeCompare(b));
      expect(await flags()).toEqual([
        ["virt-api", "true"],
        ["virt-controller", "true"],
        ["virt-handler", "true"],
      ]);
      expect(await flags("metrics.requireAuthorization=false")).toEqual([
        ["virt-api", "false"],
        ["virt-controller", "false"],
        ["virt-handler", "false"],
      ]);
      const error = await render("metrics.requireAuthorization=maybe").then(
        () => undefined,
        (e: unknown) => String(e),
      );
      expect(error).toMatch(/requireAuthorization/);
    },
  );

  test(
    "runs two virt-api replicas on different nodes where it can, one kept " + "through a drain; one replica, no budget",
    async () => {
      const objects = await render();
      const api = objects.find((o) => o.kind === "Deployment" && o.metadata.name === "virt-api") as unknown as {
        spec: {
          replicas: number;
          selector: { matchLabels: Record<string, string> };
          template: { spec: { affinity?: unknown } };
        };
      };
      expect(api.spec.replicas).toBe(2);
      const selector = api.spec.selector.matchLabels;
      expect(api.spec.template.spec.affinity).toEqual({
        podAntiAffinity: {
          preferredDuringSchedulingIgnoredDuringExecution: [
            {
              weight: 100,
              podAffinityTerm: { topologyKey: "kubernetes.io/hostname", labelSelector: { matchLabels: selector } },
            },
          ],
        },
      });
      const budget = objects.find(
        (o) => o.kind === "PodDisruptionBudget" && o.metadata.name === "virt-api",
      ) as unknown as { apiVersion: string; spec: unknown } | undefined;
      expect(budget).toMatchObject({
        apiVersion: "policy/v1",
        spec: { minAvailable: 1, selector: { matchLabels: selector } },
      });
      expect(
        (await render("api.replicas=1")).filter(
          (o) => o.kind === "PodDisruptionBudget" && o.metadata.name === "virt-api",
        ),
      ).toEqual([]);
    },
  );

  test(
    "gives virt-api the API server's webhook client CA when set, may read " + "nodes, and refuses a CA that is not PEM",
    async () => {
      const pki = new Pki(await mkdtemp(join(tmpdir(), "chart-webhook-ca-")));
      await pki.createCa("webhook-client-ca");
      const objects = parseAllDocuments(
        await helm(
          "template",
          "kubevirt-ts",
          CHART,
          "--kube-version",
          kubeVersion,
          "--namespace",
          "kubevirt-ts",
          "--set-file",
          `webhooks.clientCA=${pki.ca.cert}`,
          "--set-json",
          'webhooks.clientNames=["kube-apiserver-webhook-client"]',
        ),
      )
        .map((d) => d.toJS() as K8sObject | null)
        .filter((o): o is K8sObject => o !== null);
      const caMap = objects.find(
        (o) => o.kind === "ConfigMap" && o.metadata.name === "kubevirt-ts-webhook-client-ca",
      ) as unknown as { data: Record<string, string> } | undefined;
      expect(caMap?.data["ca.crt"]).toBe(await readFile(pki.ca.cert, "utf8"));
      const apiOf = (all: K8sObject[]) =>
        all.find((o) => o.kind === "Deployment" && o.metadata.name === "virt-api") as unknown as {
          spec: { template: { spec: { containers: { env: { name: string; value?: string }[] }[] } } };
        };
      expect(apiOf(objects).spec.template.spec.containers[0]?.env).toEqual(
        expect.arrayContaining([
          { name: "WEBHOOK_CLIENT_CA_FILE", value: "/etc/kubevirt-ts/webhook-client-ca/ca.crt" },
          { name: "WEBHOOK_CLIENT_NAMES", value: "kube-apiserver-webhook-client" },
        ]),
      );
      // Without it, virt-api answers any caller, and the eviction webhook reads the pod's node (ADR 7).
      const plain = await render();
      expect(apiOf(plain).spec.template.spec.containers[0]?.env.map((e) => e.name)).not.toContain(
        "WEBHOOK_CLIENT_CA_FILE",
      );
      const role = plain.find(
        (o) => o.kind === "ClusterRole" && o.metadata.name === "kubevirt-ts-api-subresources",
      ) as unknown as { rules: { resources: string[]; verbs: string[] }[] };
      expect(role.rules).toEqual(expect.arrayContaining([{ apiGroups: [""], resources: ["nodes"], verbs: ["get"] }]));
      const error = await render("webhooks.clientCA=not-a-pem").then(
        () => undefined,
        (e: unknown) => String(e),
      );
      expect(error).toMatch(/webhooks\/clientCA/);
    },
  );

  test("gives KubeVirt's aggregated roles, with consoles for edit but not for view", async () => {
    const roles = (await render()).filter(
      (o) => o.kind === "ClusterRole" && o.metadata.name.startsWith("kubevirt.io:"),
    ) as unknown as {
      metadata: { name: string; labels: Record<string, string> };
      rules: { apiGroups: string[]; resources: string[]; verbs: string[] }[];
    }[];
    const byName = new Map(roles.map((r) => [r.metadata.name, r]));
    const consoleVerbs = (name: string) =>
      byName
        .get(name)
        ?.rules.filter((r) => r.resources.includes("virtualmachineinstances/console"))
        .flatMap((r) => r.verbs) ?? [];
    expect(consoleVerbs("kubevirt.io:view")).toEqual([]);
    expect(consoleVerbs("kubevirt.io:edit")).toEqual(["get"]);
    expect(byName.get("kubevirt.io:view")?.metadata.labels["rbac.authorization.k8s.io/aggregate-to-view"]).toBe("true");
  });

  test(
    "makes the console's mutual TLS: a CA, the handlers' server certificate " + "and the API's client certificate",
    async () => {
      const secrets = (await render()).filter((o) => o.kind === "Secret") as unknown as {
        metadata: { name: string };
        data: Record<string, string>;
      }[];
      const certOf = (name: string, key: string) =>
        new X509Certificate(Buffer.from(secrets.find((s) => s.metadata.name === name)?.data[key] ?? "", "base64"));
      const ca = certOf("kubevirt-ts-handler-console-tls", "ca.crt");
      const handler = certOf("kubevirt-ts-handler-console-tls", "tls.crt");
      const api = certOf("kubevirt-ts-api-console-tls", "tls.crt");
      expect(handler.subject).toContain("CN=kubevirt-ts-handler");
      expect(handler.subjectAltName).toBe("DNS:kubevirt-ts-handler");
      expect(api.subject).toContain("CN=kubevirt-ts-api");
      expect(handler.checkIssued(ca) && api.checkIssued(ca)).toBe(true);
      expect(certOf("kubevirt-ts-api-console-tls", "ca.crt").fingerprint256).toBe(ca.fingerprint256);
    },
  );

  test("renders objects a real API server accepts (server-side dry run)", async ({ core }) => {
    await core.createNamespace({ body: { metadata: { name: "kubevirt-ts" } } }).catch(() => undefined);
    const yaml = await helm(
      "template",
      "kubevirt-ts",
      CHART,
      "--kube-version",
      kubeVersion,
      "--namespace",
      "kubevirt-ts",
    );
    const kubectl = join(inject("binDir"), "kubectl");
    const child = execFile(kubectl, [
      `--kubeconfig=${inject("kubeconfigPath")}`,
      "apply",
      "--dry-run=server",
      "-f",
      "-",
    ]);
    child.stdin?.end(yaml);
    let output = "";
    child.stdout?.on("data", (c: string) => (output += c));
    child.stderr?.on("data", (c: string) => (output += c));
    const code = await new Promise<number | null>((resolve) => child.on("exit", resolve));
    expect(code, output).toBe(0);
    expect(output).toContain("daemonset.apps/virt-handler created (server dry run)");
  });
});
