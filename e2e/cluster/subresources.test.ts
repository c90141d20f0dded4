import { execFile } from "node:child_process";
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { promisify } from "node:util";
import { KubeConfig } from "@kubernetes/client-node";
import { ensureBinaries } from "@kubevirt-ts/control-plane";
import { releaseVersion } from "@kubevirt-ts/images";
import { KUBECONFIG_PATH } from "@kubevirt-ts/local-cluster";
import { describe, expect, it } from "vitest";
import { tokenOf } from "../tests/cluster-users.ts";
import { tinyVm, tinyVmOnClaim } from "../manifests.ts";
import { core, createVm, custom, editorToken, imageOf, suiteNamespace } from "./cluster.ts";
import { serialLog } from "./console.ts";

// KubeVirt's subresource API through the Kubernetes API server, as virtctl
// and every KubeVirt client reach it: the chart's APIService, the API
// server's aggregation layer, virt-api. Users are a service account bound to
// Kubernetes' edit role (which aggregates kubevirt.io:edit) and the local
// cluster's viewer (the view role); they use kubectl with their own tokens.

const ns = suiteNamespace("e2e-subresources");
const vmPath = (name: string, sub: string) =>
  `/apis/subresources.kubevirt.io/v1/namespaces/${ns.name}/virtualmachines/${name}/${sub}`;
const vmiPath = (name: string, sub: string) =>
  `/apis/subresources.kubevirt.io/v1/namespaces/${ns.name}/virtualmachineinstances/${name}/${sub}`;

const kubeconfigs = new Map<string, Promise<string>>();

/**
 * A kubeconfig of the local cluster with the user's token alone (the admin's client certificate would authenticate
 * first), written once per token.
 */
function userKubeconfig(token: string): Promise<string> {
  let file = kubeconfigs.get(token);
  if (!file) kubeconfigs.set(token, (file = writeUserKubeconfig(token)));
  return file;
}

async function writeUserKubeconfig(token: string): Promise<string> {
  const admin = new KubeConfig();
  admin.loadFromFile(KUBECONFIG_PATH);
  const cluster = admin.getCurrentCluster();
  if (!cluster) throw new Error(`no cluster in ${KUBECONFIG_PATH}`);
  const user = new KubeConfig();
  user.loadFromClusterAndUser(cluster, { name: "user", token });
  const file = join(await mkdtemp(join(tmpdir(), "user-")), "kubeconfig");
  await writeFile(file, user.exportConfig(), { mode: 0o600 });
  return file;
}

/** kubectl as a user: PUT (replace --raw) of an options body; "done", or the error's text when refused. */
async function put(token: string, path: string, body = "{}"): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "options-"));
  await writeFile(join(dir, "options.json"), body);
  const kubectl = join(await ensureBinaries(["kubectl"]), "kubectl");
  return promisify(execFile)(kubectl, [
    `--kubeconfig=${await userKubeconfig(token)}`,
    "replace",
    "--raw",
    path,
    "-f",
    join(dir, "options.json"),
  ]).then(
    () => "done",
    (error: unknown) => (error as { stderr?: string }).stderr ?? String(error),
  );
}

/** kubectl as a user: GET --raw; the body, or the error's text when refused. */
async function getRaw(token: string, path: string): Promise<string> {
  const kubectl = join(await ensureBinaries(["kubectl"]), "kubectl");
  return promisify(execFile)(kubectl, [`--kubeconfig=${await userKubeconfig(token)}`, "get", "--raw", path]).then(
    ({ stdout }) => stdout,
    (error: unknown) => (error as { stderr?: string }).stderr ?? String(error),
  );
}

const vmiPhase = async (name: string) =>
  (await ns.get("virtualmachineinstances", name))?.status?.phase as string | undefined;
const conditions = async (name: string) =>
  ((await ns.get("virtualmachineinstances", name))?.status?.conditions ?? []) as { type: string; status: string }[];

