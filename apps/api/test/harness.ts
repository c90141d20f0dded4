import { once } from "node:events";
import { mkdtemp, readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type CoreV1Api, type CustomObjectsApi, KubeConfig, type V1PolicyRule } from "@kubernetes/client-node";
import { Pki } from "@kubevirt-ts/control-plane";
import { KubeClient } from "@kubevirt-ts/kube";
import type { Logger } from "@kubevirt-ts/runtime";
import { inject } from "vitest";
import type { ClientTrust } from "../src/client-cert.ts";
import { HandlerDialer } from "../src/handler-dialer.ts";
import { createApiServer, createWebhookServer } from "../src/server.ts";
import type { ApiServices } from "../src/trpc/init.ts";

// What the API's integration tests share: the API's server against the real
// API server of vitest-setup, and real users of a test namespace (service
// accounts with tokens, allowed what KubeVirt's edit and view roles allow).

export interface StartedApi {
  /** http://127.0.0.1:<port> */
  url: string;
  stop(): Promise<void>;
}

/**
 * The API's HTTP server on a free loopback port, its own client the test control plane's admin; `metrics`, the graphs'
 * source; `apiServer`, an address to reach the API server at instead of its own (a proxy that watches the calls).
 */
export async function startApi(
  log: Logger,
  services: Pick<ApiServices, "metrics"> = {},
  apiServer?: string,
): Promise<StartedApi> {
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromString(inject("kubeconfig"));
  if (apiServer) kubeConfig.clusters = kubeConfig.clusters.map((cluster) => ({ ...cluster, server: apiServer }));
  const own = await KubeClient.fromKubeConfig(kubeConfig);
  const empty = Buffer.alloc(0);
  const server = createApiServer({
    own,
    handlers: new HandlerDialer({
      own,
      namespace: "kubevirt-ts",
      port: 8186,
      tls: { ca: empty, cert: empty, key: empty },
    }),
    guestImages: [{ name: "debian-12", image: "example/debian:12", description: "Debian", boot: "disk" }],
    log,
    ...services,
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const address = server.address();
  return {
    url: `http://127.0.0.1:${String(typeof address === "object" && address ? address.port : 0)}`,
    stop: async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

export interface StartedWebhooks {
  /** The webhook server's base URL, https://127.0.0.1:<port>. */
  url: string;
  /** Its CA, as a webhook configuration's caBundle takes it. */
  caBundle: string;
  close(): void;
}

/**
 * The admission webhooks' TLS server on a free loopback port, with a CA of its own, its own client `kubeConfig`'s;
 * `callers`, whose client certificates it takes.
 */
export async function startWebhooks(
  kubeConfig: KubeConfig,
  log: Logger,
  callers?: ClientTrust,
): Promise<StartedWebhooks> {
  const pki = new Pki(await mkdtemp(join(tmpdir(), "webhook-tls-")));
  await pki.createCa("webhook-ca");
  const pair = await pki.issue({ name: "webhook", commonName: "127.0.0.1", usage: "server", hosts: ["127.0.0.1"] });
  const webhooks = createWebhookServer(
    { cert: await readFile(pair.cert), key: await readFile(pair.key) },
    await KubeClient.fromKubeConfig(kubeConfig),
    log,
    undefined,
    undefined,
    undefined,
    callers,
  );
  webhooks.listen(0, "127.0.0.1");
  await once(webhooks, "listening");
  const address = webhooks.address();
  const port = typeof address === "object" && address ? address.port : 0;
  return {
    url: `https://127.0.0.1:${String(port)}`,
    caBundle: (await readFile(pki.ca.cert)).toString("base64"),
    close: () => webhooks.close(),
  };
}

const vmis = (namespace: string) => ({
  group: "kubevirt.io",
  version: "v1",
  namespace,
  plural: "virtualmachineinstances",
});

/**
 * A VMI running on `node` in its launcher pod `virt-launcher-<name>`, as the controller and a handler leave them (no
 * VMI webhook or controller runs in these tests); `canMove`, its LiveMigratable condition.
 */
export async function runningVmi(
  core: CoreV1Api,
  custom: CustomObjectsApi,
  namespace: string,
  o: { name: string; node: string; evictionStrategy: string; canMove: boolean },
): Promise<void> {
  const { name, node, evictionStrategy, canMove } = o;
  const conditions = [
    {
      type: "LiveMigratable",
      status: canMove ? "True" : "False",
      reason: canMove ? undefined : "DisksNotLiveMigratable",
      message: canMove ? undefined : "PVC data is not shared",
    },
  ];
  const created = (await custom.createNamespacedCustomObject({
    ...vmis(namespace),
    body: {
      apiVersion: "kubevirt.io/v1",
      kind: "VirtualMachineInstance",
      metadata: { name },
      spec: { domain: { devices: {} }, evictionStrategy },
      status: { phase: "Running", nodeName: node, conditions },
    },
  })) as { metadata: { uid: string } };
  const uid = created.metadata.uid;
  await core.createNamespacedPod({
    namespace,
    body: {
      metadata: {
        name: `virt-launcher-${name}`,
        labels: { "kubevirt.io": "virt-launcher", "kubevirt.io/created-by": uid },
        ownerReferences: [
          { apiVersion: "kubevirt.io/v1", kind: "VirtualMachineInstance", name, uid, controller: true },
        ],
      },
      spec: { nodeName: node, containers: [{ name: "compute", image: "launcher" }] },
    },
  });
}

/** The node a VMI is marked for evacuation from, if any. */
export const evacuationNodeName = async (
  custom: CustomObjectsApi,
  namespace: string,
  name: string,
): Promise<string | undefined> =>
  (
    (await custom.getNamespacedCustomObject({ ...vmis(namespace), name })) as {
      status: { evacuationNodeName?: string };
    }
  ).status.evacuationNodeName;

/** A Role named `role` with the rules, bound to the service account `user` of the namespace. */
export async function grant(
  kubeConfig: KubeConfig,
  namespace: string,
  user: string,
  role: string,
  rules: V1PolicyRule[],
): Promise<void> {
  const { RbacAuthorizationV1Api } = await import("@kubernetes/client-node");
  const rbac = kubeConfig.makeApiClient(RbacAuthorizationV1Api);
  await rbac.createNamespacedRole({ namespace, body: { metadata: { name: role }, rules } });
  await rbac.createNamespacedRoleBinding({
    namespace,
    body: {
      metadata: { name: role },
      roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: role },
      subjects: [{ kind: "ServiceAccount", name: user, namespace }],
    },
  });
}

export interface Users {
  editor: string;
  viewer: string;
}

/** Two service accounts with tokens, allowed in the namespace what KubeVirt's edit and view roles allow. */
export async function users(kubeConfig: KubeConfig, namespace: string): Promise<Users> {
  const { CoreV1Api } = await import("@kubernetes/client-node");
  const core = kubeConfig.makeApiClient(CoreV1Api);
  const rules = {
    editor: [
      {
        apiGroups: ["kubevirt.io"],
        resources: ["virtualmachines", "virtualmachineinstances"],
        verbs: ["get", "list", "watch", "create", "update", "patch", "delete"],
      },
      {
        apiGroups: ["subresources.kubevirt.io"],
        resources: [
          "virtualmachineinstances/console",
          "virtualmachineinstances/vnc",
          "virtualmachineinstances/portforward",
          "virtualmachines/portforward",
          "virtualmachineinstances/guestosinfo",
          "virtualmachineinstances/userlist",
          "virtualmachineinstances/filesystemlist",
          "virtualmachines/expand-spec",
          "virtualmachines/objectgraph",
          "virtualmachineinstances/objectgraph",
        ],
        verbs: ["get"],
      },
      { apiGroups: ["subresources.kubevirt.io"], resources: ["expand-vm-spec"], verbs: ["update"] },
      {
        apiGroups: ["subresources.kubevirt.io"],
        resources: [
          "virtualmachines/start",
          "virtualmachines/stop",
          "virtualmachines/restart",
          "virtualmachineinstances/pause",
          "virtualmachineinstances/unpause",
          "virtualmachineinstances/softreboot",
          "virtualmachineinstances/reset",
          "virtualmachineinstances/freeze",
          "virtualmachineinstances/unfreeze",
        ],
        verbs: ["update"],
      },
      { apiGroups: [""], resources: ["events"], verbs: ["list"] },
      // As Kubernetes' edit role: the dashboard keeps a VM's cloud-init password in a Secret, and a VM's
      // inferFromVolume is resolved as the user, who reads the claim.
      { apiGroups: [""], resources: ["secrets"], verbs: ["create"] },
      { apiGroups: [""], resources: ["persistentvolumeclaims"], verbs: ["get"] },
      // As Kubernetes' edit and view roles: a VM's serial log is read as its launcher pod's log.
      { apiGroups: [""], resources: ["pods/log"], verbs: ["get"] },
    ],
    viewer: [
      {
        apiGroups: ["kubevirt.io"],
        resources: ["virtualmachines", "virtualmachineinstances"],
        verbs: ["get", "list", "watch"],
      },
    ],
  };
  const tokens: Record<string, string> = {};
  for (const [name, roleRules] of Object.entries(rules)) {
    await core.createNamespacedServiceAccount({ namespace, body: { metadata: { name } } });
    await grant(kubeConfig, namespace, name, name, roleRules);
    const request = await core.createNamespacedServiceAccountToken({
      namespace,
      name,
      body: { spec: { audiences: [], expirationSeconds: 3600 } },
    });
    tokens[name] = request.status?.token ?? "";
  }
  return tokens as unknown as Users;
}
