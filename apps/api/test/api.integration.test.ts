import { AppsV1Api, CoreV1Api, KubeConfig, RbacAuthorizationV1Api } from "@kubernetes/client-node";
import { test } from "@kubevirt-ts/control-plane/testing";
import { createLogger } from "@kubevirt-ts/runtime";
import { TRPCClientError, createTRPCClient, httpLink } from "@trpc/client";
import { afterAll, beforeAll, describe, expect } from "vitest";
import type { AppRouter } from "../src/trpc/router.ts";
import { type StartedApi, grant, startApi, startWebhooks, users } from "./harness.ts";

// The API against a real API server, acting as two real users (service
// accounts with tokens): an editor and a viewer of one namespace. Nothing is
// done with the API's own account but finding handlers.

let api: StartedApi;
let url: string;
const log = createLogger({ component: "api-test", level: "error" });

beforeAll(async () => {
  api = await startApi(log);
  url = api.url;
});

afterAll(() => api.stop());

function clientFor(token?: string) {
  return createTRPCClient<AppRouter>({
    links: [httpLink({ url: `${url}/trpc`, headers: token ? { authorization: `Bearer ${token}` } : {} })],
  });
}

const vm = (name: string, runStrategy = "Halted") => ({
  apiVersion: "kubevirt.io/v1",
  kind: "VirtualMachine",
  metadata: { name },
  spec: {
    runStrategy,
    template: {
      spec: {
        domain: { memory: { guest: "128Mi" }, devices: { disks: [{ name: "root", disk: { bus: "virtio" } }] } },
        volumes: [{ name: "root", containerDisk: { image: "example/debian:12" } }],
      },
    },
  },
});