describe("KubeVirt's subresource API through the Kubernetes API server", () => {
  it("is an available APIService whose discovery lists the subresources", async () => {
    for (const version of ["v1", "v1alpha3"]) {
      await expect
        .poll(
          async () =>
            ns.kubectl(
              "get",
              "apiservice",
              `${version}.subresources.kubevirt.io`,
              "-o",
              "jsonpath={.status.conditions[?(@.type=='Available')].status}",
            ),
          { timeout: 90_000, interval: 1_000 },
        )
        .toBe("True");
    }
    const list = JSON.parse(await ns.kubectl("get", "--raw", "/apis/subresources.kubevirt.io/v1")) as {
      groupVersion: string;
      resources: { name: string }[];
    };
    expect(list.groupVersion).toBe("subresources.kubevirt.io/v1");
    expect(list.resources.map((r) => r.name)).toEqual(
      expect.arrayContaining([
        "virtualmachines/start",
        "virtualmachines/stop",
        "virtualmachines/restart",
        "virtualmachineinstances/pause",
        "virtualmachineinstances/unpause",
        "virtualmachineinstances/softreboot",
        "virtualmachineinstances/reset",
        "virtualmachines/objectgraph",
        "virtualmachineinstances/objectgraph",
      ]),
    );
  });

  it("answers virtctl version with the release, the root package.json's version", async () => {
    const answer = JSON.parse(await ns.kubectl("get", "--raw", "/apis/subresources.kubevirt.io/v1/version")) as {
      gitVersion: string;
    };
    expect(answer.gitVersion).toBe(releaseVersion());
  });

  it(
    "starts, pauses, unpauses and stops a Manual VM for an editor, and refuses a viewer with 403",
    { timeout: 240_000 },
    async () => {
      const editor = await editorToken(ns.name);
      const viewer = tokenOf("viewer");
      const body = tinyVm("manual", imageOf("tiny-guest"), ns.name);
      body.spec.runStrategy = "Manual";
      await custom.createNamespacedCustomObject({
        group: "kubevirt.io",
        version: "v1",
        namespace: ns.name,
        plural: "virtualmachines",
        body,
      });

      // The viewer is refused by the API server itself, which authorizes before it passes the request on.
      const refused = await put(viewer, vmPath("manual", "start"));
      expect(refused).toMatch(/Forbidden|forbidden/);
      expect(refused).toContain("virtualmachines/start");
      await sleep(2_000);
      expect(await vmiPhase("manual")).toBeUndefined();

      // A Manual VM starts on request: the request goes into the VM's status, which the controller carries out.
      expect(await put(editor, vmPath("manual", "start"))).toBe("done");
      await expect.poll(() => vmiPhase("manual"), { timeout: 120_000, interval: 1_000 }).toBe("Running");
      expect(await put(editor, vmPath("manual", "start"))).toContain("VM is already running");

      expect(await put(viewer, vmiPath("manual", "pause"))).toMatch(/forbidden/i);
      expect(await put(editor, vmiPath("manual", "pause"))).toBe("done");
      await expect
        .poll(async () => (await conditions("manual")).find((c) => c.type === "Paused")?.status, {
          timeout: 30_000,
          interval: 500,
        })
        .toBe("True");
      expect(await put(editor, vmiPath("manual", "pause"))).toContain("VMI is already paused");
      expect(await put(editor, vmiPath("manual", "unpause"))).toBe("done");
      await expect
        .poll(async () => (await conditions("manual")).some((c) => c.type === "Paused"), {
          timeout: 30_000,
          interval: 500,
        })
        .toBe(false);

      expect(await put(viewer, vmPath("manual", "stop"))).toMatch(/forbidden/i);
      expect(await vmiPhase("manual")).toBe("Running");
      expect(await put(editor, vmPath("manual", "stop"))).toBe("done");
      await expect.poll(() => vmiPhase("manual"), { timeout: 60_000, interval: 1_000 }).toBeUndefined();
      const vm = (await ns.get("virtualmachines", "manual")) as
        { spec?: { runStrategy?: string }; status?: { printableStatus?: string } } | undefined;
      expect(vm?.spec?.runStrategy).toBe("Manual");
      await expect
        .poll(async () => (await ns.get("virtualmachines", "manual"))?.status?.printableStatus, {
          timeout: 30_000,
          interval: 1_000,
        })
        .toBe("Stopped");
    },
  );

  it(
    "starts a VM paused as virtctl start --paused asks, its guest unpaused only on request",
    { timeout: 240_000 },
    async () => {
      const editor = await editorToken(ns.name);
      expect(await put(editor, vmPath("manual", "start"), JSON.stringify({ paused: true }))).toBe("done");
      await expect.poll(() => vmiPhase("manual"), { timeout: 120_000, interval: 1_000 }).toBe("Running");
      const vmi = (await ns.get("virtualmachineinstances", "manual")) as
        { spec?: { startStrategy?: string } } | undefined;
      expect(vmi?.spec?.startStrategy).toBe("Paused");
      await expect
        .poll(async () => (await conditions("manual")).find((c) => c.type === "Paused")?.status, {
          timeout: 60_000,
          interval: 500,
        })
        .toBe("True");
      await expect
        .poll(async () => (await ns.get("virtualmachines", "manual"))?.status?.printableStatus, {
          timeout: 30_000,
          interval: 1_000,
        })
        .toBe("Paused");
      // Created paused, the guest has not run an instruction: its serial log holds nothing yet.
      // Nothing printed yet may mean no log at all yet (404); any other failure to read it is the test's.
      const before = await serialLog(ns.name, "manual").catch((error: unknown) => {
        if (String(error).includes("answered 404")) return "";
        throw error;
      });
      expect(before).not.toContain("Linux version");
      expect(await put(editor, vmiPath("manual", "unpause"))).toBe("done");
      await expect
        .poll(async () => (await conditions("manual")).some((c) => c.type === "Paused"), {
          timeout: 30_000,
          interval: 500,
        })
        .toBe(false);
      await expect
        .poll(() => serialLog(ns.name, "manual"), { timeout: 120_000, interval: 1_000 })
        .toContain("Linux version");
      expect(await put(editor, vmPath("manual", "stop"))).toBe("done");
      await expect.poll(() => vmiPhase("manual"), { timeout: 60_000, interval: 1_000 }).toBeUndefined();
    },
  );
});

