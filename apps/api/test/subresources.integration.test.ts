import { once } from "node:events";
import { readFile } from "node:fs/promises";
import { request } from "node:https";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { KubeConfig } from "@kubernetes/client-node";
import { test, tlsSecretDir } from "@kubevirt-ts/control-plane/testing";
import { KubeClient } from "@kubevirt-ts/kube";
import { createLogger } from "@kubevirt-ts/runtime";
import { afterAll, beforeAll, describe, expect, inject } from "vitest";
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
// API server. (The whole path through the API server's aggregation layer is
// e2e/cluster/subresources.test.ts.)

let url = "";
let stop: () => Promise<void> = () => Promise.resolve();
let proxyTls: { cert: Buffer; key: Buffer };
let strangerTls: { cert: Buffer; key: Buffer };

beforeAll(async () => {
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromString(inject("kubeconfig"));
  const own = await KubeClient.fromKubeConfig(kubeConfig);
  const log = createLogger({ component: "subresources-test", level: "error" });
  // A serving certificate of a CA of the test's own (the API server checks the APIService's caBundle; this client does not).
  const serving = await tlsSecretDir("virt-api", "server", ["127.0.0.1"]);
  // A client certificate with the front proxy's name from another CA: not the front proxy.
  const stranger = await tlsSecretDir("front-proxy-client", "client");
  strangerTls = { cert: await readFile(join(stranger, "tls.crt")), key: await readFile(join(stranger, "tls.key")) };
  proxyTls = { cert: await readFile(inject("frontProxyClient").cert), key: await readFile(inject("frontProxyClient").key) };
  const empty = Buffer.alloc(0);
  const handlers = new HandlerDialer({ own, namespace: "kubevirt-ts", port: 8186, tls: { ca: empty, cert: empty, key: empty } });
  const server = createWebhookServer({ cert: await readFile(join(serving, "tls.crt")), key: await readFile(join(serving, "tls.key")) }, log, createSubresourceApi({ own, handlers, frontProxy: new FrontProxy(own), log, version: "test" }));
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  url = `https://127.0.0.1:${String((server.address() as AddressInfo).port)}`;
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

function call(method: string, path: string, options: { tls?: { cert: Buffer; key: Buffer }; headers?: Record<string, string | string[]>; body?: string } = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(`${url}${path}`, { method, rejectUnauthorized: false, ...options.tls, headers: options.headers }, (res) => {
      let body = "";
      res.setEncoding("utf8").on("data", (c: string) => (body += c)).on("end", () => { resolve({ code: res.statusCode ?? 0, body }); });
    });
    req.on("error", reject);
    req.end(options.body);
  });
}

const as = (user: string) => ({ tls: proxyTls, headers: { "X-Remote-User": user, "X-Remote-Group": ["system:serviceaccounts", "system:authenticated"] } });
const vmPath = (namespace: string, name: string, sub: string, version = "v1") => `/apis/subresources.kubevirt.io/${version}/namespaces/${namespace}/virtualmachines/${name}/${sub}`;

