import { once } from "node:events";
import { readFile } from "node:fs/promises";
import { request } from "node:https";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import type { ConnectionOptions } from "node:tls";
import { ApiregistrationV1Api, CoreV1Api, KubeConfig } from "@kubernetes/client-node";
import { test, tlsSecretDir } from "@kubevirt-ts/control-plane/testing";
import { KubeClient } from "@kubevirt-ts/kube";
import { createLogger } from "@kubevirt-ts/runtime";
import { afterAll, beforeAll, describe, expect, inject } from "vitest";
import { type ClientOptions, WebSocket } from "ws";
import { createSubresourceConsoles } from "../src/console-proxy.ts";
import { HandlerDialer } from "../src/handler-dialer.ts";
import { createWebhookServer } from "../src/server.ts";
import { createSubresourceApi } from "../src/subresources/api.ts";
import { FrontProxy } from "../src/subresources/front-proxy.ts";
import { users } from "./harness.ts";

// KubeVirt's subresource API as the Kubernetes API server calls it: over
// TLS, with the front proxy's client certificate from the real control
// plane and the user in X-Remote-* headers. The front proxy's CA comes from
// the real kube-system/extension-apiserver-authentication, whether the user
// may comes from a real SubjectAccessReview, and the writes land in the real
// API server. The console and VNC websockets are also reached through the
// real API server's aggregation layer: an APIService of the test's own
// points the API server at virt-api's TLS port (an ExternalName Service to
// 127.0.0.1), so the API server authenticates and authorizes the user,
// proxies the upgrade with its front proxy's certificate, and passes back
// virt-api's answer. (The rest of the path through the aggregation layer is
// e2e/cluster/subresources.test.ts; a console session that reaches a guest,
// which takes a handler and a launcher, is e2e/cluster/vm-debian.test.ts.)

let url = "";
let stop: () => Promise<void> = () => Promise.resolve();
let proxyTls: { cert: Buffer; key: Buffer };
let strangerTls: { cert: Buffer; key: Buffer };
let servingCa: Buffer;
let port = 0;

/** The Service the test's APIServices name; the API server checks virt-api's certificate for <name>.<namespace>.svc. */
const AGGREGATED_SERVICE = { name: "virt-api-test", namespace: "default" } as const;
const VERSIONS = ["v1", "v1alpha3"] as const;

beforeAll(async () => {
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromString(inject("kubeconfig"));
  const own = await KubeClient.fromKubeConfig(kubeConfig);
  const log = createLogger({ component: "subresources-test", level: "error" });
  // A serving certificate of a CA of the test's own (the API server checks the APIService's caBundle; this client does
  // not).
  const serving = await tlsSecretDir("virt-api", "server", [
    "127.0.0.1",
    `${AGGREGATED_SERVICE.name}.${AGGREGATED_SERVICE.namespace}.svc`,
  ]);
  servingCa = await readFile(join(serving, "ca.crt"));
  // A client certificate with the front proxy's name from another CA: not the front proxy.
  const stranger = await tlsSecretDir("front-proxy-client", "client");
  strangerTls = { cert: await readFile(join(stranger, "tls.crt")), key: await readFile(join(stranger, "tls.key")) };
  proxyTls = {
    cert: await readFile(inject("frontProxyClient").cert),
    key: await readFile(inject("frontProxyClient").key),
  };
  const empty = Buffer.alloc(0);
  const handlers = new HandlerDialer({
    own,
    namespace: "kubevirt-ts",
    port: 8186,
    tls: { ca: empty, cert: empty, key: empty },
  });
  const frontProxy = new FrontProxy(own);
  const server = createWebhookServer(
    { cert: await readFile(join(serving, "tls.crt")), key: await readFile(join(serving, "tls.key")) },
    own,
    log,
    createSubresourceApi({ own, handlers, frontProxy, log, version: "test" }),
    createSubresourceConsoles({ own, handlers, frontProxy, log }),
  );
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  port = (server.address() as AddressInfo).port;
  url = `https://127.0.0.1:${String(port)}`;
  stop = async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  };
});

afterAll(() => stop());

interface Answer {
  code: number;
  body: string;
}

function call(
  method: string,
  path: string,
  options: { tls?: { cert: Buffer; key: Buffer }; headers?: Record<string, string | string[]>; body?: string } = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(
      `${url}${path}`,
      {
        method,
        rejectUnauthorized: false,
        ...options.tls,
        // Node sends a GET's body without a length unless told one; Go's client (virtctl objectgraph) sends one.
        headers: {
          ...options.headers,
          ...(options.body !== undefined ? { "content-length": String(Buffer.byteLength(options.body)) } : {}),
        },
      },
      (res) => {
        let body = "";
        res
          .setEncoding("utf8")
          .on("data", (c: string) => (body += c))
          .on("end", () => {
            resolve({ code: res.statusCode ?? 0, body });
          });
      },
    );
    req.on("error", reject);
    req.end(options.body);
  });
}

const as = (user: string) => ({
  tls: proxyTls,
  headers: { "X-Remote-User": user, "X-Remote-Group": ["system:serviceaccounts", "system:authenticated"] },
});
const vmPath = (namespace: string, name: string, sub: string, version = "v1") =>
  `/apis/subresources.kubevirt.io/${version}/namespaces/${namespace}/virtualmachines/${name}/${sub}`;

