import { execFile } from "node:child_process";
import { X509Certificate, createHash, randomBytes } from "node:crypto";
import { access, copyFile, mkdtemp, readFile, readdir, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { KubeConfig, VersionApi } from "@kubernetes/client-node";
import { Pki, REPO_ROOT, ensureBinaries } from "@kubevirt-ts/control-plane";
import { test } from "@kubevirt-ts/control-plane/testing";
import { beforeAll, describe, expect, inject } from "vitest";
import { parse, parseAllDocuments, stringify } from "yaml";
import { tagValues } from "../src/index.ts";

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

const objectsOf = (yaml: string) =>
  parseAllDocuments(yaml)
    .map((d) => d.toJS() as K8sObject | null)
    .filter((o): o is K8sObject => o !== null);

/** helm template of the release kubevirt-ts, in the namespace kubevirt-ts unless the flags name another: its YAML. */
const templateYaml = (...flags: string[]) =>
  helm("template", "kubevirt-ts", CHART, "--kube-version", kubeVersion, "--namespace", "kubevirt-ts", ...flags);

/** The objects helm template renders (templateYaml). */
async function template(...flags: string[]): Promise<K8sObject[]> {
  return objectsOf(await templateYaml(...flags));
}

const render = (...set: string[]) => template(...set.flatMap((s) => ["--set", s]));

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

  test("takes the image tags cluster-sync passes, even one that is all digits", async () => {
    const images = [{ name: "web", reference: "kubevirt-ts.local/web:5756174201390990", archive: "" }];
    const web = (await template(...tagValues(images))).find(
      (o) => o.kind === "Deployment" && o.metadata.name === "kubevirt-ts-web",
    );
    expect(web?.spec?.template?.spec?.containers?.[0]?.image).toBe("kubevirt-ts.local/web:5756174201390990");
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
      const yaml = await templateYaml("--api-versions", "monitoring.coreos.com/v1/ServiceMonitor");
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

  test("applies its CRDs in a hook before install and upgrade, allowed to patch those only", async () => {
    const objects = await render();
    const files = (await readdir(join(CHART, "crds"))).filter((f) => f.endsWith(".yaml")).sort();
    const hooks = objects.filter((o) => o.metadata.name === "kubevirt-ts-crd-upgrade");
    expect(hooks.map((o) => o.kind).sort()).toEqual(["ClusterRole", "ClusterRoleBinding", "Job", "ServiceAccount"]);
    for (const hook of hooks)
      expect((hook.metadata as { annotations?: Record<string, string> }).annotations?.["helm.sh/hook"]).toBe(
        "pre-install,pre-upgrade",
      );
    // The CRDs' names as the hook's Job derives them from the files' names (<group>_<plural>.yaml).
    const named = files.map((f) => {
      const [group, plural] = f.replace(/\.yaml$/, "").split("_");
      return `${plural ?? ""}.${group ?? ""}`;
    });
    for (const file of files) {
      const crd = parse(await readFile(join(CHART, "crds", file), "utf8")) as { metadata: { name: string } };
      expect(named, file).toContain(crd.metadata.name);
    }
    const rules = (hooks.find((o) => o.kind === "ClusterRole") as unknown as { rules: { resourceNames?: string[] }[] })
      .rules;
    expect(rules[0]?.resourceNames?.sort()).toEqual([...named].sort());
    // It runs the virt-api image, which carries crds/ (packages/images).
    expect(JSON.stringify(hooks.find((o) => o.kind === "Job"))).toContain("kubevirt-ts.local/virt-api:");
  });

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
    // Every signed-in user asks the version (virtctl version), as KubeVirt's kubevirt.io:default allows.
    expect(byName.get("kubevirt.io:default")?.rules).toEqual([
      { apiGroups: ["subresources.kubevirt.io"], resources: ["version"], verbs: ["get", "list"] },
    ]);
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

  test("renders objects a real API server accepts (server-side dry run), its helm test and Ingress too", async ({
    core,
  }) => {
    // Made once; only "already exists" is let pass.
    const existing = (e: unknown) => {
      if ((e as { code?: number }).code !== 409) throw e;
    };
    await core.createNamespace({ body: { metadata: { name: "kubevirt-ts" } } }).catch(existing);
    // The namespace's default account, which a cluster's controller-manager makes (this API server runs none);
    // the helm test's pod runs under it.
    await core
      .createNamespacedServiceAccount({ namespace: "kubevirt-ts", body: { metadata: { name: "default" } } })
      .catch(existing);
    const dryRun = async (...flags: string[]) => {
      const yaml = await templateYaml(...flags);
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
      return output;
    };
    const defaults = await dryRun();
    expect(defaults).toContain("daemonset.apps/virt-handler created (server dry run)");
    expect(defaults).toContain("pod/kubevirt-ts-test created (server dry run)");
    expect(await dryRun("--set", "web.ingress.enabled=true", "--set", "web.ingress.host=vms.example.test")).toContain(
      "ingress.networking.k8s.io/kubevirt-ts-web created (server dry run)",
    );
  });

  test("gives the dashboard an Ingress on request, behind which its Service is a ClusterIP", async () => {
    interface Service {
      spec: { type: string; ports: { port: number; appProtocol?: string; nodePort?: number }[] };
    }
    interface Ingress {
      metadata: { annotations?: Record<string, string> };
      spec: {
        ingressClassName?: string;
        tls?: { hosts: string[]; secretName: string }[];
        rules: { host: string; http: { paths: { path: string; backend: { service: unknown } }[] } }[];
      };
    }
    const web = (objects: K8sObject[]) => ({
      service: objects.find((o) => o.kind === "Service" && o.metadata.name === "kubevirt-ts-web") as unknown as Service,
      ingress: objects.find((o) => o.kind === "Ingress") as unknown as Ingress | undefined,
      uploadProxy: (
        objects.find((o) => o.kind === "Deployment" && o.metadata.name === "virt-controller") as unknown as Workload
      ).spec.template.spec.containers[0]?.env?.find((e) => e.name === "UPLOAD_PROXY_URL")?.value,
    });
    const plain = web(await render());
    expect(plain.service.spec.type).toBe("NodePort");
    expect(plain.service.spec.ports[0]).toMatchObject({ port: 443, appProtocol: "https", nodePort: 30080 });
    expect(plain.ingress).toBeUndefined();

    const routed = web(
      await render(
        "web.ingress.enabled=true",
        "web.ingress.host=vms.example.test",
        "web.ingress.className=nginx",
        "web.ingress.tls.secretName=vms-tls",
      ),
    );
    expect(routed.service.spec.type).toBe("ClusterIP");
    expect(routed.service.spec.ports[0]?.nodePort).toBeUndefined();
    expect(routed.ingress?.spec).toEqual({
      ingressClassName: "nginx",
      tls: [{ hosts: ["vms.example.test"], secretName: "vms-tls" }],
      rules: [
        {
          host: "vms.example.test",
          http: {
            paths: [
              {
                path: "/",
                pathType: "Prefix",
                backend: { service: { name: "kubevirt-ts-web", port: { name: "https" } } },
              },
            ],
          },
        },
      ],
    });
    // ingress-nginx passes requests on over HTTPS, keeps consoles open and streams uploads.
    expect(routed.ingress?.metadata.annotations).toMatchObject({
      "nginx.ingress.kubernetes.io/backend-protocol": "HTTPS",
      "nginx.ingress.kubernetes.io/proxy-body-size": "0",
    });
    // CDIConfig's upload proxy is the Ingress's address.
    expect(routed.uploadProxy).toBe("https://vms.example.test");
    // A Service type given stays as given.
    expect(
      web(await render("web.ingress.enabled=true", "web.ingress.host=vms.example.test", "web.service.type=NodePort"))
        .service.spec.type,
    ).toBe("NodePort");

    const error = await render("web.ingress.enabled=true").then(
      () => undefined,
      (e: unknown) => String(e),
    );
    expect(error).toMatch(/web\/ingress\/host/);
  });

  interface PodTemplate {
    metadata: { labels: Record<string, string>; annotations?: Record<string, string> };
    spec: {
      nodeSelector?: Record<string, string>;
      tolerations?: unknown[];
      affinity?: Record<string, unknown>;
      priorityClassName?: string;
      imagePullSecrets?: { name: string }[];
      volumes?: { name: string; hostPath?: { path: string } }[];
      containers: { name: string; env?: { name: string; value?: string }[]; volumeMounts?: Mount[] }[];
    };
  }
  interface Mount {
    name: string;
    mountPath: string;
  }
  interface Workload {
    metadata: { name: string };
    spec: { selector: { matchLabels: Record<string, string> }; template: PodTemplate };
  }
  const WORKLOADS = ["virt-api", "virt-controller", "virt-handler", "kubevirt-ts-web"];
  const workloadsOf = (objects: K8sObject[]) =>
    new Map(
      objects
        .filter((o) => o.kind === "Deployment" || o.kind === "DaemonSet")
        .map((o) => [o.metadata.name, o as unknown as Workload] as const),
    );

  test("places each workload by its own values, with the global imagePullSecrets", async () => {
    const defaults = workloadsOf(await render());
    for (const name of WORKLOADS) {
      const spec = defaults.get(name)?.spec.template.spec;
      expect(spec?.nodeSelector, name).toEqual({ "kubernetes.io/os": "linux" });
      expect(spec?.imagePullSecrets, name).toBeUndefined();
      expect(spec?.priorityClassName, name).toBeUndefined();
      // The handler tolerates every taint (a node without one cannot run VMs); the others none.
      expect(spec?.tolerations, name).toEqual(name === "virt-handler" ? [{ operator: "Exists" }] : undefined);
    }
    const keys = {
      "virt-api": "api",
      "virt-controller": "controller",
      "virt-handler": "handler",
      "kubevirt-ts-web": "web",
    };
    const nodeAffinity = (key: string) => ({
      requiredDuringSchedulingIgnoredDuringExecution: {
        nodeSelectorTerms: [{ matchExpressions: [{ key, operator: "Exists" }] }],
      },
    });
    const set = Object.values(keys).flatMap((key) => [
      `${key}.nodeSelector.pool=${key}-nodes`,
      `${key}.priorityClassName=${key}-critical`,
    ]);
    const json = Object.values(keys).flatMap((key) => [
      "--set-json",
      `${key}.tolerations=[{"key":"dedicated","operator":"Equal","value":"${key}","effect":"NoSchedule"}]`,
      "--set-json",
      `${key}.affinity=${JSON.stringify({ nodeAffinity: nodeAffinity(`${key}-zone`) })}`,
    ]);
    const placed = workloadsOf(
      await template(
        "--set-json",
        'imagePullSecrets=[{"name":"regcred"}]',
        ...json,
        ...set.flatMap((s) => ["--set", s]),
      ),
    );
    for (const [name, key] of Object.entries(keys)) {
      const spec = placed.get(name)?.spec.template.spec;
      expect(spec?.nodeSelector, name).toEqual({ "kubernetes.io/os": "linux", pool: `${key}-nodes` });
      expect(spec?.priorityClassName, name).toBe(`${key}-critical`);
      expect(spec?.imagePullSecrets, name).toEqual([{ name: "regcred" }]);
      // A list given replaces the default one, the handler's too.
      expect(spec?.tolerations, name).toEqual([
        { key: "dedicated", operator: "Equal", value: key, effect: "NoSchedule" },
      ]);
      expect(spec?.affinity?.nodeAffinity, name).toEqual(nodeAffinity(`${key}-zone`));
    }
    // virt-api keeps its replicas apart besides: its own anti-affinity fills what api.affinity leaves unset.
    expect(placed.get("virt-api")?.spec.template.spec.affinity?.podAntiAffinity).toEqual(
      defaults.get("virt-api")?.spec.template.spec.affinity?.podAntiAffinity,
    );
    const error = await render("handler.priorityClassName=Not_A_Name").then(
      () => undefined,
      (e: unknown) => String(e),
    );
    expect(error).toMatch(/handler\/priorityClassName/);
  });

  test("labels the component pods as KubeVirt's, and leaves the selectors as they were", async () => {
    const workloads = workloadsOf(await render());
    const kubevirtLabel = (name: string) => workloads.get(name)?.spec.template.metadata.labels["kubevirt.io"];
    expect(kubevirtLabel("virt-api")).toBe("virt-api");
    expect(kubevirtLabel("virt-controller")).toBe("virt-controller");
    expect(kubevirtLabel("virt-handler")).toBe("virt-handler");
    // The dashboard is none of KubeVirt's components.
    expect(kubevirtLabel("kubevirt-ts-web")).toBeUndefined();
    // A selector cannot change on upgrade: it stays the name and the instance.
    for (const name of WORKLOADS)
      expect(workloads.get(name)?.spec.selector.matchLabels, name).toEqual({
        "app.kubernetes.io/name": name,
        "app.kubernetes.io/instance": "kubevirt-ts",
      });
  });

  test("mounts the kubelet's folders from kubeletRootDir where the handler looks for them", async () => {
    const handlerOf = async (...set: string[]) => {
      const pod = workloadsOf(await render(...set)).get("virt-handler")?.spec.template.spec;
      const container = pod?.containers.find((c) => c.name === "virt-handler");
      const env = new Map(container?.env?.map((e) => [e.name, e.value]));
      return ["kubelet-pods", "device-plugins"].map((volume) => ({
        hostPath: pod?.volumes?.find((v) => v.name === volume)?.hostPath?.path,
        mountPath: container?.volumeMounts?.find((m) => m.name === volume)?.mountPath,
        env: env.get(volume === "kubelet-pods" ? "KUBELET_PODS_DIR" : "DEVICE_PLUGINS_DIR"),
      }));
    };
    const inside = [
      { mountPath: "/var/lib/kubelet/pods", env: "/var/lib/kubelet/pods" },
      { mountPath: "/var/lib/kubelet/device-plugins", env: "/var/lib/kubelet/device-plugins" },
    ];
    expect(await handlerOf()).toEqual([
      { hostPath: "/var/lib/kubelet/pods", ...inside[0] },
      { hostPath: "/var/lib/kubelet/device-plugins", ...inside[1] },
    ]);
    expect(await handlerOf("kubeletRootDir=/var/lib/k0s/kubelet")).toEqual([
      { hostPath: "/var/lib/k0s/kubelet/pods", ...inside[0] },
      { hostPath: "/var/lib/k0s/kubelet/device-plugins", ...inside[1] },
    ]);
    for (const bad of ["var/lib/kubelet", "/var/lib/kubelet/", "/var/../etc"]) {
      const error = await render(`kubeletRootDir=${bad}`).then(
        () => undefined,
        (e: unknown) => String(e),
      );
      expect(error, bad).toMatch(/kubeletRootDir/);
    }
  });

  test("serves DataVolumes under helm template unless the API versions given hold CDI's own kind", async () => {
    const crds = (objects: K8sObject[]) =>
      objects
        .filter((o) => o.kind === "CustomResourceDefinition" && o.metadata.name.endsWith(".cdi.kubevirt.io"))
        .map((o) => o.metadata.name);
    const env = (objects: K8sObject[]) =>
      workloadsOf(objects).get("virt-controller")?.spec.template.spec.containers[0]?.env;
    const serves = (objects: K8sObject[]) => ({
      crds: crds(objects),
      importer: env(objects)?.some((e) => e.name === "IMPORTER_IMAGE"),
      // CDI's config-reader: every authenticated user reads CDIConfig, where virtctl finds the upload proxy.
      configReader: objects.some(
        (o) => o.kind === "ClusterRoleBinding" && o.metadata.name === "cdi.kubevirt.io:config-reader",
      ),
    });
    const ours = ["datavolumes.cdi.kubevirt.io", "cdiconfigs.cdi.kubevirt.io"];
    const withCdi = (...set: string[]) =>
      template("--api-versions", "cdi.kubevirt.io/v1beta1/CDI", ...set.flatMap((s) => ["--set", s]));
    expect(serves(await render())).toEqual({ crds: ours, importer: true, configReader: true });
    expect(serves(await render("dataVolumes.serve=false"))).toEqual({ crds: [], importer: false, configReader: false });
    expect(serves(await withCdi())).toEqual({ crds: [], importer: false, configReader: false });
    expect(serves(await withCdi("dataVolumes.serve=true"))).toEqual({ crds: ours, importer: true, configReader: true });
    // CDIConfig's upload proxy URL: the dashboard's NodePort at the first host users type, as `make up` gives it.
    const proxyUrl = async (...set: string[]) =>
      env(await render(...set))?.find((e) => e.name === "UPLOAD_PROXY_URL")?.value;
    expect(await proxyUrl("web.tls.hosts={198.18.255.1}")).toBe("https://198.18.255.1:30080");
    expect(await proxyUrl("web.tls.hosts={fd00::1}")).toBe("https://[fd00::1]:30080");
    expect(await proxyUrl()).toBeUndefined();
    expect(await proxyUrl("web.tls.hosts={198.18.255.1}", "web.service.type=ClusterIP")).toBeUndefined();
  });
  /** The objects `helm upgrade --install` would apply in the namespace of the test's API server (a server dry run). */
  const dryRunUpgrade = async (namespace: string, ...set: string[]) => {
    const out = await helm(
      "upgrade",
      "--install",
      "--dry-run=server",
      "kubevirt-ts",
      CHART,
      "--kubeconfig",
      inject("kubeconfigPath"),
      "--namespace",
      namespace,
      // The test's API server has the DataVolume CRD already, not made by a release (vitest-setup.ts).
      ...["dataVolumes.serve=false", ...set].flatMap((s) => ["--set", s]),
    );
    return objectsOf(out.slice(out.indexOf("MANIFEST:") + "MANIFEST:".length));
  };
  /** The checksums the pods carry of the Secrets they read at start, and those Secrets' data as rendered. */
  function checksums(objects: K8sObject[]) {
    const data = (name: string) =>
      (objects.find((o) => o.kind === "Secret" && o.metadata.name === name) as unknown as { data: object }).data;
    const workloads = workloadsOf(objects);
    const annotations = (name: string) => workloads.get(name)?.spec.template.metadata.annotations;
    return { data, annotations };
  }
  // As Go's encoding/json writes a map: keys sorted, no spaces (base64 has nothing it would escape).
  const sha256OfJson = (data: object) =>
    createHash("sha256")
      .update(JSON.stringify(Object.fromEntries(Object.entries(data).sort(([a], [b]) => a.localeCompare(b)))))
      .digest("hex");
  const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");

  test("rolls each pod when a Secret it reads at start is new: checksums of the data rendered with it", async () => {
    const first = checksums(await render());
    const key = (first.data("kubevirt-ts-upload-master-key") as { key: string }).key;
    expect(first.annotations("virt-handler")).toEqual({
      "kubevirt-ts.io/console-tls": sha256OfJson(first.data("kubevirt-ts-handler-console-tls")),
    });
    expect(first.annotations("virt-api")).toEqual({
      "kubevirt-ts.io/console-tls": sha256OfJson(first.data("kubevirt-ts-api-console-tls")),
      "kubevirt-ts.io/webhook-tls": sha256OfJson(first.data("kubevirt-ts-webhook-tls")),
      "kubevirt-ts.io/upload-master-key": sha256(key),
    });
    expect(first.annotations("virt-controller")).toEqual({ "kubevirt-ts.io/upload-master-key": sha256(key) });
    expect(first.annotations("kubevirt-ts-web")).toEqual({
      "kubevirt-ts.io/web-tls": sha256OfJson(first.data("kubevirt-ts-web-tls")),
    });
    // helm template finds nothing to keep: every render makes new certificates, and the pods must roll with them.
    const second = checksums(await render());
    for (const name of WORKLOADS)
      for (const [annotation, value] of Object.entries(first.annotations(name) ?? {}))
        expect(second.annotations(name)?.[annotation], `${name} ${annotation}`).not.toBe(value);
    // The dashboard's own Secret (web.tls.secretName) is not the chart's to watch; without importers, neither is
    // the controller's key.
    expect(checksums(await render("web.tls.secretName=mine")).annotations("kubevirt-ts-web")).toBeUndefined();
    expect(checksums(await render("dataVolumes.serve=false")).annotations("virt-controller")).toBeUndefined();
  });

  test("keeps the checksums of the Secrets it finds in the cluster: an upgrade rolls nothing", async ({
    namespace,
    core,
  }) => {
    const upgrade = () => dryRunUpgrade(namespace);
    // The Secrets an earlier install made, as the chart renders them, owned by the release as Helm marks them.
    const secrets = (await template("--namespace", namespace)).filter((o) => o.kind === "Secret") as unknown as {
      metadata: { name: string; labels: Record<string, string>; annotations?: Record<string, string> };
      type: string;
      data: Record<string, string>;
    }[];
    const release = { "meta.helm.sh/release-name": "kubevirt-ts", "meta.helm.sh/release-namespace": namespace };
    for (const { metadata, type, data } of secrets)
      await core.createNamespacedSecret({
        namespace,
        body: {
          metadata: {
            name: metadata.name,
            labels: metadata.labels,
            annotations: { ...metadata.annotations, ...release },
          },
          type,
          data,
        },
      });
    const first = checksums(await upgrade());
    const second = checksums(await upgrade());
    for (const name of ["virt-api", "virt-handler", "kubevirt-ts-web"]) {
      expect(first.annotations(name), name).toEqual(second.annotations(name));
      expect(first.annotations(name), name).toBeDefined();
    }
    const kept = (name: string) => secrets.find((s) => s.metadata.name === name)?.data ?? {};
    expect(first.annotations("virt-handler")?.["kubevirt-ts.io/console-tls"]).toBe(
      sha256OfJson(kept("kubevirt-ts-handler-console-tls")),
    );
    expect(first.annotations("kubevirt-ts-web")?.["kubevirt-ts.io/web-tls"]).toBe(
      sha256OfJson(kept("kubevirt-ts-web-tls")),
    );
    expect(first.annotations("virt-api")?.["kubevirt-ts.io/upload-master-key"]).toBe(
      sha256(kept("kubevirt-ts-upload-master-key").key ?? ""),
    );
  });

  test("takes the console's and the webhooks' certificates from Secrets the user made (existingSecrets)", async ({
    namespace,
    core,
  }) => {
    const userSecrets = ["kubevirt-ts-handler-console-tls", "kubevirt-ts-api-console-tls", "kubevirt-ts-webhook-tls"];
    /** Every caBundle the webhook configurations and APIServices trust. */
    const bundles = (objects: K8sObject[]) =>
      (
        objects as unknown as { kind: string; spec?: { caBundle?: string }; webhooks?: { clientConfig: object }[] }[]
      ).flatMap((o) =>
        o.kind === "APIService"
          ? [o.spec?.caBundle]
          : (o.webhooks ?? []).map((w) => (w.clientConfig as { caBundle?: string }).caBundle),
      );
    // Offline (helm template, GitOps): the CA is a value; no Secret of those three is rendered, the pods mount them.
    const offline = await render("certificates.existingSecrets=true", "certificates.webhookCABundle=QUJD");
    expect(offline.filter((o) => o.kind === "Secret" && userSecrets.includes(o.metadata.name))).toEqual([]);
    expect(bundles(offline).length).toBeGreaterThanOrEqual(10);
    expect(new Set(bundles(offline))).toEqual(new Set(["QUJD"]));
    expect(JSON.stringify(offline.filter((o) => o.kind === "Deployment" || o.kind === "DaemonSet"))).toContain(
      '"secretName":"kubevirt-ts-webhook-tls"',
    );
    const refused = await render("certificates.existingSecrets=true").then(
      () => "",
      (e: unknown) => String(e),
    );
    expect(refused).toContain("set certificates.webhookCABundle");
    // Under install and upgrade: the CA is read from the user's webhook Secret, and the checksums follow the Secrets.
    const made = (await template("--namespace", namespace)).filter(
      (o) => o.kind === "Secret" && userSecrets.includes(o.metadata.name),
    ) as unknown as { metadata: { name: string }; type: string; data: Record<string, string> }[];
    expect(made.map((m) => m.metadata.name).sort()).toEqual([...userSecrets].sort());
    for (const { metadata, type, data } of made)
      await core.createNamespacedSecret({ namespace, body: { metadata: { name: metadata.name }, type, data } });
    const installed = await dryRunUpgrade(namespace, "certificates.existingSecrets=true");
    const webhook = made.find((m) => m.metadata.name === "kubevirt-ts-webhook-tls")?.data ?? {};
    expect(new Set(bundles(installed))).toEqual(new Set([webhook["ca.crt"]]));
    expect(installed.filter((o) => o.kind === "Secret" && userSecrets.includes(o.metadata.name))).toEqual([]);
    expect(checksums(installed).annotations("virt-api")?.["kubevirt-ts.io/webhook-tls"]).toBe(sha256OfJson(webhook));
  });

  test("takes the upload master key from the Secret the user made (uploads.existingMasterKeySecret)", async ({
    namespace,
    core,
  }) => {
    const SECRET = "kubevirt-ts-upload-master-key";
    const keyChecksums = (objects: K8sObject[]) =>
      ["virt-api", "virt-controller"].map(
        (name) => checksums(objects).annotations(name)?.["kubevirt-ts.io/upload-master-key"],
      );
    // Offline (helm template, GitOps): no Secret rendered, the pods mount the user's, and two renders are the same.
    const offline = await render("uploads.existingMasterKeySecret=true");
    expect(offline.filter((o) => o.kind === "Secret" && o.metadata.name === SECRET)).toEqual([]);
    expect(JSON.stringify(offline.filter((o) => o.kind === "Deployment"))).toContain(`"secretName":"${SECRET}"`);
    expect(keyChecksums(offline)).toEqual([expect.any(String), expect.any(String)]);
    expect(keyChecksums(await render("uploads.existingMasterKeySecret=true"))).toEqual(keyChecksums(offline));
    // Without it, each offline render makes a key of its own: what the value is for.
    expect(keyChecksums(await render())).not.toEqual(keyChecksums(await render()));
    // Under install and upgrade: the checksum follows the user's Secret.
    const key = randomBytes(32).toString("base64");
    await core.createNamespacedSecret({ namespace, body: { metadata: { name: SECRET }, data: { key } } });
    const installed = await dryRunUpgrade(namespace, "uploads.existingMasterKeySecret=true");
    expect(installed.filter((o) => o.kind === "Secret" && o.metadata.name === SECRET)).toEqual([]);
    // (virt-controller mounts it only where the chart serves DataVolumes, which the test's API server does itself.)
    expect(keyChecksums(installed)).toEqual([sha256(key), undefined]);
  });
});

describe("the chart's Prometheus rules", () => {
  interface RuleGroups {
    groups: { name: string; rules: { alert?: string; record?: string; annotations?: Record<string, string> }[] }[];
  }
  const rulesFileOf = (objects: K8sObject[]) =>
    (
      objects.find((o) => o.kind === "ConfigMap" && o.metadata.name === "kubevirt-ts-prometheus-rules") as unknown as
        { data: Record<string, string> } | undefined
    )?.data["kubevirt-ts.rules.yaml"];

  test("are a plain rules file, and a PrometheusRule where the operator runs; each alert has a runbook", async () => {
    const plain = await template();
    expect(plain.filter((o) => o.kind === "PrometheusRule")).toEqual([]);
    const file = rulesFileOf(plain);
    expect(file).toBeDefined();
    const groups = parse(file ?? "") as RuleGroups;

    const operator = await template("--api-versions", "monitoring.coreos.com/v1/PrometheusRule");
    const rule = operator.find((o) => o.kind === "PrometheusRule") as unknown as { spec: RuleGroups } | undefined;
    expect(rule?.spec).toEqual(groups);

    const alerts = groups.groups.flatMap((g) => g.rules).filter((r) => r.alert !== undefined);
    expect(alerts.map((a) => a.alert)).toEqual(
      expect.arrayContaining([
        "VirtControllerDown",
        "VirtAPIDown",
        "LowReadyVirtControllersCount",
        "VMCannotBeEvicted",
      ]),
    );
    for (const alert of alerts) {
      const name = alert.alert ?? "";
      expect(alert.annotations?.runbook_url).toBe(
        `https://github.com/kubevirt-ts/kubevirt-ts/blob/main/docs/runbooks/${name}.md`,
      );
      // The runbook is there, and names its alert.
      await access(join(REPO_ROOT, "docs/runbooks", `${name}.md`));
      expect(await readFile(join(REPO_ROOT, "docs/runbooks", `${name}.md`), "utf8")).toMatch(
        new RegExp(`^# ${name}\\b`),
      );
    }
    // metrics.runbookUrlTemplate points the links elsewhere.
    const moved = parse(
      rulesFileOf(await render("metrics.runbookUrlTemplate=https://runbooks.example.test/%s")) ?? "",
    ) as RuleGroups;
    expect(moved.groups[1]?.rules[0]?.annotations?.runbook_url).toMatch(
      /^https:\/\/runbooks\.example\.test\/[A-Za-z]+$/,
    );
  });

  test("fire as Prometheus's own rule engine evaluates them (promtool test rules)", async () => {
    const script = join(REPO_ROOT, "hack/build-promtool.sh");
    const promtool = (await exec(script, { maxBuffer: 1 << 20 })).stdout.trim().split("\n").pop() ?? "";
    const dir = await mkdtemp(join(tmpdir(), "chart-rules-"));
    await writeFile(join(dir, "kubevirt-ts.rules.yaml"), rulesFileOf(await template()) ?? "");
    await copyFile(
      join(REPO_ROOT, "packages/local-cluster/test/prometheus-rules.promtool.yaml"),
      join(dir, "prometheus-rules.promtool.yaml"),
    );
    const checked = await exec(promtool, ["check", "rules", "kubevirt-ts.rules.yaml"], { cwd: dir });
    expect(checked.stdout).toMatch(/SUCCESS: \d+ rules found/);
    // promtool exits 1 on a failed case, and says which on its output.
    const tested = await exec(promtool, ["test", "rules", "prometheus-rules.promtool.yaml"], { cwd: dir }).catch(
      (e: unknown) => {
        const { stdout = "", stderr = "" } = e as { stdout?: string; stderr?: string };
        return { stdout: `${stdout}${stderr}`, failed: true };
      },
    );
    expect(tested, tested.stdout).not.toHaveProperty("failed");
    expect(tested.stdout).toContain("SUCCESS");

    // The Grafana dashboard's queries parse: each written as a recording rule for promtool to check.
    const dashboard = objectsOf(
      await templateYaml("--show-only", "templates/grafana-dashboard.yaml"),
    )[0] as unknown as {
      data: Record<string, string>;
    };
    const panels = (
      JSON.parse(dashboard.data["kubevirt-ts.json"] ?? "{}") as {
        panels: { title: string; targets: { refId: string; expr: string }[] }[];
      }
    ).panels;
    const queries = panels.flatMap((p, i) =>
      p.targets.map((t) => ({ record: `panel_${String(i)}_${t.refId}`, expr: t.expr })),
    );
    expect(queries.length).toBeGreaterThan(10);
    await writeFile(join(dir, "dashboard.rules.yaml"), stringify({ groups: [{ name: "dashboard", rules: queries }] }));
    const dashboardChecked = await exec(promtool, ["check", "rules", "dashboard.rules.yaml"], { cwd: dir });
    expect(dashboardChecked.stdout).toContain(`SUCCESS: ${String(queries.length)} rules found`);
  });
});