async function failure(
  promise: Promise<unknown>,
): Promise<{ code: string | undefined; message: string; causes: unknown }> {
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
    expect(await failure(clientFor().vms.list.query({ namespace }))).toMatchObject({
      code: "UNAUTHORIZED",
      message: "Sign in with a Kubernetes bearer token first.",
    });
    expect(await failure(clientFor("not-a-token").vms.list.query({ namespace }))).toMatchObject({
      code: "UNAUTHORIZED",
      message: expect.stringContaining("sign in again") as unknown,
    });
  });

  test(
    "infers a new VM's instancetype from its disk's claim as the user, and " +
      "refuses one the claim names nothing for",
    async ({ kubeConfig, namespace }) => {
      const { editor } = await users(kubeConfig, namespace);
      const core = kubeConfig.makeApiClient(CoreV1Api);
      const claim = (name: string, labels: Record<string, string>) =>
        core.createNamespacedPersistentVolumeClaim({
          namespace,
          body: {
            metadata: { name, labels },
            spec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "1Gi" } } },
          },
        });
      await claim("golden", { "instancetype.kubevirt.io/default-instancetype": "u1.small" });
      await claim("plain", {});
      const onClaim = (name: string, claimName: string, policy?: string) => {
        const base = vm(name);
        return {
          ...base,
          spec: {
            ...base.spec,
            instancetype: { inferFromVolume: "root", ...(policy ? { inferFromVolumeFailurePolicy: policy } : {}) },
            template: {
              spec: { ...base.spec.template.spec, volumes: [{ name: "root", persistentVolumeClaim: { claimName } }] },
            },
          },
        };
      };
      const created = await clientFor(editor).vms.create.mutate({
        namespace,
        vm: onClaim("inferred", "golden", "Ignore"),
      });
      expect(created.spec.instancetype).toEqual({ name: "u1.small" });
      expect(created.spec.template.spec.domain.memory).toBeUndefined();
      expect(
        await failure(clientFor(editor).vms.create.mutate({ namespace, vm: onClaim("not-inferred", "plain") })),
      ).toMatchObject({
        causes: [
          {
            field: "spec.instancetype.inferFromVolume",
            message: expect.stringContaining("has no instancetype.kubevirt.io/default-instancetype label") as unknown,
          },
        ],
      });
    },
  );

  test("lets an editor create, list, start and delete VMs, and refuses the viewer what its role lacks", async ({
    kubeConfig,
    namespace,
  }) => {
    const { editor, viewer } = await users(kubeConfig, namespace);
    const asEditor = clientFor(editor);
    const asViewer = clientFor(viewer);
    expect((await asEditor.whoami.query()).username).toBe(`system:serviceaccount:${namespace}:editor`);

    await asEditor.vms.create.mutate({ namespace, vm: vm("web-1") });
    expect((await asViewer.vms.list.query({ namespace })).map((v) => v.metadata.name)).toEqual(["web-1"]);
    expect(await failure(asViewer.vms.create.mutate({ namespace, vm: vm("web-2") }))).toMatchObject({
      code: "FORBIDDEN",
      message: expect.stringContaining('cannot create resource "virtualmachines"') as unknown,
    });

    await asEditor.vms.start.mutate({ namespace, name: "web-1" });
    expect((await asViewer.vms.get.query({ namespace, name: "web-1" })).spec.runStrategy).toBe("Always");
    expect(await failure(asViewer.vms.stop.mutate({ namespace, name: "web-1" }))).toMatchObject({
      code: "FORBIDDEN",
      message:
        `You may not stop web-1 in ${namespace}: it takes update on ` +
        "virtualmachines/stop (subresources.kubevirt.io).",
    });
    expect(await failure(asEditor.vms.restart.mutate({ namespace, name: "web-1" }))).toMatchObject({
      code: "CONFLICT",
      message: 'Operation cannot be fulfilled on virtualmachine.kubevirt.io "web-1": VM is not running: Halted',
    });

    await asEditor.vms.delete.mutate({ namespace, name: "web-1" });
    await expect.poll(async () => (await asViewer.vms.list.query({ namespace })).length).toBe(0);
  });

  test("keeps an editor's cloud-init password in a Secret owned by the VM, out of the spec the viewer reads", async ({
    kubeConfig,
    core,
    namespace,
  }) => {
    const { editor, viewer } = await users(kubeConfig, namespace);
    const withSecret = (name: string) => {
      const object = vm(name);
      object.spec.template.spec.volumes.push({
        name: "cloudinit",
        cloudInitNoCloud: { secretRef: { name: `${name}-cloud-init` } },
      } as never);
      return object;
    };
    const userData = '#cloud-config\nusers:\n  - name: "ops"\n    plain_text_passwd: "s3cret-pw"\n';
    const created = await clientFor(editor).vms.create.mutate({
      namespace,
      vm: withSecret("web-1"),
      cloudInitUserData: userData,
    });

    const seen = await clientFor(viewer).vms.get.query({ namespace, name: "web-1" });
    expect(seen.spec.template.spec.volumes).toContainEqual({
      name: "cloudinit",
      cloudInitNoCloud: { secretRef: { name: "web-1-cloud-init" } },
    });
    expect(JSON.stringify(seen)).not.toContain("s3cret-pw");
    const secret = await core.readNamespacedSecret({ namespace, name: "web-1-cloud-init" });
    expect(Buffer.from(secret.data?.userdata ?? "", "base64").toString()).toBe(userData);
    expect(secret.metadata?.ownerReferences).toEqual([
      { apiVersion: "kubevirt.io/v1", kind: "VirtualMachine", name: "web-1", uid: created.metadata.uid },
    ]);
    // The viewer may not read it.
    const viewerConfig = new KubeConfig();
    const cluster = kubeConfig.getCurrentCluster();
    if (!cluster) throw new Error("no cluster in the test kubeconfig");
    viewerConfig.loadFromClusterAndUser(cluster, { name: "viewer", token: viewer });
    await expect(
      viewerConfig.makeApiClient(CoreV1Api).readNamespacedSecret({ namespace, name: "web-1-cloud-init" }),
    ).rejects.toMatchObject({ code: 403 });

    // A Secret of that name already there: refused, and the VM is not left behind without its data.
    await core.createNamespacedSecret({
      namespace,
      body: { metadata: { name: "web-2-cloud-init" }, stringData: { userdata: "#cloud-config\n" } },
    });
    expect(
      await failure(
        clientFor(editor).vms.create.mutate({ namespace, vm: withSecret("web-2"), cloudInitUserData: userData }),
      ),
    ).toMatchObject({
      code: "CONFLICT",
      message: expect.stringContaining('secrets "web-2-cloud-init" already exists') as unknown,
    });
    await expect
      .poll(async () => (await clientFor(viewer).vms.list.query({ namespace })).map((v) => v.metadata.name))
      .toEqual(["web-1"]);

    // User data but no volume to name its Secret: refused, naming the field.
    expect(
      await failure(clientFor(editor).vms.create.mutate({ namespace, vm: vm("web-3"), cloudInitUserData: userData })),
    ).toMatchObject({
      code: "BAD_REQUEST",
      causes: [expect.objectContaining({ field: "spec.template.spec.volumes" })],
    });
  });

  test("tells a user who may create VMs but not Secrets why the password cannot be kept, and creates nothing", async ({
    kubeConfig,
    core,
    namespace,
  }) => {
    const rbac = kubeConfig.makeApiClient(RbacAuthorizationV1Api);
    await core.createNamespacedServiceAccount({ namespace, body: { metadata: { name: "vms-only" } } });
    await rbac.createNamespacedRole({
      namespace,
      body: {
        metadata: { name: "vms-only" },
        rules: [{ apiGroups: ["kubevirt.io"], resources: ["virtualmachines"], verbs: ["get", "list", "create"] }],
      },
    });
    await rbac.createNamespacedRoleBinding({
      namespace,
      body: {
        metadata: { name: "vms-only" },
        roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "Role", name: "vms-only" },
        subjects: [{ kind: "ServiceAccount", name: "vms-only", namespace }],
      },
    });
    const token =
      (
        await core.createNamespacedServiceAccountToken({
          namespace,
          name: "vms-only",
          body: { spec: { audiences: [], expirationSeconds: 600 } },
        })
      ).status?.token ?? "";
    const object = vm("web-1");
    object.spec.template.spec.volumes.push({
      name: "cloudinit",
      cloudInitNoCloud: { secretRef: { name: "web-1-cloud-init" } },
    } as never);
    expect(
      await failure(
        clientFor(token).vms.create.mutate({ namespace, vm: object, cloudInitUserData: "#cloud-config\n" }),
      ),
    ).toMatchObject({
      code: "FORBIDDEN",
      message:
        `You may not create Secrets in ${namespace}: it takes create on secrets (core). The password or ` +
        "SSH key is kept in a Secret of the VM, out of sight of those who may only view VMs; ask for the " +
        `edit role in ${namespace}, or create the VM without them.`,
    });
    expect((await clientFor(token).vms.list.query({ namespace })).length).toBe(0);
  });

  test("refuses an invalid VM before it reaches the cluster, with causes naming the fields", async ({
    kubeConfig,
    namespace,
  }) => {
    const { editor } = await users(kubeConfig, namespace);
    const bad = vm("bad");
    bad.spec.template.spec.domain.memory.guest = "-1Gi";
    const refused = await failure(clientFor(editor).vms.create.mutate({ namespace, vm: bad }));
    expect(refused.code).toBe("BAD_REQUEST");
    expect(refused.causes).toEqual([expect.objectContaining({ field: "spec.template.spec.domain.memory.guest" })]);
  });

  test("refuses what the VM's state or spec does not allow now, saying why, and tells it with the permissions", async ({
    kubeConfig,
    namespace,
  }) => {
    const { editor, viewer } = await users(kubeConfig, namespace);
    const asEditor = clientFor(editor);
    await asEditor.vms.create.mutate({ namespace, vm: vm("web-1") });
    await asEditor.vms.create.mutate({ namespace, vm: vm("manual-1", "Manual") });

    // Stopped: it may start, not stop, pause or be consoled; in KubeVirt's words, as kubectl and virtctl users read
    // them.
    const stopped = await asEditor.permissions.query({ namespace, name: "web-1" });
    expect(stopped.start).toEqual({ allowed: true, state: { available: true } });
    expect(stopped.stop).toEqual({
      allowed: true,
      state: { available: false, by: "state", reason: "VM is not running" },
    });
    expect(stopped.console).toEqual({
      allowed: true,
      state: { available: false, by: "state", reason: "the VM is not running; start it and try again" },
    });
    expect(stopped.create).toEqual({ allowed: true });
    expect(await failure(asEditor.vms.stop.mutate({ namespace, name: "web-1" }))).toMatchObject({
      code: "CONFLICT",
      message: 'Operation cannot be fulfilled on virtualmachine.kubevirt.io "web-1": VM is not running',
    });
    expect(stopped.pause.state).toEqual({
      available: false,
      by: "state",
      reason: "the VM is not running; start it first",
    });
    expect(await failure(asEditor.vms.restart.mutate({ namespace, name: "web-1" }))).toMatchObject({
      code: "CONFLICT",
      message:
        'Operation cannot be fulfilled on virtualmachine.kubevirt.io "web-1": RunStategy ' +
        "Halted does not support manual restart requests",
    });
    // A Manual VM starts on request, as in KubeVirt: the request goes into its status, for the controller to carry out.
    await asEditor.vms.start.mutate({ namespace, name: "manual-1" });
    const manual = await asEditor.vms.get.query({ namespace, name: "manual-1" });
    expect(manual.spec.runStrategy).toBe("Manual");
    expect(manual.status?.stateChangeRequests).toEqual([{ action: "Start" }]);
    expect(await failure(asEditor.vms.start.mutate({ namespace, name: "manual-1" }))).toMatchObject({
      code: "CONFLICT",
      message:
        'Operation cannot be fulfilled on virtualmachine.kubevirt.io "manual-1": unable to ' +
        "complete request: stop/start already underway",
    });

    // Started (Always; no controller runs here, so it stays without a VMI): it may stop, not start again.
    await asEditor.vms.start.mutate({ namespace, name: "web-1" });
    expect(await failure(asEditor.vms.start.mutate({ namespace, name: "web-1" }))).toMatchObject({
      code: "CONFLICT",
      message:
        'Operation cannot be fulfilled on virtualmachine.kubevirt.io "web-1": Always ' +
        "does not support manual start requests",
    });
    const starting = await clientFor(viewer).permissions.query({ namespace, name: "web-1" });
    expect(starting.stop).toEqual({
      allowed: false,
      reason: expect.stringContaining(`You may not stop VMs in ${namespace}`) as unknown,
      state: { available: true },
    });
    await asEditor.vms.stop.mutate({ namespace, name: "web-1" });
    expect((await asEditor.vms.get.query({ namespace, name: "web-1" })).spec.runStrategy).toBe("Halted");
    expect(await failure(asEditor.permissions.query({ namespace, name: "gone" }))).toMatchObject({ code: "NOT_FOUND" });
  });

  test("tells each user which actions they may take, and why not", async ({ kubeConfig, namespace }) => {
    const { editor, viewer } = await users(kubeConfig, namespace);
    const mine = await clientFor(editor).permissions.query({ namespace });
    expect(mine.create.allowed && mine.console.allowed && mine.start.allowed).toBe(true);
    const theirs = await clientFor(viewer).permissions.query({ namespace });
    expect(theirs.list.allowed).toBe(true);
    expect(theirs.create).toEqual({
      allowed: false,
      reason: `You may not create VMs in ${namespace}: it takes create on virtualmachines (kubevirt.io).`,
    });
    expect(theirs.console).toEqual({
      allowed: false,
      reason:
        `You may not open the serial console of VMs in ${namespace}: it takes get on ` +
        "virtualmachineinstances/console (subresources.kubevirt.io).",
    });
    // The serial log takes what KubeVirt's guest console log takes: the launcher pod's log.
    expect(mine.serialLog).toEqual({ allowed: true });
    expect(theirs.serialLog).toEqual({
      allowed: false,
      reason: `You may not read the serial logs of VMs in ${namespace}: it takes get on pods/log (core).`,
    });
    await clientFor(editor).vms.create.mutate({ namespace, vm: vm("logged") });
    expect(await failure(clientFor(viewer).vms.serialLog.query({ namespace, name: "logged" }))).toMatchObject({
      code: "FORBIDDEN",
      message: `You may not read the serial log of logged in ${namespace}: it takes get on pods/log (core).`,
    });
    expect(await failure(clientFor(editor).vms.serialLog.query({ namespace, name: "logged" }))).toMatchObject({
      code: "NOT_FOUND",
      message: expect.stringContaining("the VM is not running: its serial log begins with its next start") as unknown,
    });
  });

  test("streams VMs as list-then-watch over SSE, resumable from the last event's resourceVersion", async ({
    kubeConfig,
    namespace,
  }) => {
    const { editor } = await users(kubeConfig, namespace);
    const asEditor = clientFor(editor);
    await asEditor.vms.create.mutate({ namespace, vm: vm("first") });
    const events = sse(`${url}/trpc/vms.watch?input=${encodeURIComponent(JSON.stringify({ namespace }))}`, editor);
    await expect.poll(() => events.received().map((e) => e.type)).toEqual(["LIST"]);
    expect(events.received()[0]?.names).toEqual(["first"]);
    const listedAt = events.received()[0]?.id ?? "";
    await asEditor.vms.create.mutate({ namespace, vm: vm("second") });
    await expect.poll(() => events.received().map((e) => `${e.type} ${e.names.join()}`)).toContain("ADDED second");
    events.close();

    // Resumed from the list's version: no new list, the change since then.
    const resumed = sse(
      `${url}/trpc/vms.watch?input=${encodeURIComponent(JSON.stringify({ namespace, lastEventId: listedAt }))}`,
      editor,
    );
    await expect.poll(() => resumed.received().map((e) => `${e.type} ${e.names.join()}`)).toEqual(["ADDED second"]);
    resumed.close();
  });

  test("streams the VMs of every namespace to who may list them cluster-wide, and offers that only to them", async ({
    kubeConfig,
    core,
    namespace,
  }) => {
    const { editor } = await users(kubeConfig, namespace);
    const other = `${namespace}-b`;
    await core.createNamespace({ body: { metadata: { name: other } } });
    const rbac = kubeConfig.makeApiClient(RbacAuthorizationV1Api);
    const name = `${namespace}-all-vms`;
    await core.createNamespacedServiceAccount({ namespace, body: { metadata: { name: "everywhere" } } });
    await rbac.createClusterRole({
      body: {
        metadata: { name },
        rules: [
          {
            apiGroups: ["kubevirt.io"],
            resources: ["virtualmachines", "virtualmachineinstances"],
            verbs: ["get", "list", "watch", "create"],
          },
        ],
      },
    });
    await rbac.createClusterRoleBinding({
      body: {
        metadata: { name },
        roleRef: { apiGroup: "rbac.authorization.k8s.io", kind: "ClusterRole", name },
        subjects: [{ kind: "ServiceAccount", name: "everywhere", namespace }],
      },
    });
    const token =
      (
        await core.createNamespacedServiceAccountToken({
          namespace,
          name: "everywhere",
          body: { spec: { audiences: [], expirationSeconds: 3600 } },
        })
      ).status?.token ?? "";
    try {
      expect((await clientFor(editor).namespaces.query()).mayListVmsEverywhere).toBe(false);
      expect((await clientFor(token).namespaces.query()).mayListVmsEverywhere).toBe(true);
      await clientFor(token).vms.create.mutate({ namespace, vm: vm("here") });
      await clientFor(token).vms.create.mutate({ namespace: other, vm: vm("there") });
      const events = sse(`${url}/trpc/vms.watch?input=${encodeURIComponent(JSON.stringify({}))}`, token);
      await expect
        .poll(() => events.received()[0]?.where ?? [])
        .toEqual(expect.arrayContaining([`${namespace}/here`, `${other}/there`]));
      await clientFor(token).vms.create.mutate({ namespace: other, vm: vm("later") });
      await expect
        .poll(() => events.received().map((e) => `${e.type} ${e.where.join()}`))
        .toContain(`ADDED ${other}/later`);
      events.close();
      // The namespace-bound editor's stream of every namespace is refused by the API server, not narrowed.
      const refused = await fetch(`${url}/trpc/vms.watch?input=${encodeURIComponent(JSON.stringify({}))}`, {
        headers: { accept: "text/event-stream", authorization: `Bearer ${editor}` },
      });
      expect(await readUntil(refused, "virtualmachines")).toMatch(
        /cannot list resource \\?"virtualmachines\\?" in API group \\?"kubevirt.io\\?" at the cluster scope/,
      );
    } finally {
      await rbac.deleteClusterRoleBinding({ name });
      await rbac.deleteClusterRole({ name });
      await core.deleteNamespace({ name: other });
    }
  });

  test("refuses a subscription whose token comes in the URL, saying to use the header", async ({
    kubeConfig,
    namespace,
  }) => {
    const { editor } = await users(kubeConfig, namespace);
    const input = encodeURIComponent(JSON.stringify({ namespace }));
    const res = await fetch(
      `${url}/trpc/vms.watch?input=${input}&connectionParams=${encodeURIComponent(JSON.stringify({ token: editor }))}`,
      { headers: { accept: "text/event-stream" } },
    );
    expect(res.status).toBe(400);
    expect(await res.text()).toContain("Send the bearer token in the Authorization header");
  });
});