describe("the subresource API", () => {
  test("lists its subresources, and tells its version, to anyone (the API server's availability check)", async () => {
    for (const version of ["v1", "v1alpha3"]) {
      const discovery = await call("GET", `/apis/subresources.kubevirt.io/${version}`);
      expect(discovery.code).toBe(200);
      const list = JSON.parse(discovery.body) as { kind: string; groupVersion: string; resources: { name: string }[] };
      expect(list.kind).toBe("APIResourceList");
      expect(list.groupVersion).toBe(`subresources.kubevirt.io/${version}`);
      expect(list.resources.map((r) => r.name)).toEqual(
        expect.arrayContaining([
          "virtualmachines/start",
          "virtualmachines/stop",
          "virtualmachines/restart",
          "virtualmachineinstances/pause",
          "virtualmachineinstances/unpause",
        ]),
      );
      // The websockets are asked for with GET, the actions with PUT, as KubeVirt's discovery says.
      const verbs = Object.fromEntries(
        (list.resources as { name: string; verbs: string[] }[]).map((r) => [r.name, r.verbs]),
      );
      expect(verbs).toMatchObject({
        "virtualmachineinstances/console": ["get"],
        "virtualmachineinstances/vnc": ["get"],
        "virtualmachineinstances/portforward": ["get"],
        "virtualmachines/portforward": ["get"],
        "virtualmachines/start": ["update"],
      });
    }
    expect(JSON.parse((await call("GET", "/apis/subresources.kubevirt.io/v1/version")).body)).toMatchObject({
      gitVersion: "test",
    });
  });

  test("expands a stored VM and a sent one as their instancetype and preference say, for a user who may", async ({
    kubeConfig,
    custom,
    namespace,
  }) => {
    await users(kubeConfig, namespace);
    const group = { group: "instancetype.kubevirt.io", version: "v1beta1", namespace };
    await custom.createNamespacedCustomObject({
      ...group,
      plural: "virtualmachineinstancetypes",
      body: {
        apiVersion: "instancetype.kubevirt.io/v1beta1",
        kind: "VirtualMachineInstancetype",
        metadata: { name: "two" },
        spec: { cpu: { guest: 2 }, memory: { guest: "256Mi" } },
      },
    });
    await custom.createNamespacedCustomObject({
      ...group,
      plural: "virtualmachinepreferences",
      body: {
        apiVersion: "instancetype.kubevirt.io/v1beta1",
        kind: "VirtualMachinePreference",
        metadata: { name: "virtio" },
        spec: { devices: { preferredDiskBus: "virtio" } },
      },
    });
    const vm = (name: string, instancetype = "two") => ({
      apiVersion: "kubevirt.io/v1",
      kind: "VirtualMachine",
      metadata: { name },
      spec: {
        runStrategy: "Halted",
        instancetype: { name: instancetype, kind: "VirtualMachineInstancetype" },
        preference: { name: "virtio", kind: "VirtualMachinePreference" },
        template: {
          spec: { domain: { devices: {} }, volumes: [{ name: "root", containerDisk: { image: "example/guest" } }] },
        },
      },
    });
    const vms = { group: "kubevirt.io", version: "v1", namespace, plural: "virtualmachines" };
    await custom.createNamespacedCustomObject({ ...vms, body: vm("stored") });
    await custom.createNamespacedCustomObject({ ...vms, body: vm("orphan", "gone") });
    const editor = as(`system:serviceaccount:${namespace}:editor`);
    const viewer = as(`system:serviceaccount:${namespace}:viewer`);
    interface Expanded {
      spec: {
        instancetype?: unknown;
        preference?: unknown;
        template: { spec: { domain: { cpu: object; memory: { guest: string }; devices: { disks: object[] } } } };
      };
    }

    const stored = await call("GET", vmPath(namespace, "stored", "expand-spec"), editor);
    expect(stored.code).toBe(200);
    const expanded = JSON.parse(stored.body) as Expanded;
    expect(expanded.spec.instancetype).toBeUndefined();
    expect(expanded.spec.preference).toBeUndefined();
    expect(expanded.spec.template.spec.domain.cpu).toMatchObject({ sockets: 2, cores: 1, threads: 1 });
    expect(expanded.spec.template.spec.domain.memory.guest).toBe("256Mi");
    expect(expanded.spec.template.spec.domain.devices.disks).toEqual([{ name: "root", disk: { bus: "virtio" } }]);

    const sent = await call("PUT", `/apis/subresources.kubevirt.io/v1/namespaces/${namespace}/expand-vm-spec`, {
      ...editor,
      body: JSON.stringify(vm("sent")),
    });
    expect(sent.code).toBe(200);
    expect((JSON.parse(sent.body) as Expanded).spec.template.spec.domain.memory.guest).toBe("256Mi");

    const elsewhere = await call("PUT", `/apis/subresources.kubevirt.io/v1/namespaces/${namespace}/expand-vm-spec`, {
      ...editor,
      body: JSON.stringify({ ...vm("x"), metadata: { name: "x", namespace: "other" } }),
    });
    expect([elsewhere.code, elsewhere.body]).toEqual([
      400,
      expect.stringContaining(`VM namespace must be empty or ${namespace}`),
    ]);
    const empty = await call("PUT", `/apis/subresources.kubevirt.io/v1/namespaces/${namespace}/expand-vm-spec`, editor);
    expect([empty.code, empty.body]).toEqual([400, expect.stringContaining("empty request body")]);
    const orphan = await call("GET", vmPath(namespace, "orphan", "expand-spec"), editor);
    expect([orphan.code, (JSON.parse(orphan.body) as { message: string }).message]).toEqual([
      500,
      expect.stringContaining('"gone" not found'),
    ]);
    expect((await call("GET", vmPath(namespace, "absent", "expand-spec"), editor)).code).toBe(404);
    const refused = await call("GET", vmPath(namespace, "stored", "expand-spec"), viewer);
    expect([refused.code, (JSON.parse(refused.body) as { message: string }).message]).toEqual([
      403,
      expect.stringContaining('cannot get resource "virtualmachines/expand-spec"'),
    ]);
  });

  test("answers only the API server's front proxy, and only for a named user", async ({ namespace }) => {
    const path = vmPath(namespace, "vm", "start");
    const nobody = await call("PUT", path, {
      headers: { "X-Remote-User": "system:admin", "X-Remote-Group": "system:masters" },
    });
    expect(nobody.code).toBe(401);
    expect(nobody.body).toContain("no client certificate of the API server's front proxy");
    const stranger = await call("PUT", path, {
      tls: strangerTls,
      headers: { "X-Remote-User": "system:admin", "X-Remote-Group": "system:masters" },
    });
    expect(stranger.code).toBe(401);
    expect(stranger.body).toContain("not signed by the requestheader CA");
    const anonymous = await call("PUT", path, { tls: proxyTls });
    expect(anonymous.code).toBe(401);
    expect(anonymous.body).toContain("a valid user header is required for authorization");
  });

  test("starts and stops a VM for a user who may, refuses one who may not, and says why in KubeVirt's words", async ({
    kubeConfig,
    custom,
    namespace,
  }) => {
    await users(kubeConfig, namespace);
    const { RbacAuthorizationV1Api } = await import("@kubernetes/client-node");
    const rbac = kubeConfig.makeApiClient(RbacAuthorizationV1Api);
    // The editor may use the lifecycle subresources, as KubeVirt's edit role allows.
    await rbac.createNamespacedRole({
      namespace,
      body: {
        metadata: { name: "lifecycle" },
        rules: [
          {
            apiGroups: ["subresources.kubevirt.io"],
            resources: ["virtualmachines/start", "virtualmachines/stop", "virtualmachines/restart"],
            verbs: ["update"],
          },
        ],
      },
    });
    await rbac.createNamespacedRoleBinding({
      namespace,
      body: {
        metadata: { name: "lifecycle" },
        roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "lifecycle" },
        subjects: [{ kind: "ServiceAccount", name: "editor", namespace }],
      },
    });
    const vms = { group: "kubevirt.io", version: "v1", namespace, plural: "virtualmachines" };
    const body = (name: string, runStrategy: string) => ({
      apiVersion: "kubevirt.io/v1",
      kind: "VirtualMachine",
      metadata: { name },
      spec: { runStrategy, template: { spec: { domain: { devices: {}, memory: { guest: "64Mi" } } } } },
    });
    await custom.createNamespacedCustomObject({ ...vms, body: body("halted", "Halted") });
    await custom.createNamespacedCustomObject({ ...vms, body: body("manual", "Manual") });
    const editor = as(`system:serviceaccount:${namespace}:editor`);
    const viewer = as(`system:serviceaccount:${namespace}:viewer`);

    const refused = await call("PUT", vmPath(namespace, "halted", "start"), viewer);
    expect(refused.code).toBe(403);
    expect(JSON.parse(refused.body)).toMatchObject({
      kind: "Status",
      reason: "Forbidden",
      message: expect.stringContaining(
        `cannot update resource "virtualmachines/start" in API group "subresources.kubevirt.io"`,
      ) as unknown,
    });
    expect(
      ((await custom.getNamespacedCustomObject({ ...vms, name: "halted" })) as { spec: { runStrategy: string } }).spec
        .runStrategy,
    ).toBe("Halted");

    // A dry run checks and changes nothing.
    expect(
      (
        await call("PUT", vmPath(namespace, "halted", "start"), {
          ...editor,
          body: JSON.stringify({ dryRun: ["All"] }),
        })
      ).code,
    ).toBe(202);
    expect(
      ((await custom.getNamespacedCustomObject({ ...vms, name: "halted" })) as { spec: { runStrategy: string } }).spec
        .runStrategy,
    ).toBe("Halted");

    expect((await call("PUT", vmPath(namespace, "halted", "start", "v1alpha3"), editor)).code).toBe(202);
    expect(
      ((await custom.getNamespacedCustomObject({ ...vms, name: "halted" })) as { spec: { runStrategy: string } }).spec
        .runStrategy,
    ).toBe("Always");
    const again = await call("PUT", vmPath(namespace, "halted", "start"), editor);
    expect(again.code).toBe(409);
    expect(JSON.parse(again.body)).toMatchObject({
      reason: "Conflict",
      message:
        'Operation cannot be fulfilled on virtualmachine.kubevirt.io "halted": Always ' +
        "does not support manual start requests",
    });
    expect((await call("PUT", vmPath(namespace, "halted", "stop"), editor)).code).toBe(202);
    expect(
      ((await custom.getNamespacedCustomObject({ ...vms, name: "halted" })) as { spec: { runStrategy: string } }).spec
        .runStrategy,
    ).toBe("Halted");

    // A Manual VM starts by a request in its status, which the user could not write: the API's own account does, for
    // them.
    expect((await call("PUT", vmPath(namespace, "manual", "start"), editor)).code).toBe(202);
    const manual = (await custom.getNamespacedCustomObject({ ...vms, name: "manual" })) as {
      spec: { runStrategy: string };
      status?: { stateChangeRequests?: unknown[] };
    };
    expect(manual.spec.runStrategy).toBe("Manual");
    expect(manual.status?.stateChangeRequests).toEqual([{ action: "Start" }]);
    const stopped = await call("PUT", vmPath(namespace, "manual", "stop"), editor);
    expect(stopped.code).toBe(409);
    expect((JSON.parse(stopped.body) as { message: string }).message).toBe(
      'Operation cannot be fulfilled on virtualmachine.kubevirt.io "manual": VM is not running',
    );

    const missing = await call("PUT", vmPath(namespace, "nothing", "restart"), editor);
    expect(missing.code).toBe(404);
    expect((JSON.parse(missing.body) as { message: string }).message).toBe(
      'virtualmachine.kubevirt.io "nothing" not found',
    );
  });
});

