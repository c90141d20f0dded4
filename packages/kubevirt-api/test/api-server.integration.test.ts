import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import { ApiException, type CustomObjectsApi } from "@kubernetes/client-node";
import { test } from "@kubevirt-ts/control-plane/testing";
import { describe, expect, inject } from "vitest";
import {
  GROUP,
  Resource,
  SNAPSHOT_API_VERSION,
  SNAPSHOT_GROUP,
  SNAPSHOT_VERSION,
  type SnapshotKind,
  SnapshotResource,
  VERSION,
} from "../src/index.ts";
import { newVm } from "./builders.ts";
import { type ValidationCase, validationCases } from "./validation-cases.ts";

const kubectl = (...args: string[]) =>
  promisify(execFile)(join(inject("binDir"), "kubectl"), [`--kubeconfig=${inject("kubeconfigPath")}`, ...args]);

function plural(object: unknown): string {
  const kind = (object as { kind: "VirtualMachine" | "VirtualMachineInstance" }).kind;
  return Resource[kind].plural;
}

function create(custom: CustomObjectsApi, namespace: string, object: unknown): Promise<Record<string, unknown>> {
  return custom.createNamespacedCustomObject({
    group: GROUP,
    version: VERSION,
    namespace,
    plural: plural(object),
    body: object,
    // kubectl's default: unknown fields are an error, not silently pruned.
    fieldValidation: "Strict",
  }) as Promise<Record<string, unknown>>;
}

describe("the CRDs on a real kube-apiserver", () => {
  test("are established and listed by kubectl", async () => {
    const { stdout } = await kubectl(
      "get",
      "crd",
      "virtualmachines.kubevirt.io",
      "virtualmachineinstances.kubevirt.io",
      "-o",
      "name",
    );
    expect(stdout.trim().split("\n").sort()).toEqual([
      "customresourcedefinition.apiextensions.k8s.io/virtualmachineinstances.kubevirt.io",
      "customresourcedefinition.apiextensions.k8s.io/virtualmachines.kubevirt.io",
    ]);
  });

  test("are explained by kubectl explain", async () => {
    // The API server publishes a new CRD's OpenAPI schema a moment after it is established.
    await expect
      .poll(
        async () =>
          (await kubectl("explain", "vm.spec.template.spec.domain").catch((e: unknown) => ({ stdout: String(e) })))
            .stdout,
        {
          timeout: 30_000,
          interval: 500,
        },
      )
      .toMatch(/The guest's virtual hardware[\s\S]*devices\s+<Object> -required-/);
    const { stdout } = await kubectl("explain", "vmi.spec.volumes.cloudInitNoCloud.userData");
    expect(stdout).toContain("cloud-init user data in clear text");
  });

  test("print KubeVirt's columns", async ({ custom, namespace }) => {
    for (const c of validationCases.slice(0, 2)) await create(custom, namespace, c.object);
    const header = async (resource: string) =>
      (await kubectl("get", resource, "-n", namespace)).stdout.split("\n")[0]?.split(/\s+/);
    expect(await header("vm")).toEqual(["NAME", "AGE", "STATUS", "READY"]);
    expect(await header("vmi")).toEqual(["NAME", "AGE", "PHASE", "IP", "NODENAME", "READY"]);
  });
});

describe("KubeVirt manifests", () => {
  const accepted = validationCases.filter((c) => c.apiServer === "accepts");

  test.for(accepted)("$name is stored and read back unchanged", async ({ object }, { custom, namespace }) => {
    const created = await create(custom, namespace, object);
    const name = (created.metadata as { name: string }).name;
    const read = (await custom.getNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace,
      plural: plural(object),
      name,
    })) as Record<string, unknown>;
    const sent = object as { spec: unknown; metadata: { labels?: unknown } };
    expect(read.spec).toEqual(sent.spec);
    expect((read.metadata as { labels?: unknown }).labels).toEqual(sent.metadata.labels);
  });
});

describe("schema-invalid objects", () => {
  const refused = validationCases.filter(
    (c): c is ValidationCase & { invalid: NonNullable<ValidationCase["invalid"]> } =>
      c.apiServer === "refuses" && c.invalid !== undefined,
  );

  test.for(refused)("$name is refused by the API server", async ({ object, invalid }, { custom, namespace }) => {
    const error = await create(custom, namespace, object).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ApiException);
    const apiError = error as ApiException<unknown>;
    expect([400, 422]).toContain(apiError.code);
    // The API server's message names the offending field too.
    const leaf =
      invalid.field
        .split(".")
        .pop()
        ?.replace(/\[\d+\]$/, "") ?? "";
    expect(JSON.stringify(apiError.body)).toContain(leaf);
  });
});

describe("snapshot.kubevirt.io objects", () => {
  const vm = newVm();
  const objects = {
    VirtualMachineSnapshot: {
      spec: { source: { apiGroup: GROUP, kind: "VirtualMachine", name: "vm-a" } },
      change: { path: "/spec/source/name", value: "vm-b" },
    },
    VirtualMachineSnapshotContent: {
      spec: { virtualMachineSnapshotName: "snap-a", source: { virtualMachine: { spec: vm.spec } } },
      change: { path: "/spec/source/virtualMachine/spec/runStrategy", value: "Halted" },
    },
    VirtualMachineRestore: {
      spec: { target: { apiGroup: GROUP, kind: "VirtualMachine", name: "vm-a" }, virtualMachineSnapshotName: "snap-a" },
      change: { path: "/spec/virtualMachineSnapshotName", value: "snap-b" },
    },
  } as const;

  test.for(Object.entries(objects))(
    "a %s's spec cannot change once created, its labels can",
    async ([kind, { spec, change }], { custom, namespace }) => {
      const target = {
        group: SNAPSHOT_GROUP,
        version: SNAPSHOT_VERSION,
        namespace,
        plural: SnapshotResource[kind as keyof typeof SnapshotKind].plural,
        name: "x",
      };
      await custom.createNamespacedCustomObject({
        ...target,
        body: { apiVersion: SNAPSHOT_API_VERSION, kind, metadata: { name: "x" }, spec },
      });
      // A JSON patch, the client's default.
      const patch = (op: { path: string; value: unknown }) =>
        custom.patchNamespacedCustomObject({ ...target, body: [{ op: "add", ...op }] }).then(() => undefined);
      const error = await patch(change).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ApiException);
      expect((error as ApiException<unknown>).code).toBe(422);
      expect(JSON.stringify((error as ApiException<unknown>).body)).toContain("spec is immutable after creation");
      await expect(patch({ path: "/metadata/labels", value: { a: "b" } })).resolves.toBeUndefined();
    },
  );
});