/** A raw SSE reader of tRPC's subscription stream, its token in the Authorization header. */
function sse(address: string, token: string) {
  const controller = new AbortController();
  const events: { id: string; type: string; names: string[]; where: string[] }[] = [];
  void (async () => {
    const res = await fetch(address, {
      signal: controller.signal,
      headers: { accept: "text/event-stream", authorization: `Bearer ${token}` },
    });
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
          const message = JSON.parse(data) as {
            type: string;
            items?: { metadata: { name: string; namespace: string } }[];
            object?: { metadata: { name: string; namespace: string } };
          };
          const objects = message.items ?? (message.object ? [message.object] : []);
          events.push({
            id,
            type: message.type,
            names: objects.map((o) => o.metadata.name),
            where: objects.map((o) => `${o.metadata.namespace}/${o.metadata.name}`),
          });
        }
        end = buffer.indexOf("\n\n");
      }
    }
  })().catch(() => undefined);
  return {
    received: () => events,
    close: () => {
      controller.abort();
    },
  };
}

describe("the tRPC API's changes waiting for a restart", () => {
  test(
    "lists, field by field, what an edit of a running VM changed since its start, from the revision the " +
      "controller kept, as the user; says why when the user may not read it or it is gone",
    async ({ kubeConfig, custom, namespace }) => {
      const { editor, viewer } = await users(kubeConfig, namespace);
      // As Kubernetes' edit and view roles give it: the editor reads ControllerRevisions, this viewer does not.
      await grant(kubeConfig, namespace, "editor", "revisions", [
        { apiGroups: ["apps"], resources: ["controllerrevisions"], verbs: ["get"] },
      ]);
      const asEditor = clientFor(editor).vms;
      const started = await asEditor.create.mutate({ namespace, vm: vm("web", "Always") });
      expect(await asEditor.pendingChanges.query({ namespace, name: "web" })).toEqual({
        restartRequired: false,
        changes: [],
      });

      // What the VM controller leaves at a start (no controller runs here): the revision, and the VMI naming it.
      const { uid = "", generation = 0 } = started.metadata as { uid?: string; generation?: number };
      const revision = `revision-start-vm-${uid}-${String(generation)}`;
      const apps = kubeConfig.makeApiClient(AppsV1Api);
      await apps.createNamespacedControllerRevision({
        namespace,
        body: { metadata: { name: revision }, data: { spec: started.spec }, revision: generation },
      });
      const vmiApi = { group: "kubevirt.io", version: "v1", namespace, plural: "virtualmachineinstances" };
      await custom.createNamespacedCustomObject({
        ...vmiApi,
        body: {
          apiVersion: "kubevirt.io/v1",
          kind: "VirtualMachineInstance",
          metadata: { name: "web", annotations: { "kubevirt.io/vm-generation": String(generation) } },
          spec: started.spec.template.spec,
        },
      });

      // The edit form's update: memory and a disk's bus.
      const now = await asEditor.get.query({ namespace, name: "web" });
      const domain = now.spec.template.spec.domain;
      domain.memory = { guest: "160Mi" };
      const root = domain.devices.disks?.[0];
      if (root?.disk) root.disk.bus = "sata";
      await asEditor.update.mutate({ namespace, name: "web", vm: now });
      const vmApi = { group: "kubevirt.io", version: "v1", namespace, plural: "virtualmachines", name: "web" };
      await custom.replaceNamespacedCustomObjectStatus({
        ...vmApi,
        body: {
          ...((await custom.getNamespacedCustomObject(vmApi)) as object),
          status: { conditions: [{ type: "RestartRequired", status: "True" }] },
        },
      });
      expect(await asEditor.pendingChanges.query({ namespace, name: "web" })).toEqual({
        restartRequired: true,
        changes: [
          { path: "spec.template.spec.domain.devices.disks[0].disk.bus", before: '"virtio"', after: '"sata"' },
          { path: "spec.template.spec.domain.memory.guest", before: '"128Mi"', after: '"160Mi"' },
        ],
      });
      expect(await clientFor(viewer).vms.pendingChanges.query({ namespace, name: "web" })).toEqual({
        restartRequired: true,
        reason:
          `You may not read the ControllerRevision ${revision} in ${namespace}, ` +
          "which holds the spec it started from.",
      });
      await apps.deleteNamespacedControllerRevision({ namespace, name: revision });
      expect(await asEditor.pendingChanges.query({ namespace, name: "web" })).toEqual({
        restartRequired: true,
        reason: `The ControllerRevision ${revision} it started from is gone.`,
      });
    },
  );
});

