import { once } from "node:events";
import { readFile } from "node:fs/promises";
import type { Server } from "node:http";
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { KubeConfig } from "@kubernetes/client-node";
import { Pki } from "@kubevirt-ts/control-plane";
import { test } from "@kubevirt-ts/control-plane/testing";
import { KubeClient } from "@kubevirt-ts/kube";
import { createLogger } from "@kubevirt-ts/runtime";
import { TRPCClientError, createTRPCClient, httpLink } from "@trpc/client";
import { afterAll, beforeAll, describe, expect, inject } from "vitest";
import { HandlerDialer } from "../src/handler-dialer.ts";
import { createApiServer, createWebhookServer } from "../src/server.ts";
import type { AppRouter } from "../src/trpc/router.ts";

// The API against a real API server, acting as two real users (service
// accounts with tokens): an editor and a viewer of one namespace. Nothing is
// done with the API's own account but finding handlers.

let server: Server;
let url: string;
const log = createLogger({ component: "api-test", level: "error" });

beforeAll(async () => {
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromString(inject("kubeconfig"));
  const own = await KubeClient.fromKubeConfig(kubeConfig);
  const empty = Buffer.alloc(0);
  server = createApiServer({ own, handlers: new HandlerDialer({ own, namespace: "kubevirt-ts", port: 8186, tls: { ca: empty, cert: empty, key: empty } }), guestImages: [{ name: "debian-12", image: "example/debian:12", description: "Debian", boot: "disk" }], log });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const address = server.address();
  url = `http://127.0.0.1:${String(typeof address === "object" && address ? address.port : 0)}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

function clientFor(token?: string) {
  return createTRPCClient<AppRouter>({ links: [httpLink({ url: `${url}/trpc`, headers: token ? { authorization: `Bearer ${token}` } : {} })] });
}

interface Users {
  editor: string;
  viewer: string;
}

/** Two service accounts with tokens, allowed in the namespace what KubeVirt's edit and view roles allow. */
async function users(kubeConfig: KubeConfig, namespace: string): Promise<Users> {
  const { CoreV1Api, RbacAuthorizationV1Api } = await import("@kubernetes/client-node");
  const core = kubeConfig.makeApiClient(CoreV1Api);
  const rbac = kubeConfig.makeApiClient(RbacAuthorizationV1Api);
  const rules = {
    editor: [
      { apiGroups: ["kubevirt.io"], resources: ["virtualmachines", "virtualmachineinstances"], verbs: ["get", "list", "watch", "create", "update", "patch", "delete"] },
      { apiGroups: ["subresources.kubevirt.io"], resources: ["virtualmachineinstances/console", "virtualmachineinstances/vnc"], verbs: ["get"] },
      { apiGroups: [""], resources: ["events"], verbs: ["list"] },
    ],
    viewer: [{ apiGroups: ["kubevirt.io"], resources: ["virtualmachines", "virtualmachineinstances"], verbs: ["get", "list", "watch"] }],
  };
  const tokens: Record<string, string> = {};
  for (const [name, roleRules] of Object.entries(rules)) {
    await core.createNamespacedServiceAccount({ namespace, body: { metadata: { name } } });
    await rbac.createNamespacedRole({ namespace, body: { metadata: { name }, rules: roleRules } });
    await rbac.createNamespacedRoleBinding({ namespace, body: { metadata: { name }, roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name }, subjects: [{ kind: "ServiceAccount", name, namespace }] } });
    const request = await core.createNamespacedServiceAccountToken({ namespace, name, body: { spec: { audiences: [], expirationSeconds: 3600 } } });
    tokens[name] = request.status?.token ?? "";
  }
  return tokens as unknown as Users;
}

const vm = (name: string, runStrategy = "Halted") => ({
  apiVersion: "kubevirt.io/v1",
  kind: "VirtualMachine",
  metadata: { name },
  spec: {
    runStrategy,
    template: { spec: { domain: { memory: { guest: "128Mi" }, devices: { disks: [{ name: "root", disk: { bus: "virtio" } }] } }, volumes: [{ name: "root", containerDisk: { image: "example/debian:12" } }] } },
  },
});

async function failure(promise: Promise<unknown>): Promise<{ code: string | undefined; message: string; causes: unknown }> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof TRPCClientError) {
      const data = error.data as { code?: string; causes?: unknown } | undefined;
      return { code: data?.code, message: error.message, causes: data?.causes };
    }
    throw error;
  }
  throw new Error("it succeeded");
}

describe("the tRPC API, as the signed-in user", () => {
  test("refuses a caller without a token, saying to sign in", async ({ namespace }) => {
    expect(await failure(clientFor().vms.list.query({ namespace }))).toMatchObject({ code: "UNAUTHORIZED", message: "Sign in with a Kubernetes bearer token first." });
    expect(await failure(clientFor("not-a-token").vms.list.query({ namespace }))).toMatchObject({ code: "UNAUTHORIZED", message: expect.stringContaining("sign in again") as unknown });
  });

  test("lets an editor create, list, start and delete VMs, and refuses the viewer what its role lacks", async ({ kubeConfig, namespace }) => {
    const { editor, viewer } = await users(kubeConfig, namespace);
    const asEditor = clientFor(editor);
    const asViewer = clientFor(viewer);
    expect((await asEditor.whoami.query()).username).toBe(`system:serviceaccount:${namespace}:editor`);

    await asEditor.vms.create.mutate({ namespace, vm: vm("web-1") });
    expect((await asViewer.vms.list.query({ namespace })).map((v) => v.metadata.name)).toEqual(["web-1"]);
    expect(await failure(asViewer.vms.create.mutate({ namespace, vm: vm("web-2") }))).toMatchObject({ code: "FORBIDDEN", message: expect.stringContaining("cannot create resource \"virtualmachines\"") as unknown });

    await asEditor.vms.start.mutate({ namespace, name: "web-1" });
    expect((await asViewer.vms.get.query({ namespace, name: "web-1" })).spec.runStrategy).toBe("Always");
    expect(await failure(asViewer.vms.stop.mutate({ namespace, name: "web-1" }))).toMatchObject({ code: "FORBIDDEN" });
    expect(await failure(asEditor.vms.restart.mutate({ namespace, name: "web-1" }))).toMatchObject({ code: "CONFLICT", message: "Cannot restart web-1: the VM is not running; start it instead." });

    await asEditor.vms.delete.mutate({ namespace, name: "web-1" });
    await expect.poll(async () => (await asViewer.vms.list.query({ namespace })).length).toBe(0);
  });

  test("refuses an invalid VM before it reaches the cluster, with causes naming the fields", async ({ kubeConfig, namespace }) => {
    const { editor } = await users(kubeConfig, namespace);
    const bad = vm("bad");
    bad.spec.template.spec.domain.memory.guest = "-1Gi";
    const refused = await failure(clientFor(editor).vms.create.mutate({ namespace, vm: bad }));
    expect(refused.code).toBe("BAD_REQUEST");
    expect(refused.causes).toEqual([expect.objectContaining({ field: "spec.template.spec.domain.memory.guest" })]);
  });

  test("tells each user which actions they may take, and why not", async ({ kubeConfig, namespace }) => {
    const { editor, viewer } = await users(kubeConfig, namespace);
    const mine = await clientFor(editor).permissions.query({ namespace });
    expect(mine.create.allowed && mine.console.allowed && mine.start.allowed).toBe(true);
    const theirs = await clientFor(viewer).permissions.query({ namespace });
    expect(theirs.list.allowed).toBe(true);
    expect(theirs.create).toEqual({ allowed: false, reason: `You may not create VMs in ${namespace}: it takes create on virtualmachines (kubevirt.io).` });
    expect(theirs.console).toEqual({ allowed: false, reason: `You may not open the serial console of VMs in ${namespace}: it takes get on virtualmachineinstances/console (subresources.kubevirt.io).` });
  });

  test("streams VMs as list-then-watch over SSE, resumable from the last event's resourceVersion", async ({ kubeConfig, namespace }) => {
    const { editor } = await users(kubeConfig, namespace);
    const asEditor = clientFor(editor);
    await asEditor.vms.create.mutate({ namespace, vm: vm("first") });
    const events = sse(`${url}/trpc/vms.watch?input=${encodeURIComponent(JSON.stringify({ namespace }))}&connectionParams=${encodeURIComponent(JSON.stringify({ token: editor }))}`);
    await expect.poll(() => events.received().map((e) => e.type)).toEqual(["LIST"]);
    expect(events.received()[0]?.names).toEqual(["first"]);
    const listedAt = events.received()[0]?.id ?? "";
    await asEditor.vms.create.mutate({ namespace, vm: vm("second") });
    await expect.poll(() => events.received().map((e) => `${e.type} ${e.names.join()}`)).toContain("ADDED second");
    events.close();

    // Resumed from the list's version: no new list, the change since then.
    const resumed = sse(`${url}/trpc/vms.watch?input=${encodeURIComponent(JSON.stringify({ namespace, lastEventId: listedAt }))}&connectionParams=${encodeURIComponent(JSON.stringify({ token: editor }))}`);
    await expect.poll(() => resumed.received().map((e) => `${e.type} ${e.names.join()}`)).toEqual(["ADDED second"]);
    resumed.close();
  });
});

/** A raw SSE reader of tRPC's subscription stream. */
function sse(address: string) {
  const controller = new AbortController();
  const events: { id: string; type: string; names: string[] }[] = [];
  void (async () => {
    const res = await fetch(address, { signal: controller.signal, headers: { accept: "text/event-stream" } });
    const decoder = new TextDecoder();
    let buffer = "";
    for await (const chunk of res.body ?? []) {
      buffer += decoder.decode(chunk as Uint8Array, { stream: true });
      let end = buffer.indexOf("\n\n");
      while (end >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const id = /^id: ?(.*)$/m.exec(block)?.[1] ?? "";
        const data = /^data: ?(.*)$/m.exec(block)?.[1];
        if (data && id) {
          const message = JSON.parse(data) as { type: string; items?: { metadata: { name: string } }[]; object?: { metadata: { name: string } } };
          events.push({ id, type: message.type, names: message.items?.map((i) => i.metadata.name) ?? [message.object?.metadata.name ?? ""] });
        }
        end = buffer.indexOf("\n\n");
      }
    }
  })().catch(() => undefined);
  return { received: () => events, close: () => { controller.abort(); } };
}

describe("the admission webhooks, registered with the real API server", () => {
  test("refuse an invalid VM with its causes and default a valid one", async ({ kubeConfig, namespace }) => {
    const dir = await mkdtemp(join(tmpdir(), "webhook-tls-"));
    const pki = new Pki(dir);
    await pki.createCa("webhook-ca");
    const pair = await pki.issue({ name: "webhook", commonName: "127.0.0.1", usage: "server", hosts: ["127.0.0.1"] });
    const webhooks = createWebhookServer({ cert: await readFile(pair.cert), key: await readFile(pair.key) }, log);
    webhooks.listen(0, "127.0.0.1");
    await once(webhooks, "listening");
    const address = webhooks.address();
    const port = typeof address === "object" && address ? address.port : 0;
    const { AdmissionregistrationV1Api, CustomObjectsApi } = await import("@kubernetes/client-node");
    const admission = kubeConfig.makeApiClient(AdmissionregistrationV1Api);
    const caBundle = (await readFile(pki.ca.cert)).toString("base64");
    const hook = (verb: string) => ({
      name: `${verb}-virtualmachines.kubevirt-ts.io`,
      admissionReviewVersions: ["v1"],
      sideEffects: "None",
      failurePolicy: "Fail",
      clientConfig: { url: `https://127.0.0.1:${String(port)}/${verb}-virtualmachines`, caBundle },
      namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": namespace } },
      rules: [{ apiGroups: ["kubevirt.io"], apiVersions: ["v1"], operations: ["CREATE", "UPDATE"], resources: ["virtualmachines"] }],
    });
    await admission.createValidatingWebhookConfiguration({ body: { metadata: { name: namespace }, webhooks: [hook("validate")] } });
    await admission.createMutatingWebhookConfiguration({ body: { metadata: { name: namespace }, webhooks: [hook("mutate")] } });
    try {
      const custom = kubeConfig.makeApiClient(CustomObjectsApi);
      const create = (body: unknown) => custom.createNamespacedCustomObject({ group: "kubevirt.io", version: "v1", namespace, plural: "virtualmachines", body });
      const bad = vm("bad");
      bad.spec.template.spec.volumes = [];
      const refusal = await create(bad).then(() => "created", (e: unknown) => String((e as { body?: string }).body));
      expect(refusal).toContain("spec.template.spec.domain.devices.disks[0].name");
      expect(JSON.parse(refusal)).toMatchObject({ code: 422, details: { causes: [{ field: "spec.template.spec.domain.devices.disks[0].name" }] } });

      const plain = vm("plain");
      plain.spec.template.spec.domain.devices.disks[0] = { name: "root", disk: {} } as never;
      const created = (await create(plain)) as { spec: { template: { spec: { domain: { devices: { disks: { disk: { bus: string } }[] } } } } } };
      expect(created.spec.template.spec.domain.devices.disks[0]?.disk.bus).toBe("sata");
    } finally {
      await admission.deleteValidatingWebhookConfiguration({ name: namespace });
      await admission.deleteMutatingWebhookConfiguration({ name: namespace });
      webhooks.close();
    }
  });
});