describe("unpause while a snapshot of the VM is under way", () => {
  test("is refused as KubeVirt refuses it, and goes on to the handler once the snapshot is done", async ({
    kubeConfig,
    custom,
    namespace,
  }) => {
    await users(kubeConfig, namespace);
    const editor = as(`system:serviceaccount:${namespace}:editor`);
    const vms = { group: "kubevirt.io", version: "v1", namespace, plural: "virtualmachines" };
    const template = { spec: { domain: { devices: {}, memory: { guest: "64Mi" } } } };
    await custom.createNamespacedCustomObject({
      ...vms,
      body: { apiVersion: "kubevirt.io/v1", kind: "VirtualMachine", metadata: { name: "vm" }, spec: { template } },
    });
    const mark = async (snapshotInProgress: string | undefined) => {
      await custom.replaceNamespacedCustomObjectStatus({
        ...vms,
        name: "vm",
        body: {
          ...((await custom.getNamespacedCustomObject({ ...vms, name: "vm" })) as object),
          status: snapshotInProgress === undefined ? {} : { snapshotInProgress },
        },
      });
    };
    await mark("snap-1");
    // Paused, on a node with no handler.
    await custom.createNamespacedCustomObject({
      ...vms,
      plural: "virtualmachineinstances",
      body: {
        apiVersion: "kubevirt.io/v1",
        kind: "VirtualMachineInstance",
        metadata: { name: "vm" },
        spec: template.spec,
        status: {
          phase: "Running",
          nodeName: "node-without-handler",
          conditions: [{ type: "Paused", status: "True" }],
        },
      },
    });
    const unpause = `/apis/subresources.kubevirt.io/v1/namespaces/${namespace}/virtualmachineinstances/vm/unpause`;
    const refused = await call("PUT", unpause, editor);
    expect([refused.code, JSON.parse(refused.body)]).toEqual([
      409,
      expect.objectContaining({
        reason: "Conflict",
        message:
          'Operation cannot be fulfilled on virtualmachine.kubevirt.io "vm": VM snapshot is in progress: snapshot ' +
          "snap-1 of the VM is under way and resumes the VM when it is done; wait for it, or delete the snapshot",
      }),
    ]);
    // The snapshot done: the unpause is asked of the handler, which is not there.
    await mark(undefined);
    const asked = await call("PUT", unpause, editor);
    expect([asked.code, (JSON.parse(asked.body) as { message: string }).message]).toEqual([
      503,
      expect.stringContaining("no ready handler runs on node node-without-handler"),
    ]);
  });
});