describe("virtctl objectgraph, expose and memory-dump, as they reach a running VM", () => {
  it(
    "answers the editor the VM's graph down to its launcher pod, which a Service selecting KubeVirt's " +
      "vmi.kubevirt.io/id label reaches; refuses memory-dump with the reason",
    { timeout: 240_000 },
    async () => {
      const editor = await editorToken(ns.name);
      expect(await put(editor, vmPath("manual", "start"))).toBe("done");
      await expect.poll(() => vmiPhase("manual"), { timeout: 120_000, interval: 1_000 }).toBe("Running");

      // virtctl objectgraph manual: a GET of the subresource (its empty options: every node).
      interface Node {
        objectReference: { kind: string; name: string };
        labels?: Record<string, string>;
        children?: Node[];
      }
      const graph = JSON.parse(await getRaw(editor, vmPath("manual", "objectgraph"))) as Node;
      expect(graph.objectReference).toMatchObject({ kind: "VirtualMachine", name: "manual" });
      const vmiNode = graph.children?.find((c) => c.objectReference.kind === "VirtualMachineInstance");
      const podNode = vmiNode?.children?.find((c) => c.objectReference.kind === "Pod");
      expect(podNode?.objectReference.name).toMatch(/^virt-launcher-manual-/);
      expect(podNode?.labels).toEqual({ "kubevirt.io/dependency-type": "compute" });

      // virtctl expose vm manual --port 22: a Service selecting vmi.kubevirt.io/id=manual, which reaches the pod.
      const pod = (await ns.launcherPods()).find((p) => p.metadata?.name === podNode?.objectReference.name);
      expect(pod?.metadata?.labels?.["vmi.kubevirt.io/id"]).toBe("manual");
      const dir = await mkdtemp(join(tmpdir(), "expose-"));
      await writeFile(
        join(dir, "service.json"),
        JSON.stringify({
          apiVersion: "v1",
          kind: "Service",
          metadata: { name: "manual-ssh", namespace: ns.name },
          spec: {
            selector: { "vmi.kubevirt.io/id": "manual" },
            ports: [{ name: "port-1", port: 22, protocol: "TCP" }],
          },
        }),
      );
      await ns.kubectl("apply", "-f", join(dir, "service.json"));
      await expect
        .poll(
          () =>
            ns.kubectl(
              "get",
              "endpointslices",
              "-n",
              ns.name,
              "-l",
              "kubernetes.io/service-name=manual-ssh",
              "-o",
              "jsonpath={.items[*].endpoints[*].addresses[*]}",
            ),
          { timeout: 30_000, interval: 1_000 },
        )
        .toBe(pod?.status?.podIP);

      // virtctl memory-dump get manual: refused by name, with why (the admin passes the API server's authorization).
      await writeFile(join(dir, "dump.json"), JSON.stringify({ claimName: "dump" }));
      const refused = await ns
        .kubectl("replace", "--raw", vmPath("manual", "memorydump"), "-f", join(dir, "dump.json"))
        .then(
          () => "done",
          (error: unknown) => String(error),
        );
      expect(refused).toContain("kubevirt-ts does not build memory-dump yet");

      expect(await put(editor, vmPath("manual", "stop"))).toBe("done");
      await expect.poll(() => vmiPhase("manual"), { timeout: 60_000, interval: 1_000 }).toBeUndefined();
    },
  );
});