describe("the tRPC API's migrations", () => {
  test(
    "migrates a running VM to a named node for a user who may, lists its " +
      "progress, cancels it, and refuses who may not",
    async ({ kubeConfig, custom, namespace }) => {
      const { editor, viewer } = await users(kubeConfig, namespace);
      // kubevirt.io:migrate, given to the editor in this namespace.
      await grant(kubeConfig, namespace, "editor", "migrate", [
        {
          apiGroups: ["kubevirt.io"],
          resources: ["virtualmachineinstancemigrations"],
          verbs: ["get", "list", "delete"],
        },
        { apiGroups: ["subresources.kubevirt.io"], resources: ["virtualmachines/migrate"], verbs: ["update"] },
      ]);
      const created = await clientFor(editor).vms.create.mutate({ namespace, vm: vm("web", "Manual") });
      // Its VMI as the controller and a handler leave it (no controller runs here).
      await custom.createNamespacedCustomObject({
        group: "kubevirt.io",
        version: "v1",
        namespace,
        plural: "virtualmachineinstances",
        body: {
          apiVersion: "kubevirt.io/v1",
          kind: "VirtualMachineInstance",
          spec: vm("web").spec.template.spec,
          metadata: {
            name: "web",
            ownerReferences: [
              {
                apiVersion: "kubevirt.io/v1",
                kind: "VirtualMachine",
                name: "web",
                uid: created.metadata.uid,
                controller: true,
              },
            ],
          },
          status: { phase: "Running", nodeName: "node-a", conditions: [{ type: "LiveMigratable", status: "True" }] },
        },
      });

      expect(await failure(clientFor(viewer).migrations.migrate.mutate({ namespace, name: "web" }))).toMatchObject({
        code: "FORBIDDEN",
        message: expect.stringContaining("virtualmachines/migrate") as unknown,
      });
      const { name } = await clientFor(editor).migrations.migrate.mutate({
        namespace,
        name: "web",
        targetNode: "node-b",
      });
      expect(name).toMatch(/^kubevirt-migrate-vm-/);
      const listed = await clientFor(editor).migrations.list.query({ namespace, name: "web" });
      expect(listed).toMatchObject({
        node: "node-a",
        migratable: { available: true },
        migrations: [{ name, phase: "Pending", ended: false, cancelling: false }],
      });
      const stored = (await custom.getNamespacedCustomObject({
        group: "kubevirt.io",
        version: "v1",
        namespace,
        plural: "virtualmachineinstancemigrations",
        name,
      })) as { spec: unknown };
      expect(stored.spec).toEqual({ vmiName: "web", addedNodeSelector: { "kubernetes.io/hostname": "node-b" } });
      // The namespace's migrations, for the Migrations page: with its namespace and VM, in flight, no figures yet
      // (it has no source node). Every namespace's only for who may list them there.
      expect(await clientFor(editor).migrations.all.query({ namespace })).toMatchObject({
        migrations: [{ namespace, vm: "web", name, phase: "Pending", ended: false }],
        truncated: false,
      });
      expect(await failure(clientFor(editor).migrations.all.query({}))).toMatchObject({
        code: "FORBIDDEN",
        message: expect.stringContaining("virtualmachineinstancemigrations") as unknown,
      });
      expect(await failure(clientFor(viewer).migrations.all.query({ namespace }))).toMatchObject({
        code: "FORBIDDEN",
      });

      expect(await clientFor(editor).migrations.cancel.mutate({ namespace, name: "web" })).toEqual({
        cancelled: [name],
      });
      expect((await clientFor(editor).migrations.list.query({ namespace, name: "web" })).migrations).toEqual([]);
      expect(await failure(clientFor(editor).migrations.cancel.mutate({ namespace, name: "web" }))).toMatchObject({
        code: "CONFLICT",
        message: "web has no migration in flight to cancel.",
      });
      const permissions = await clientFor(viewer).permissions.query({ namespace });
      expect(permissions.migrate).toMatchObject({
        allowed: false,
        reason: expect.stringContaining("You may not migrate VMs") as unknown,
      });
      expect((await clientFor(editor).permissions.query({ namespace })).cancelMigration.allowed).toBe(true);
    },
  );
});