describe("virtctl migrate: the migrate subresource of VMs", () => {
  test(
    "is listed for update, and makes a kubevirt-migrate-vm- migration of the running VMI for a " +
      "user who may, with addedNodeSelector; refuses the rest",
    async ({ kubeConfig, custom, namespace }) => {
      const discovery = JSON.parse((await call("GET", "/apis/subresources.kubevirt.io/v1")).body) as {
        resources: { name: string; verbs: string[] }[];
      };
      expect(discovery.resources.find((r) => r.name === "virtualmachines/migrate")?.verbs).toEqual(["update"]);

      await users(kubeConfig, namespace);
      const { RbacAuthorizationV1Api } = await import("@kubernetes/client-node");
      const rbac = kubeConfig.makeApiClient(RbacAuthorizationV1Api);
      // kubevirt.io:migrate's subresource rule, given to the editor in this namespace.
      await rbac.createNamespacedRole({
        namespace,
        body: {
          metadata: { name: "migrate" },
          rules: [
            { apiGroups: ["subresources.kubevirt.io"], resources: ["virtualmachines/migrate"], verbs: ["update"] },
          ],
        },
      });
      await rbac.createNamespacedRoleBinding({
        namespace,
        body: {
          metadata: { name: "migrate" },
          roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "migrate" },
          subjects: [{ kind: "ServiceAccount", name: "editor", namespace }],
        },
      });
      const kubevirt = (plural: string) => ({ group: "kubevirt.io", version: "v1", namespace, plural });
      const spec = { domain: { devices: {}, memory: { guest: "64Mi" } } };
      for (const name of ["web", "stopped"]) {
        await custom.createNamespacedCustomObject({
          ...kubevirt("virtualmachines"),
          body: {
            apiVersion: "kubevirt.io/v1",
            kind: "VirtualMachine",
            metadata: { name },
            spec: { runStrategy: "Manual", template: { spec } },
          },
        });
      }
      const vm = (await custom.getNamespacedCustomObject({ ...kubevirt("virtualmachines"), name: "web" })) as {
        metadata: { uid: string };
      };
      // The VM's VMI as the controller and a handler leave it (no controller runs here).
      await custom.createNamespacedCustomObject({
        ...kubevirt("virtualmachineinstances"),
        body: {
          apiVersion: "kubevirt.io/v1",
          kind: "VirtualMachineInstance",
          spec,
          metadata: {
            name: "web",
            ownerReferences: [
              {
                apiVersion: "kubevirt.io/v1",
                kind: "VirtualMachine",
                name: "web",
                uid: vm.metadata.uid,
                controller: true,
              },
            ],
          },
          status: { phase: "Running", nodeName: "node-a", conditions: [{ type: "LiveMigratable", status: "True" }] },
        },
      });
      const editor = as(`system:serviceaccount:${namespace}:editor`);
      const viewer = as(`system:serviceaccount:${namespace}:viewer`);
      const list = async () =>
        (
          (await custom.listNamespacedCustomObject(kubevirt("virtualmachineinstancemigrations"))) as {
            items: { metadata: { name: string; labels?: Record<string, string> }; spec: unknown }[];
          }
        ).items;

      const refused = await call("PUT", vmPath(namespace, "web", "migrate"), viewer);
      expect([refused.code, (JSON.parse(refused.body) as { message: string }).message]).toEqual([
        403,
        expect.stringContaining('cannot update resource "virtualmachines/migrate"'),
      ]);
      expect(
        (
          await call("PUT", vmPath(namespace, "web", "migrate"), {
            ...editor,
            body: JSON.stringify({ dryRun: ["All"] }),
          })
        ).code,
      ).toBe(202);
      expect(await list()).toEqual([]);
      const badSelector = await call("PUT", vmPath(namespace, "web", "migrate"), {
        ...editor,
        body: JSON.stringify({ addedNodeSelector: { "kubernetes.io/hostname": 2 } }),
      });
      expect([badSelector.code, badSelector.body]).toEqual([
        400,
        expect.stringContaining("addedNodeSelector must be a map of label names to values"),
      ]);

      const moved = await call("PUT", vmPath(namespace, "web", "migrate", "v1alpha3"), {
        ...editor,
        body: JSON.stringify({ addedNodeSelector: { "kubernetes.io/hostname": "node-b" } }),
      });
      expect(moved.code).toBe(202);
      const [made, ...more] = await list();
      expect(more).toEqual([]);
      expect(made?.metadata.name).toMatch(/^kubevirt-migrate-vm-/);
      expect(made?.spec).toEqual({ vmiName: "web", addedNodeSelector: { "kubernetes.io/hostname": "node-b" } });
      // KubeVirt's label, which virtctl migrate-cancel lists migrations by.
      expect(made?.metadata.labels).toEqual({ "kubevirt.io/vmi-name": "web" });

      const stopped = await call("PUT", vmPath(namespace, "stopped", "migrate"), editor);
      expect([stopped.code, (JSON.parse(stopped.body) as { message: string }).message]).toEqual([
        409,
        'Operation cannot be fulfilled on virtualmachine.kubevirt.io "stopped": VM is not running',
      ]);
      expect((await call("PUT", vmPath(namespace, "absent", "migrate"), editor)).code).toBe(404);
    },
  );
});