describe("a VM as `virtctl create vm --instancetype u1.medium --preference debian` writes it", () => {
  // virtctl's shape: no kinds (the cluster-wide ones, which the chart ships), no memory or CPU in the template. The
  // tiny guest's kernel boot stands in for the container disk, and a short grace period for virtctl's 180 s.
  const vm = () => {
    const body = tinyVm("sized", imageOf("tiny-guest"), ns.name) as ReturnType<typeof tinyVm> & {
      spec: Record<string, unknown>;
    };
    body.spec.instancetype = { name: "u1.medium" };
    body.spec.preference = { name: "debian" };
    const domain = body.spec.template.spec.domain as Record<string, unknown>;
    delete domain.memory;
    domain.resources = {};
    domain.devices = {};
    // virtctl lists no networks: the pod network's interface is added, and the preference gives its model.
    delete (body.spec.template.spec as { networks?: unknown }).networks;
    return body;
  };

  it(
    "runs sized by the instancetype, with the preference's devices and EFI firmware, captured in ControllerRevisions",
    { timeout: 240_000 },
    async () => {
      await custom.createNamespacedCustomObject({
        group: "kubevirt.io",
        version: "v1",
        namespace: ns.name,
        plural: "virtualmachines",
        body: vm(),
      });
      await expect.poll(() => vmiPhase("sized"), { timeout: 180_000, interval: 1_000 }).toBe("Running");
      const vmi = (await ns.get("virtualmachineinstances", "sized")) as unknown as {
        spec: {
          domain: {
            cpu: object;
            memory: { guest: string };
            firmware: { bootloader: unknown };
            devices: { interfaces: { model: string }[]; rng: object };
          };
        };
      };
      expect(vmi.spec.domain.cpu).toMatchObject({ sockets: 1, cores: 1, threads: 1 });
      expect(vmi.spec.domain.memory.guest).toBe("4Gi");
      expect(vmi.spec.domain.firmware.bootloader).toEqual({ efi: { secureBoot: false } });
      expect(vmi.spec.domain.devices.interfaces[0]?.model).toBe("virtio");
      expect(vmi.spec.domain.devices.rng).toEqual({});
      // It boots through OVMF.
      await expect
        .poll(() => serialLog(ns.name, "sized"), { timeout: 120_000, interval: 2_000 })
        .toContain("kubevirt-ts tiny guest: init reached");
      const status = (await ns.get("virtualmachines", "sized"))?.status as
        { instancetypeRef?: { controllerRevisionRef?: { name?: string } } } | undefined;
      expect(status?.instancetypeRef?.controllerRevisionRef?.name).toMatch(/^sized-u1\.medium-v1beta1-/);
      expect(await ns.kubectl("get", "controllerrevisions", "-n", ns.name, "-o", "name")).toContain(
        "controllerrevision.apps/sized-debian-v1beta1-",
      );

      // virtctl expand: the editor reads the VM as it runs, through the API server.
      const expanded = JSON.parse(await getRaw(await editorToken(ns.name), vmPath("sized", "expand-spec"))) as {
        spec: { instancetype?: unknown; template: { spec: { domain: { memory: { guest: string } } } } };
      };
      expect(expanded.spec.instancetype).toBeUndefined();
      expect(expanded.spec.template.spec.domain.memory.guest).toBe("4Gi");
    },
  );

  it("is refused by path when its template sets what the instancetype sets", async () => {
    const conflicting = vm();
    conflicting.metadata.name = "conflicting";
    (conflicting.spec.template.spec.domain as Record<string, unknown>).memory = { guest: "4Gi" };
    const refusal = await custom
      .createNamespacedCustomObject({
        group: "kubevirt.io",
        version: "v1",
        namespace: ns.name,
        plural: "virtualmachines",
        body: conflicting,
      })
      .then(
        () => "created",
        (e: unknown) => String((e as { body?: string }).body),
      );
    expect(refusal).toContain("spec.template.spec.domain.memory.guest conflicts with selected instance type u1.medium");
  });
});