describe("the tRPC API's snapshots", () => {
  test(
    "takes, lists, restores and deletes a VM's snapshots as the user, saying what stands in the way, " +
      "and refuses the viewer",
    async ({ kubeConfig, custom, namespace }) => {
      const { editor, viewer } = await users(kubeConfig, namespace);
      // What KubeVirt's edit role gives of snapshot.kubevirt.io, to the editor in this namespace.
      await grant(kubeConfig, namespace, "editor", "snapshots", [
        {
          apiGroups: ["snapshot.kubevirt.io"],
          resources: ["virtualmachinesnapshots", "virtualmachinesnapshotcontents", "virtualmachinerestores"],
          verbs: ["get", "list", "watch", "create", "delete"],
        },
      ]);
      const asEditor = clientFor(editor).snapshots;
      const snapshotApi = { group: "snapshot.kubevirt.io", version: "v1beta1", namespace };
      await clientFor(editor).vms.create.mutate({ namespace, vm: vm("web") });

      expect(await failure(asEditor.create.mutate({ namespace, name: "web", snapshot: "Not_A_Name" }))).toMatchObject({
        code: "BAD_REQUEST",
        message: expect.stringContaining("snapshot must be a DNS subdomain") as unknown,
      });
      expect(await failure(asEditor.create.mutate({ namespace, name: "nowhere", snapshot: "s" }))).toMatchObject({
        code: "NOT_FOUND",
      });
      expect(await asEditor.create.mutate({ namespace, name: "web", snapshot: "web-1" })).toEqual({ name: "web-1" });
      const stored = (await custom.getNamespacedCustomObject({
        ...snapshotApi,
        plural: "virtualmachinesnapshots",
        name: "web-1",
      })) as { spec: unknown };
      expect(stored.spec).toMatchObject({ source: { apiGroup: "kubevirt.io", kind: "VirtualMachine", name: "web" } });
      expect((await asEditor.list.query({ namespace, name: "web" })).snapshots).toMatchObject([
        { name: "web-1", phase: "Pending", readyToUse: false, restorable: { available: false } },
      ]);
      expect(await failure(asEditor.restore.mutate({ namespace, name: "web", snapshot: "web-1" }))).toMatchObject({
        code: "CONFLICT",
        message: expect.stringContaining("the snapshot is not ready to use yet") as unknown,
      });

      // What the snapshot controller leaves once the copy is done (no controller runs here).
      await custom.createNamespacedCustomObject({
        ...snapshotApi,
        plural: "virtualmachinesnapshotcontents",
        body: {
          apiVersion: "snapshot.kubevirt.io/v1beta1",
          kind: "VirtualMachineSnapshotContent",
          metadata: { name: "vmsnapshot-content-web-1" },
          spec: {
            virtualMachineSnapshotName: "web-1",
            source: {},
            volumeBackups: [
              {
                volumeName: "root",
                persistentVolumeClaim: { spec: { resources: { requests: { storage: "2Gi" } } } },
                volumeSnapshotName: "vmsnapshot-x-volume-root",
              },
            ],
          },
        },
      });
      await custom.replaceNamespacedCustomObjectStatus({
        ...snapshotApi,
        plural: "virtualmachinesnapshots",
        name: "web-1",
        body: {
          ...((await custom.getNamespacedCustomObject({
            ...snapshotApi,
            plural: "virtualmachinesnapshots",
            name: "web-1",
          })) as object),
          status: {
            phase: "Succeeded",
            readyToUse: true,
            indications: ["Online", "NoGuestAgent"],
            snapshotVolumes: { includedVolumes: ["root"] },
            virtualMachineSnapshotContentName: "vmsnapshot-content-web-1",
          },
        },
      });
      expect((await asEditor.list.query({ namespace, name: "web" })).snapshots).toMatchObject([
        {
          name: "web-1",
          phase: "Succeeded",
          readyToUse: true,
          indications: ["Online", "NoGuestAgent"],
          included: ["root"],
          sizeBytes: 2 * 1024 ** 3,
          restorable: { available: true },
        },
      ]);

      expect(
        await failure(asEditor.restore.mutate({ namespace, name: "web", snapshot: "web-1", newVm: "web" })),
      ).toMatchObject({
        code: "CONFLICT",
        message: `newVm: a VM named web already exists in ${namespace}; choose another name.`,
      });
      const copy = await asEditor.restore.mutate({ namespace, name: "web", snapshot: "web-1", newVm: "web-copy" });
      expect(copy).toMatchObject({ name: expect.stringMatching(/^web-copy-restore-/) as unknown, target: "web-copy" });
      const inPlace = await asEditor.restore.mutate({ namespace, name: "web", snapshot: "web-1" });
      expect(inPlace.target).toBe("web");
      const { restores } = await asEditor.restores.query({ namespace, name: "web" });
      expect(restores.map((r) => [r.target, r.snapshot, r.complete]).sort()).toEqual([
        ["web", "web-1", false],
        ["web-copy", "web-1", false],
      ]);
      expect(await failure(asEditor.delete.mutate({ namespace, name: "other", snapshot: "web-1" }))).toMatchObject({
        code: "BAD_REQUEST",
        message: "snapshot: web-1 is a snapshot of web, not of other.",
      });

      const asViewer = clientFor(viewer);
      // Contents are read by name, only the listed snapshots': a user who may get them but not list them sees sizes.
      await grant(kubeConfig, namespace, "viewer", "snapshot-reader", [
        { apiGroups: ["snapshot.kubevirt.io"], resources: ["virtualmachinesnapshots"], verbs: ["list"] },
        { apiGroups: ["snapshot.kubevirt.io"], resources: ["virtualmachinesnapshotcontents"], verbs: ["get"] },
      ]);
      await expect
        .poll(async () => (await asViewer.snapshots.list.query({ namespace, name: "web" })).snapshots, {
          timeout: 10_000,
        })
        .toMatchObject([{ name: "web-1", sizeBytes: 2 * 1024 ** 3 }]);
      expect(
        await failure(asViewer.snapshots.create.mutate({ namespace, name: "web", snapshot: "web-2" })),
      ).toMatchObject({
        code: "FORBIDDEN",
      });
      const permissions = await asViewer.permissions.query({ namespace });
      expect(permissions.restoreAsNewVm).toMatchObject({
        allowed: false,
        reason: expect.stringContaining(
          `You may not restore snapshots as new VMs in ${namespace}: it takes create on virtualmachinerestores ` +
            "(snapshot.kubevirt.io) and create on virtualmachines",
        ) as unknown,
      });
      expect((await clientFor(editor).permissions.query({ namespace })).takeSnapshot.allowed).toBe(true);

      await asEditor.delete.mutate({ namespace, name: "web", snapshot: "web-1" });
      expect((await asEditor.list.query({ namespace, name: "web" })).snapshots).toEqual([]);
    },
  );
});