describe("virtctl objectgraph, and the subresources kubevirt-ts refuses by name", () => {
  test(
    "answers a VM's and a VMI's object graph to a user who may, filtered by the body's options; " +
      "refuses addvolume and memorydump with the reason",
    async ({ kubeConfig, custom, core, namespace }) => {
      const discovery = JSON.parse((await call("GET", "/apis/subresources.kubevirt.io/v1")).body) as {
        resources: { name: string; verbs: string[] }[];
      };
      for (const name of ["virtualmachines/objectgraph", "virtualmachineinstances/objectgraph"])
        expect(discovery.resources.find((r) => r.name === name)?.verbs).toEqual(["get"]);
      expect(discovery.resources.map((r) => r.name)).not.toContain("virtualmachineinstances/addvolume");

      await users(kubeConfig, namespace);
      const kubevirt = (plural: string) => ({ group: "kubevirt.io", version: "v1", namespace, plural });
      const spec = {
        domain: { devices: {}, memory: { guest: "64Mi" } },
        volumes: [
          { name: "root", dataVolume: { name: "root-dv" } },
          { name: "config", configMap: { name: "settings" } },
        ],
      };
      await custom.createNamespacedCustomObject({
        ...kubevirt("virtualmachines"),
        body: {
          apiVersion: "kubevirt.io/v1",
          kind: "VirtualMachine",
          metadata: { name: "web" },
          spec: { runStrategy: "Halted", template: { spec } },
        },
      });
      const vmi = (await custom.createNamespacedCustomObject({
        ...kubevirt("virtualmachineinstances"),
        body: { apiVersion: "kubevirt.io/v1", kind: "VirtualMachineInstance", metadata: { name: "web" }, spec },
      })) as { metadata: { uid: string } };
      // The VMI's launcher pod as the controller makes it (no controller runs here), and one planted before it in the
      // list with the VMI's labels and a reference to it that is not its controller: only the first is the VMI's.
      for (const [pod, controller] of [
        ["virt-launcher-web-abcde", true],
        ["virt-launcher-web-aaaaa", false],
      ] as const)
        await core.createNamespacedPod({
          namespace,
          body: {
            metadata: {
              name: pod,
              labels: { "kubevirt.io": "virt-launcher", "kubevirt.io/created-by": vmi.metadata.uid },
              ownerReferences: [
                {
                  apiVersion: "kubevirt.io/v1",
                  kind: "VirtualMachineInstance",
                  name: "web",
                  uid: vmi.metadata.uid,
                  controller,
                },
              ],
            },
            spec: { containers: [{ name: "compute", image: "example.invalid/launcher" }] },
          },
        });
      const editor = as(`system:serviceaccount:${namespace}:editor`);
      const viewer = as(`system:serviceaccount:${namespace}:viewer`);
      const vmiGraphPath = vmPath(namespace, "web", "objectgraph").replace(
        "/virtualmachines/",
        "/virtualmachineinstances/",
      );
      interface Node {
        objectReference: { kind: string; name: string };
        children?: Node[];
      }
      const flat = (node: Node): string[] =>
        (node.children ?? []).flatMap((c) => [`${c.objectReference.kind}/${c.objectReference.name}`, ...flat(c)]);

      const refused = await call("GET", vmPath(namespace, "web", "objectgraph"), viewer);
      expect([refused.code, (JSON.parse(refused.body) as { message: string }).message]).toEqual([
        403,
        expect.stringContaining('cannot get resource "virtualmachines/objectgraph"'),
      ]);
      const vmGraph = await call("GET", vmPath(namespace, "web", "objectgraph"), editor);
      expect(vmGraph.code).toBe(200);
      const vmRoot = JSON.parse(vmGraph.body) as Node;
      expect(vmRoot.objectReference).toEqual({
        apiGroup: "kubevirt.io",
        kind: "VirtualMachine",
        name: "web",
        namespace,
      });
      expect(flat(vmRoot)).toEqual(["DataVolume/root-dv", "PersistentVolumeClaim/root-dv", "ConfigMap/settings"]);

      const vmiGraph = await call("GET", vmiGraphPath, editor);
      expect([vmiGraph.code, flat(JSON.parse(vmiGraph.body) as Node)]).toEqual([
        200,
        ["Pod/virt-launcher-web-abcde", "DataVolume/root-dv", "PersistentVolumeClaim/root-dv", "ConfigMap/settings"],
      ]);
      // virtctl's body: GET with ObjectGraphOptions.
      const storage = await call("GET", vmiGraphPath, {
        ...editor,
        body: JSON.stringify({ labelSelector: { matchLabels: { "kubevirt.io/dependency-type": "storage" } } }),
      });
      expect(flat(JSON.parse(storage.body) as Node)).toEqual(["DataVolume/root-dv", "PersistentVolumeClaim/root-dv"]);
      const bad = await call("GET", vmiGraphPath, { ...editor, body: '{"includeOptionalNodes": "no"}' });
      expect([bad.code, bad.body]).toEqual([
        400,
        expect.stringContaining("includeOptionalNodes must be true or false"),
      ]);
      expect((await call("GET", vmPath(namespace, "absent", "objectgraph"), editor)).code).toBe(404);

      for (const [path, words] of [
        [vmPath(namespace, "web", "addvolume"), "kubevirt-ts does not build addvolume yet"],
        [vmPath(namespace, "web", "memorydump"), "kubevirt-ts does not build memory-dump yet"],
        [vmiGraphPath.replace(/objectgraph$/, "removevolume"), "kubevirt-ts does not build removevolume yet"],
      ] as const) {
        const answer = await call("PUT", path, { ...editor, body: "{}" });
        expect([answer.code, (JSON.parse(answer.body) as { message: string }).message]).toEqual([
          400,
          expect.stringContaining(words),
        ]);
        expect(answer.body).toContain("a running launcher pod cannot mount a new claim");
      }
    },
  );
});