describe("the subresource API", () => {
  test("lists its subresources, and tells its version, to anyone (the API server's availability check)", async () => {
    for (const version of ["v1", "v1alpha3"]) {
      const discovery = await call("GET", `/apis/subresources.kubevirt.io/${version}`);
      expect(discovery.code).toBe(200);
      const list = JSON.parse(discovery.body) as { kind: string; groupVersion: string; resources: { name: string }[] };
      expect(list.kind).toBe("APIResourceList");
      expect(list.groupVersion).toBe(`subresources.kubevirt.io/${version}`);
      expect(list.resources.map((r) => r.name)).toEqual(expect.arrayContaining(["virtualmachines/start", "virtualmachines/stop", "virtualmachines/restart", "virtualmachineinstances/pause", "virtualmachineinstances/unpause"]));
    }
    expect(JSON.parse((await call("GET", "/apis/subresources.kubevirt.io/v1/version")).body)).toMatchObject({ gitVersion: "test" });
  });

  test("answers only the API server's front proxy, and only for a named user", async ({ namespace }) => {
    const path = vmPath(namespace, "vm", "start");
    const nobody = await call("PUT", path, { headers: { "X-Remote-User": "system:admin", "X-Remote-Group": "system:masters" } });
    expect(nobody.code).toBe(401);
    expect(nobody.body).toContain("no client certificate of the API server's front proxy");
    const stranger = await call("PUT", path, { tls: strangerTls, headers: { "X-Remote-User": "system:admin", "X-Remote-Group": "system:masters" } });
    expect(stranger.code).toBe(401);
    expect(stranger.body).toContain("not signed by the requestheader CA");
    const anonymous = await call("PUT", path, { tls: proxyTls });
    expect(anonymous.code).toBe(401);
    expect(anonymous.body).toContain("a valid user header is required for authorization");
  });

  test("starts and stops a VM for a user who may, refuses one who may not, and says why in KubeVirt's words", async ({ kubeConfig, custom, namespace }) => {
    await users(kubeConfig, namespace);
    const { RbacAuthorizationV1Api } = await import("@kubernetes/client-node");
    const rbac = kubeConfig.makeApiClient(RbacAuthorizationV1Api);
    // The editor may use the lifecycle subresources, as KubeVirt's edit role allows.
    await rbac.createNamespacedRole({ namespace, body: { metadata: { name: "lifecycle" }, rules: [{ apiGroups: ["subresources.kubevirt.io"], resources: ["virtualmachines/start", "virtualmachines/stop", "virtualmachines/restart"], verbs: ["update"] }] } });
    await rbac.createNamespacedRoleBinding({ namespace, body: { metadata: { name: "lifecycle" }, roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "lifecycle" }, subjects: [{ kind: "ServiceAccount", name: "editor", namespace }] } });
    const vms = { group: "kubevirt.io", version: "v1", namespace, plural: "virtualmachines" };
    const body = (name: string, runStrategy: string) => ({
      apiVersion: "kubevirt.io/v1", kind: "VirtualMachine", metadata: { name },
      spec: { runStrategy, template: { spec: { domain: { devices: {}, memory: { guest: "64Mi" } } } } },
    });
    await custom.createNamespacedCustomObject({ ...vms, body: body("halted", "Halted") });
    await custom.createNamespacedCustomObject({ ...vms, body: body("manual", "Manual") });
    const editor = as(`system:serviceaccount:${namespace}:editor`);
    const viewer = as(`system:serviceaccount:${namespace}:viewer`);

    const refused = await call("PUT", vmPath(namespace, "halted", "start"), viewer);
    expect(refused.code).toBe(403);
    expect(JSON.parse(refused.body)).toMatchObject({ kind: "Status", reason: "Forbidden", message: expect.stringContaining(`cannot update resource "virtualmachines/start" in API group "subresources.kubevirt.io"`) as unknown });
    expect(((await custom.getNamespacedCustomObject({ ...vms, name: "halted" })) as { spec: { runStrategy: string } }).spec.runStrategy).toBe("Halted");

    // A dry run checks and changes nothing.
    expect((await call("PUT", vmPath(namespace, "halted", "start"), { ...editor, body: JSON.stringify({ dryRun: ["All"] }) })).code).toBe(202);
    expect(((await custom.getNamespacedCustomObject({ ...vms, name: "halted" })) as { spec: { runStrategy: string } }).spec.runStrategy).toBe("Halted");

    expect((await call("PUT", vmPath(namespace, "halted", "start", "v1alpha3"), editor)).code).toBe(202);
    expect(((await custom.getNamespacedCustomObject({ ...vms, name: "halted" })) as { spec: { runStrategy: string } }).spec.runStrategy).toBe("Always");
    const again = await call("PUT", vmPath(namespace, "halted", "start"), editor);
    expect(again.code).toBe(409);
    expect(JSON.parse(again.body)).toMatchObject({ reason: "Conflict", message: 'Operation cannot be fulfilled on virtualmachine.kubevirt.io "halted": Always does not support manual start requests' });
    expect((await call("PUT", vmPath(namespace, "halted", "stop"), editor)).code).toBe(202);
    expect(((await custom.getNamespacedCustomObject({ ...vms, name: "halted" })) as { spec: { runStrategy: string } }).spec.runStrategy).toBe("Halted");

    // A Manual VM starts by a request in its status, which the user could not write: the API's own account does, for them.
    expect((await call("PUT", vmPath(namespace, "manual", "start"), editor)).code).toBe(202);
    const manual = (await custom.getNamespacedCustomObject({ ...vms, name: "manual" })) as { spec: { runStrategy: string }; status?: { stateChangeRequests?: unknown[] } };
    expect(manual.spec.runStrategy).toBe("Manual");
    expect(manual.status?.stateChangeRequests).toEqual([{ action: "Start" }]);
    const stopped = await call("PUT", vmPath(namespace, "manual", "stop"), editor);
    expect(stopped.code).toBe(409);
    expect((JSON.parse(stopped.body) as { message: string }).message).toBe('Operation cannot be fulfilled on virtualmachine.kubevirt.io "manual": VM is not running');

    const missing = await call("PUT", vmPath(namespace, "nothing", "restart"), editor);
    expect(missing.code).toBe(404);
    expect((JSON.parse(missing.body) as { message: string }).message).toBe('virtualmachine.kubevirt.io "nothing" not found');
  });
});
