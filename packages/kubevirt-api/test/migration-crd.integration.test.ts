import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import type { CustomObjectsApi } from "@kubernetes/client-node";
import { test } from "@kubevirt-ts/control-plane/testing";
import { describe, expect, inject } from "vitest";

// The VirtualMachineInstanceMigration CRD on a real kube-apiserver: KubeVirt's
// manifests (its user guide's) are accepted as they are, fields kubevirt-ts
// does not act on are refused with kubectl's strict field validation, and
// status is a subresource, as KubeVirt's.

const kubectl = (...args: string[]) =>
  promisify(execFile)(join(inject("binDir"), "kubectl"), [`--kubeconfig=${inject("kubeconfigPath")}`, ...args]);
const migrations = (namespace: string) => ({
  group: "kubevirt.io",
  version: "v1",
  namespace,
  plural: "virtualmachineinstancemigrations",
});
const create = (custom: CustomObjectsApi, namespace: string, body: unknown) =>
  custom.createNamespacedCustomObject({ ...migrations(namespace), body, fieldValidation: "Strict" }).then(
    () => "created",
    (e: unknown) => String((e as { body?: string }).body),
  );

describe("the VirtualMachineInstanceMigration CRD", () => {
  test("accepts KubeVirt's migrations, with and without addedNodeSelector, and kubectl finds them as vmim", async ({
    custom,
    namespace,
  }) => {
    expect(
      await create(custom, namespace, {
        apiVersion: "kubevirt.io/v1",
        kind: "VirtualMachineInstanceMigration",
        metadata: { name: "migration-job" },
        spec: { vmiName: "vmi-fedora" },
      }),
    ).toBe("created");
    expect(
      await create(custom, namespace, {
        apiVersion: "kubevirt.io/v1",
        kind: "VirtualMachineInstanceMigration",
        metadata: { name: "to-node-2" },
        spec: { vmiName: "vmi-fedora", addedNodeSelector: { "kubernetes.io/hostname": "node-2" } },
      }),
    ).toBe("created");
    const { stdout } = await kubectl("get", "vmim", "-n", namespace);
    expect(stdout.split("\n")[0]?.split(/\s+/)).toEqual(["NAME", "PHASE", "VMI"]);
    expect(stdout).toContain("to-node-2");
  });

  test.for([
    [
      "spec.sendTo (a migration to another cluster)",
      { vmiName: "vmi", sendTo: { migrationID: "x", connectURL: "y" } },
      "spec.sendTo",
    ],
    ["spec.receive", { vmiName: "vmi", receive: { migrationID: "x" } }, "spec.receive"],
    ["a misspelt field", { vmiName: "vmi", addedNodeSelectors: {} }, "spec.addedNodeSelectors"],
  ])("refuses %s by its path", async ([, spec, path], { custom, namespace }) => {
    const refusal = await create(custom, namespace, {
      apiVersion: "kubevirt.io/v1",
      kind: "VirtualMachineInstanceMigration",
      metadata: { name: "bad" },
      spec,
    });
    expect((JSON.parse(refusal) as { message: string }).message).toContain(`unknown field "${path as string}"`);
  });

  test("refuses a migration without a VMI, and keeps its status out of the object's writes", async ({
    custom,
    namespace,
  }) => {
    expect(
      await create(custom, namespace, {
        apiVersion: "kubevirt.io/v1",
        kind: "VirtualMachineInstanceMigration",
        metadata: { name: "none" },
        spec: {},
      }),
    ).toContain("spec.vmiName: Required value");
    await create(custom, namespace, {
      apiVersion: "kubevirt.io/v1",
      kind: "VirtualMachineInstanceMigration",
      metadata: { name: "m" },
      spec: { vmiName: "vmi" },
      status: { phase: "Succeeded" },
    });
    expect(
      ((await custom.getNamespacedCustomObject({ ...migrations(namespace), name: "m" })) as { status?: unknown })
        .status,
    ).toBeUndefined();
  });
});