/** What came back for a websocket upgrade: the open session, or the refusal's status and body. */
type Upgrade = { open: true; ws: WebSocket } | { open: false; code: number; body: string };

function upgrade(
  address: string,
  options: ClientOptions & ConnectionOptions,
  protocols: string[] = ["plain.kubevirt.io"],
): Promise<Upgrade> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(address, protocols, options);
    ws.once("open", () => {
      resolve({ open: true, ws });
    });
    ws.once("unexpected-response", (_req, res) => {
      let body = "";
      res
        .setEncoding("utf8")
        .on("data", (c: string) => (body += c))
        .on("end", () => {
          resolve({ open: false, code: res.statusCode ?? 0, body });
        });
    });
    ws.once("error", reject);
  });
}

/** A refusal's Kubernetes Status, or the test's failure when the session opened. */
function status(answer: Upgrade): { code: number; kind: string; reason: string; message: string; details?: unknown } {
  if (answer.open) {
    answer.ws.close();
    throw new Error("the console session opened; a refusal was expected");
  }
  const body = JSON.parse(answer.body) as { code: number; kind: string; reason: string; message: string };
  expect(body.code).toBe(answer.code);
  return body;
}

const vmiPath = (
  namespace: string,
  name: string,
  kind: "console" | "vnc" | "guestosinfo" | "userlist" | "filesystemlist" | "freeze" | "unfreeze",
  version = "v1",
) => `/apis/subresources.kubevirt.io/${version}/namespaces/${namespace}/virtualmachineinstances/${name}/${kind}`;