describe("the tRPC API's clones", () => {
  test(
    "clones a VM as the user into a new VM's name, lists the clone with how far it got, " +
      "refuses what stands in the way, and the viewer",
    async ({ kubeConfig, custom, namespace }) => {
      const { editor, viewer } = await users(kubeConfig, namespace);
      // What KubeVirt's edit role gives of clone.kubevirt.io, to the editor in this namespace.
      await grant(kubeConfig, namespace, "editor", "clones", [
        {
          apiGroups: ["clone.kubevirt.io"],
          resources: ["virtualmachineclones"],
          verbs: ["get", "list", "watch", "create", "delete"],
        },
      ]);
      const asEditor = clientFor(editor).clones;
      const cloneApi = { group: "clone.kubevirt.io", version: "v1beta1", namespace, plural: "virtualmachineclones" };
      await clientFor(editor).vms.create.mutate({ namespace, vm: vm("web") });
      await clientFor(editor).vms.create.mutate({ namespace, vm: vm("taken") });

      expect(await failure(asEditor.create.mutate({ namespace, name: "web", target: "Not_A_Name" }))).toMatchObject({
        code: "BAD_REQUEST",
        message: expect.stringContaining("target must be a DNS label") as unknown,
      });
      const tooMany = Object.fromEntries(Array.from({ length: 33 }, (_, i) => [`nic${String(i)}`, ""]));
      expect(
        await failure(asEditor.create.mutate({ namespace, name: "web", target: "web-2", newMacAddresses: tooMany })),
      ).toMatchObject({
        code: "BAD_REQUEST",
        message: expect.stringContaining("newMacAddresses names at most 32 interfaces") as unknown,
      });
      expect(await failure(asEditor.create.mutate({ namespace, name: "nowhere", target: "web-2" }))).toMatchObject({
        code: "NOT_FOUND",
      });
      expect(await failure(asEditor.create.mutate({ namespace, name: "web", target: "taken" }))).toMatchObject({
        code: "CONFLICT",
        message: `target: a VM named taken already exists in ${namespace}; choose another name.`,
      });

      // While a snapshot of the VM is under way it cannot be cloned, as it could not be snapshotted.
      const vmApi = { group: "kubevirt.io", version: "v1", namespace, plural: "virtualmachines", name: "web" };
      const stored = (await custom.getNamespacedCustomObject(vmApi)) as object;
      await custom.replaceNamespacedCustomObjectStatus({
        ...vmApi,
        body: { ...stored, status: { snapshotInProgress: "web-snap" } },
      });
      expect(await failure(asEditor.create.mutate({ namespace, name: "web", target: "web-copy" }))).toMatchObject({
        code: "CONFLICT",
        message: "Cannot clone web: snapshot web-snap of the VM is under way; wait until it is done.",
      });
      await custom.replaceNamespacedCustomObjectStatus({
        ...vmApi,
        body: { ...((await custom.getNamespacedCustomObject(vmApi)) as object), status: {} },
      });

      const made = await asEditor.create.mutate({ namespace, name: "web", target: "web-copy" });
      expect(made).toMatchObject({ name: expect.stringMatching(/^clone-web-copy-/) as unknown, target: "web-copy" });
      const clone = (await custom.getNamespacedCustomObject({ ...cloneApi, name: made.name })) as { spec: unknown };
      expect(clone.spec).toEqual({
        source: { apiGroup: "kubevirt.io", kind: "VirtualMachine", name: "web" },
        target: { apiGroup: "kubevirt.io", kind: "VirtualMachine", name: "web-copy" },
      });
      expect((await asEditor.list.query({ namespace, name: "web" })).clones).toEqual([
        expect.objectContaining({ name: made.name, source: "web", target: "web-copy", phase: "", succeeded: false }),
      ]);

      // How far the clone controller got, as it writes it (no controller runs here).
      const progress = async (phase: string, type: string, message: string) => {
        await custom.replaceNamespacedCustomObjectStatus({
          ...cloneApi,
          name: made.name,
          body: {
            ...((await custom.getNamespacedCustomObject({ ...cloneApi, name: made.name })) as object),
            status: {
              phase,
              targetName: "web-copy",
              conditions: [
                { type, status: "True", reason: message, message, lastTransitionTime: "2026-01-01T12:00:00Z" },
              ],
            },
          },
        });
      };
      await progress("RestoreInProgress", "Progressing", "Restoring snapshot s to a new VM");
      expect((await asEditor.list.query({ namespace, name: "web" })).clones).toMatchObject([
        { phase: "RestoreInProgress", failed: false, message: "Restoring snapshot s to a new VM" },
      ]);
      await progress("Failed", "Ready", "the restore r failed: no room");
      // The new VM's own page lists the clone that made it; another VM's does not.
      expect((await asEditor.list.query({ namespace, name: "web-copy" })).clones).toMatchObject([
        { name: made.name, phase: "Failed", failed: true, message: "the restore r failed: no room" },
      ]);
      expect((await asEditor.list.query({ namespace, name: "taken" })).clones).toEqual([]);

      const asViewer = clientFor(viewer);
      expect(await failure(asViewer.clones.create.mutate({ namespace, name: "web", target: "web-3" }))).toMatchObject({
        code: "FORBIDDEN",
      });
      expect((await asViewer.permissions.query({ namespace })).clone).toEqual({
        allowed: false,
        reason: `You may not clone VMs in ${namespace}: it takes create on virtualmachineclones (clone.kubevirt.io).`,
      });
      expect((await clientFor(editor).permissions.query({ namespace })).clone.allowed).toBe(true);
    },
  );
});