describe("unpause while a snapshot holds the guest", () => {
  it(
    "is refused as KubeVirt refuses it; the snapshot of a guest without an agent resumes it when its copy is done",
    { timeout: 300_000 },
    async () => {
      const editor = await editorToken(ns.name);
      await core.createNamespacedPersistentVolumeClaim({
        namespace: ns.name,
        body: {
          metadata: { name: "held-data" },
          spec: { accessModes: ["ReadWriteOnce"], resources: { requests: { storage: "64Mi" } } },
        },
      });
      await createVm(ns.name, tinyVmOnClaim("held", imageOf("tiny-guest"), "held-data", ns.name));
      await expect.poll(() => vmiPhase("held"), { timeout: 120_000, interval: 1_000 }).toBe("Running");
      const snapshots = {
        group: "snapshot.kubevirt.io",
        version: "v1beta1",
        namespace: ns.name,
        plural: "virtualmachinesnapshots",
      };
      await custom.createNamespacedCustomObject({
        ...snapshots,
        body: {
          apiVersion: "snapshot.kubevirt.io/v1beta1",
          kind: "VirtualMachineSnapshot",
          metadata: { name: "held-snap" },
          spec: { source: { apiGroup: "kubevirt.io", kind: "VirtualMachine", name: "held" } },
        },
      });
      const snapshot = async () =>
        (await custom.getNamespacedCustomObject({ ...snapshots, name: "held-snap" })) as {
          status?: { phase?: string; indications?: string[] };
        };
      // The tiny guest has no agent: the snapshot pauses it while its claim is copied (a pod started for it), and
      // an unpause meanwhile is refused.
      await expect
        .poll(
          async () => {
            const paused = (await conditions("held")).find((c) => c.type === "Paused")?.status;
            return paused === "True"
              ? "paused"
              : `${paused ?? "not paused"}, snapshot ${String((await snapshot()).status?.phase)}`;
          },
          { timeout: 120_000, interval: 200 },
        )
        .toBe("paused");
      expect(await put(editor, vmiPath("held", "unpause"))).toContain("VM snapshot is in progress");
      await expect
        .poll(async () => (await snapshot()).status?.phase, { timeout: 180_000, interval: 1_000 })
        .toBe("Succeeded");
      expect((await snapshot()).status?.indications).toEqual(expect.arrayContaining(["Online", "NoGuestAgent"]));
      await expect
        .poll(async () => (await conditions("held")).some((c) => c.type === "Paused"), {
          timeout: 60_000,
          interval: 500,
        })
        .toBe(false);
      expect((await ns.get("virtualmachines", "held"))?.status?.snapshotInProgress).toBeUndefined();
    },
  );
});