describe("the console and VNC websockets of the subresource API", () => {
  let apiServer = "";
  let apiServerCa: Buffer;

  beforeAll(async () => {
    const kubeConfig = new KubeConfig();
    kubeConfig.loadFromString(inject("kubeconfig"));
    const cluster = kubeConfig.getCurrentCluster();
    if (!cluster?.caData) throw new Error("the test kubeconfig has no cluster with certificate-authority-data");
    apiServer = cluster.server.replace(/^https:/, "wss:");
    apiServerCa = Buffer.from(cluster.caData, "base64");
    // The API server reaches virt-api as it would a Service's: an ExternalName Service, since no kube-proxy runs here.
    await kubeConfig.makeApiClient(CoreV1Api).createNamespacedService({
      namespace: AGGREGATED_SERVICE.namespace,
      body: { metadata: { name: AGGREGATED_SERVICE.name }, spec: { type: "ExternalName", externalName: "127.0.0.1" } },
    });
    const registration = kubeConfig.makeApiClient(ApiregistrationV1Api);
    for (const version of VERSIONS) {
      await registration.createAPIService({
        body: {
          metadata: { name: `${version}.subresources.kubevirt.io` },
          spec: {
            group: "subresources.kubevirt.io",
            version,
            groupPriorityMinimum: 1000,
            versionPriority: 15,
            service: { ...AGGREGATED_SERVICE, port },
            caBundle: servingCa.toString("base64"),
          },
        },
      });
    }
    // The API server proxies to them once its availability check has read virt-api's discovery.
    const available = async (version: string) =>
      (
        await registration.readAPIServiceStatus({ name: `${version}.subresources.kubevirt.io` })
      ).status?.conditions?.find((c) => c.type === "Available")?.status === "True";
    const deadline = Date.now() + 60_000;
    for (const version of VERSIONS) {
      while (!(await available(version))) {
        if (Date.now() > deadline)
          throw new Error(
            `APIService ${version}.subresources.kubevirt.io did not become Available within 60 s; see ` +
              "the test API server's log for its availability check",
          );
        await sleep(500);
      }
    }
  }, 90_000);

  afterAll(async () => {
    const kubeConfig = new KubeConfig();
    kubeConfig.loadFromString(inject("kubeconfig"));
    const registration = kubeConfig.makeApiClient(ApiregistrationV1Api);
    // Whatever beforeAll got to make goes again.
    const gone = (error: unknown) => {
      if ((error as { code?: number }).code !== 404) throw error;
    };
    for (const version of VERSIONS)
      await registration.deleteAPIService({ name: `${version}.subresources.kubevirt.io` }).catch(gone);
    await kubeConfig
      .makeApiClient(CoreV1Api)
      .deleteNamespacedService({ ...AGGREGATED_SERVICE })
      .catch(gone);
  });

  /** An upgrade through the real API server, with a user's token and the API server's CA alone. */
  const throughApiServer = (path: string, token: string) =>
    upgrade(`${apiServer}${path}`, { ca: apiServerCa, headers: { authorization: `Bearer ${token}` } });

  test(
    "answers an allowed user's upgrade through the API server with KubeVirt's Status " +
      "before upgrading: no VMI, not running, no handler",
    async ({ kubeConfig, custom, namespace }) => {
      const { editor, viewer } = await users(kubeConfig, namespace);

      const missing = status(await throughApiServer(vmiPath(namespace, "nothing", "console"), editor));
      expect(missing).toMatchObject({
        code: 404,
        kind: "Status",
        reason: "NotFound",
        message: 'virtualmachineinstance.kubevirt.io "nothing" not found',
        details: { name: "nothing", kind: "virtualmachineinstance" },
      });
      expect(status(await throughApiServer(vmiPath(namespace, "nothing", "vnc", "v1alpha3"), editor))).toMatchObject({
        code: 404,
        reason: "NotFound",
      });

      // The viewer's role has no get on the console: the API server refuses before it passes the request on.
      const refused = status(await throughApiServer(vmiPath(namespace, "nothing", "console"), viewer));
      expect(refused).toMatchObject({ code: 403, reason: "Forbidden" });
      expect(refused.message).toContain(
        'cannot get resource "virtualmachineinstances/console" in API group "subresources.kubevirt.io"',
      );

      const vmis = { group: "kubevirt.io", version: "v1", namespace, plural: "virtualmachineinstances" };
      const vmi = (name: string, vmiStatus: Record<string, unknown>) => ({
        apiVersion: "kubevirt.io/v1",
        kind: "VirtualMachineInstance",
        metadata: { name },
        spec: { domain: { devices: {}, memory: { guest: "64Mi" } } },
        status: vmiStatus,
      });
      await custom.createNamespacedCustomObject({ ...vmis, body: vmi("scheduling", { phase: "Scheduling" }) });
      expect(status(await throughApiServer(vmiPath(namespace, "scheduling", "console"), editor))).toMatchObject({
        code: 409,
        reason: "Conflict",
        message:
          'Operation cannot be fulfilled on virtualmachineinstance.kubevirt.io "scheduling": the VMI is ' +
          "not running (phase Scheduling); wait until it is Running",
      });
      // Running on a node without a ready handler (none runs here): the handler is unavailable.
      await custom.createNamespacedCustomObject({
        ...vmis,
        body: vmi("running", { phase: "Running", nodeName: "node-without-handler" }),
      });
      const unreachable = status(await throughApiServer(vmiPath(namespace, "running", "vnc"), editor));
      expect(unreachable).toMatchObject({ code: 503, reason: "ServiceUnavailable" });
      expect(unreachable.message).toContain("no ready handler runs on node node-without-handler");

      // Port forwards: to a VMI or through its VM, a port and a protocol (tcp when none is named), to a VMI on the pod
      // network.
      const forward = (resource: string, name: string, rest: string) =>
        `/apis/subresources.kubevirt.io/v1/namespaces/${namespace}/${resource}/${name}/portforward/${rest}`;
      expect(
        status(await throughApiServer(forward("virtualmachineinstances", "nothing", "22/tcp"), editor)),
      ).toMatchObject({ code: 404, reason: "NotFound" });
      const viewerRefused = status(await throughApiServer(forward("virtualmachines", "nothing", "22"), viewer));
      expect(viewerRefused).toMatchObject({ code: 403, reason: "Forbidden" });
      expect(viewerRefused.message).toContain(
        'cannot get resource "virtualmachines/portforward" in API group "subresources.kubevirt.io"',
      );
      expect(
        status(await throughApiServer(forward("virtualmachineinstances", "running", "22/udp"), editor)),
      ).toMatchObject({ code: 400, message: "protocol udp is not forwarded yet: only tcp is" });
      expect(
        status(await throughApiServer(forward("virtualmachineinstances", "running", "ssh/tcp"), editor)),
      ).toMatchObject({ code: 400, message: "port ssh is not a port number: give one from 1 to 65535" });
      expect(
        status(await throughApiServer(forward("virtualmachineinstances", "running", "22/tcp"), editor)),
      ).toMatchObject({
        code: 400,
        message: expect.stringContaining("the VMI has no interface on the pod network to forward to") as unknown,
      });
      const onPodNetwork = vmi("on-pod-network", { phase: "Running", nodeName: "node-without-handler" });
      await custom.createNamespacedCustomObject({
        ...vmis,
        body: {
          ...onPodNetwork,
          spec: {
            ...onPodNetwork.spec,
            domain: { ...onPodNetwork.spec.domain, devices: { interfaces: [{ name: "default", masquerade: {} }] } },
            networks: [{ name: "default", pod: {} }],
          },
        },
      });
      const noHandler = status(await throughApiServer(forward("virtualmachines", "on-pod-network", "22"), editor));
      expect(noHandler).toMatchObject({ code: 503, reason: "ServiceUnavailable" });
      expect(noHandler.message).toContain("no ready handler runs on node node-without-handler");
    },
  );

  test(
    "answers guestosinfo, userlist and filesystemlist through the API server " +
      "only for a VMI whose agent is connected",
    async ({ kubeConfig, custom, namespace }) => {
      const { editor, viewer } = await users(kubeConfig, namespace);
      /** A GET through the real API server with a user's token: its status and parsed body. */
      const get = (path: string, token: string, method = "GET", sent?: string) =>
        new Promise<{ code: number; body: { code?: number; message?: string; reason?: string } }>((resolve, reject) => {
          const req = request(
            `${apiServer.replace(/^wss:/, "https:")}${path}`,
            {
              method,
              ca: apiServerCa,
              headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
            },
            (res) => {
              let body = "";
              res
                .setEncoding("utf8")
                .on("data", (c: string) => (body += c))
                .on("end", () => {
                  resolve({ code: res.statusCode ?? 0, body: JSON.parse(body || "{}") as { message?: string } });
                });
            },
          );
          req.on("error", reject).end(sent);
        });
      const vmis = { group: "kubevirt.io", version: "v1", namespace, plural: "virtualmachineinstances" };
      const vmi = (name: string, vmiStatus: Record<string, unknown>) => ({
        apiVersion: "kubevirt.io/v1",
        kind: "VirtualMachineInstance",
        metadata: { name },
        spec: { domain: { devices: {}, memory: { guest: "64Mi" } } },
        status: vmiStatus,
      });
      await custom.createNamespacedCustomObject({
        ...vmis,
        body: vmi("no-agent", { phase: "Running", nodeName: "node-without-handler" }),
      });
      await custom.createNamespacedCustomObject({
        ...vmis,
        body: vmi("agent", {
          phase: "Running",
          nodeName: "node-without-handler",
          conditions: [{ type: "AgentConnected", status: "True" }],
        }),
      });

      expect(await get(vmiPath(namespace, "nothing", "guestosinfo"), editor)).toMatchObject({
        code: 404,
        body: { message: 'virtualmachineinstance.kubevirt.io "nothing" not found' },
      });
      expect(await get(vmiPath(namespace, "no-agent", "userlist"), editor)).toMatchObject({
        code: 409,
        body: {
          reason: "Conflict",
          message:
            'Operation cannot be fulfilled on virtualmachineinstance.kubevirt.io "no-agent": ' +
            "VMI does not have guest agent connected",
        },
      });
      // With the agent connected, the query goes to the handler on the VMI's node, of which there is none here.
      const unreachable = await get(vmiPath(namespace, "agent", "filesystemlist", "v1alpha3"), editor);
      expect(unreachable).toMatchObject({ code: 503, body: { reason: "ServiceUnavailable" } });
      expect(unreachable.body.message).toContain("no ready handler runs on node node-without-handler");
      // freeze and unfreeze ask the same agent: refused without it, and a freeze without its timeout is refused by
      // name.
      expect(
        await get(vmiPath(namespace, "no-agent", "freeze"), editor, "PUT", JSON.stringify({ unfreezeTimeout: "5m" })),
      ).toMatchObject({
        code: 409,
        body: { message: expect.stringContaining("VMI does not have guest agent connected") as unknown },
      });
      expect(await get(vmiPath(namespace, "agent", "freeze"), editor, "PUT", "{}")).toMatchObject({
        code: 400,
        body: { message: expect.stringContaining("Unfreeze timeout must be specified") as unknown },
      });
      expect(
        await get(vmiPath(namespace, "agent", "freeze"), editor, "PUT", JSON.stringify({ unfreezeTimeout: "soon" })),
      ).toMatchObject({
        code: 400,
        body: { message: 'unfreezeTimeout must be a duration such as "5m" or "90s", not "soon"' },
      });
      expect(await get(vmiPath(namespace, "agent", "unfreeze"), editor, "PUT", "{}")).toMatchObject({
        code: 503,
        body: { reason: "ServiceUnavailable" },
      });
      // The harness's viewer has no get on these subresources: the API server refuses it first.
      expect(await get(vmiPath(namespace, "agent", "guestosinfo"), viewer)).toMatchObject({
        code: 403,
        body: { reason: "Forbidden" },
      });
    },
  );

  test("authorizes the user the front proxy names, and answers no one else", async ({ kubeConfig, namespace }) => {
    await users(kubeConfig, namespace);
    const direct = (path: string, options: ClientOptions & ConnectionOptions = {}, protocols?: string[]) =>
      upgrade(`wss://127.0.0.1:${String(port)}${path}`, { ca: servingCa, ...options }, protocols);
    const path = vmiPath(namespace, "nothing", "console");

    // No front proxy certificate: 401, whatever the headers say.
    const nobody = status(
      await direct(path, { headers: { "X-Remote-User": "system:admin", "X-Remote-Group": "system:masters" } }),
    );
    expect(nobody).toMatchObject({
      code: 401,
      reason: "Unauthorized",
      message: expect.stringContaining("no client certificate of the API server's front proxy") as unknown,
    });
    expect(status(await direct(path, { ...strangerTls, headers: { "X-Remote-User": "system:admin" } }))).toMatchObject({
      code: 401,
      message: expect.stringContaining("not signed by the requestheader CA") as unknown,
    });
    expect(status(await direct(path, proxyTls))).toMatchObject({
      code: 401,
      message: "a valid user header is required for authorization",
    });

    // The front proxy naming a user who may not: virt-api's own SubjectAccessReview refuses, in the API server's words.
    const viewer = `system:serviceaccount:${namespace}:viewer`;
    // (One header of groups, comma-separated, as HTTP allows for repeated headers; ws sends each header once.)
    const forbidden = status(
      await direct(path, {
        ...proxyTls,
        headers: { "X-Remote-User": viewer, "X-Remote-Group": "system:serviceaccounts,system:authenticated" },
      }),
    );
    expect(forbidden).toMatchObject({ code: 403, reason: "Forbidden" });
    expect(forbidden.message).toContain(
      `User "${viewer}" cannot get resource "virtualmachineinstances/console" in API group ` +
        `"subresources.kubevirt.io" in the namespace "${namespace}"`,
    );

    // A client that offers no subprotocol is answered too (here with the same Status), and a plain GET is told to
    // upgrade.
    const editor = {
      ...proxyTls,
      headers: {
        "X-Remote-User": `system:serviceaccount:${namespace}:editor`,
        "X-Remote-Group": "system:serviceaccounts,system:authenticated",
      },
    };
    expect(status(await direct(path, editor, []))).toMatchObject({ code: 404, reason: "NotFound" });
    const plain = await call("GET", path, editor);
    expect(plain.code).toBe(400);
    expect(JSON.parse(plain.body)).toMatchObject({
      kind: "Status",
      reason: "BadRequest",
      message: expect.stringContaining("is a websocket") as unknown,
    });
    // Other upgrades on this listener are not served.
    expect(
      await direct(
        `/apis/subresources.kubevirt.io/v1/namespaces/${namespace}/virtualmachineinstances/nothing/portforward`,
        editor,
      ),
    ).toMatchObject({ open: false, code: 404 });
  });
});