describe("the admission webhooks, registered with the real API server", () => {
  test("refuse an invalid VM with its causes and default a valid one", async ({ kubeConfig, namespace }) => {
    const webhooks = await startWebhooks(kubeConfig, log);
    const { AdmissionregistrationV1Api, CustomObjectsApi } = await import("@kubernetes/client-node");
    const admission = kubeConfig.makeApiClient(AdmissionregistrationV1Api);
    const { caBundle } = webhooks;
    const hook = (verb: string) => ({
      name: `${verb}-virtualmachines.kubevirt-ts.io`,
      admissionReviewVersions: ["v1"],
      sideEffects: "None",
      failurePolicy: "Fail",
      clientConfig: { url: `${webhooks.url}/${verb}-virtualmachines`, caBundle },
      namespaceSelector: { matchLabels: { "kubernetes.io/metadata.name": namespace } },
      rules: [
        {
          apiGroups: ["kubevirt.io"],
          apiVersions: ["v1", "v1alpha3"],
          operations: ["CREATE", "UPDATE"],
          resources: ["virtualmachines"],
        },
      ],
    });
    await admission.createValidatingWebhookConfiguration({
      body: { metadata: { name: namespace }, webhooks: [hook("validate")] },
    });
    await admission.createMutatingWebhookConfiguration({
      body: { metadata: { name: namespace }, webhooks: [hook("mutate")] },
    });
    try {
      const custom = kubeConfig.makeApiClient(CustomObjectsApi);
      const create = (body: unknown) =>
        custom.createNamespacedCustomObject({
          group: "kubevirt.io",
          version: "v1",
          namespace,
          plural: "virtualmachines",
          body,
        });
      const bad = vm("bad");
      bad.spec.template.spec.volumes = [];
      const refusal = await create(bad).then(
        () => "created",
        (e: unknown) => String((e as { body?: string }).body),
      );
      expect(refusal).toContain("spec.template.spec.domain.devices.disks[0].name");
      expect(JSON.parse(refusal)).toMatchObject({
        code: 422,
        details: { causes: [{ field: "spec.template.spec.domain.devices.disks[0].name" }] },
      });

      const plain = vm("plain");
      plain.spec.template.spec.domain.devices.disks[0] = { name: "root", disk: {} } as never;
      const created = (await create(plain)) as {
        spec: { template: { spec: { domain: { devices: { disks: { disk: { bus: string } }[] } } } } };
      };
      expect(created.spec.template.spec.domain.devices.disks[0]?.disk.bus).toBe("sata");

      // kubevirt.io/v1alpha3, as KubeVirt still serves and admits it: refused and defaulted the same, read back as v1.
      const asV1alpha3 = (body: { metadata: { name: string } }) =>
        custom.createNamespacedCustomObject({
          group: "kubevirt.io",
          version: "v1alpha3",
          namespace,
          plural: "virtualmachines",
          body: { ...body, apiVersion: "kubevirt.io/v1alpha3" },
        });
      const oldRefusal = await asV1alpha3(bad).then(
        () => "created",
        (e: unknown) => String((e as { body?: string }).body),
      );
      expect(JSON.parse(oldRefusal)).toMatchObject({
        code: 422,
        details: { causes: [{ field: "spec.template.spec.domain.devices.disks[0].name" }] },
      });
      await asV1alpha3({ ...plain, metadata: { name: "written-as-v1alpha3" } });
      const readAsV1 = (await custom.getNamespacedCustomObject({
        group: "kubevirt.io",
        version: "v1",
        namespace,
        plural: "virtualmachines",
        name: "written-as-v1alpha3",
      })) as typeof created & { apiVersion: string };
      expect(readAsV1.apiVersion).toBe("kubevirt.io/v1");
      expect(readAsV1.spec.template.spec.domain.devices.disks[0]?.disk.bus).toBe("sata");

      // Instancetypes and preferences: looked up with the API's own account, conflicts refused by path, requirements
      // checked, and the template left as written (no defaults that would conflict).
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
          metadata: { name: "big" },
          spec: { requirements: { cpu: { guest: 4 } } },
        },
      });
      const sized = (name: string, edit: (spec: Record<string, unknown>, domain: Record<string, unknown>) => void) => {
        const object = vm(name) as unknown as {
          spec: Record<string, unknown> & { template: { spec: { domain: Record<string, unknown> } } };
        };
        delete object.spec.template.spec.domain.memory;
        object.spec.instancetype = { name: "two", kind: "virtualmachineinstancetype" };
        edit(object.spec, object.spec.template.spec.domain);
        return object;
      };
      const withInstancetype = (await create(sized("sized", () => undefined))) as {
        spec: { template: { spec: { domain: Record<string, unknown> } } };
      };
      expect(withInstancetype.spec.template.spec.domain.cpu).toBeUndefined();
      expect(withInstancetype.spec.template.spec.domain.memory).toBeUndefined();

      const conflict = await create(sized("conflict", (_, domain) => (domain.cpu = { sockets: 1 }))).then(
        () => "created",
        (e: unknown) => String((e as { body?: string }).body),
      );
      expect(JSON.parse(conflict)).toMatchObject({
        code: 422,
        details: { causes: [{ field: "spec.template.spec.domain.cpu.sockets" }] },
      });
      expect(conflict).toContain("conflicts with selected instance type two");

      const tooSmall = await create(
        sized("too-small", (spec) => (spec.preference = { name: "big", kind: "VirtualMachinePreference" })),
      ).then(
        () => "created",
        (e: unknown) => String((e as { body?: string }).body),
      );
      expect(JSON.parse(tooSmall)).toMatchObject({
        code: 422,
        details: { causes: [{ field: "spec.instancetype", reason: "FieldValueNotFound" }] },
      });
      expect(tooSmall).toContain("requires 4 vCPU");

      // One that is not there yet is admitted, as KubeVirt's v1.6 and later admit it; the controller reports it.
      await expect(create(sized("later", (spec) => (spec.instancetype = { name: "not-yet" })))).resolves.toBeDefined();
      const badKind = await create(
        sized("bad-kind", (spec) => (spec.instancetype = { name: "two", kind: "Flavor" })),
      ).then(
        () => "created",
        (e: unknown) => String((e as { body?: string }).body),
      );
      expect(JSON.parse(badKind)).toMatchObject({
        code: 422,
        details: { causes: [{ field: "spec.instancetype.kind" }] },
      });

      // inferFromVolume: the mutating webhook names the instancetype from the claim's labels (read with the API's own
      // account) before the API server checks the schema, which asks for a name; and refuses when the claim names none.
      const core = kubeConfig.makeApiClient(CoreV1Api);
      const claim = (name: string, labels: Record<string, string>) =>
        core.createNamespacedPersistentVolumeClaim({
          namespace,
          body: {
            metadata: { name, labels },
            spec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "1Gi" } } },
          },
        });
      await claim("two-disk", {
        "instancetype.kubevirt.io/default-instancetype": "two",
        "instancetype.kubevirt.io/default-instancetype-kind": "VirtualMachineInstancetype",
      });
      await claim("plain-disk", {});
      const inferring = (name: string, claimName: string) =>
        sized(name, (spec) => {
          spec.instancetype = { inferFromVolume: "root" };
          (spec.template as { spec: { volumes: unknown[] } }).spec.volumes = [
            { name: "root", persistentVolumeClaim: { claimName } },
          ];
        });
      const inferred = (await create(inferring("inferred", "two-disk"))) as { spec: { instancetype?: unknown } };
      expect(inferred.spec.instancetype).toEqual({ name: "two", kind: "VirtualMachineInstancetype" });
      const notInferred = await create(inferring("not-inferred", "plain-disk")).then(
        () => "created",
        (e: unknown) => String((e as { body?: string }).body),
      );
      expect(JSON.parse(notInferred)).toMatchObject({
        code: 422,
        details: { causes: [{ field: "spec.instancetype.inferFromVolume" }] },
      });
    } finally {
      await admission.deleteValidatingWebhookConfiguration({ name: namespace });
      await admission.deleteMutatingWebhookConfiguration({ name: namespace });
      webhooks.close();
    }
  });
});

/** A streamed response's text up to the first chunk that holds `text` (an SSE stream does not end by itself). */
async function readUntil(res: Response, text: string): Promise<string> {
  const decoder = new TextDecoder();
  let seen = "";
  for await (const chunk of res.body ?? []) {
    seen += decoder.decode(chunk as Uint8Array, { stream: true });
    if (seen.includes(text)) break;
  }
  await res.body?.cancel().catch(() => undefined);
  return seen;
}
