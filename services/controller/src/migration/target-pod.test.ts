import type { VirtualMachineInstance, VirtualMachineInstanceMigration } from "@kubevirt-ts/kubevirt-api";
import { describe, expect, it } from "vitest";
import { launcherPod } from "../vmi/pod.ts";
import { migrationTargetPod } from "./target-pod.ts";

const config = {
  launcherImage: "launcher:test",
  imagePullPolicy: "IfNotPresent" as const,
  allowEmulation: true,
  evictionStrategy: "None" as const,
};
const vmi: VirtualMachineInstance = {
  apiVersion: "kubevirt.io/v1",
  kind: "VirtualMachineInstance",
  metadata: { name: "web", namespace: "ns", uid: "v1" },
  spec: {
    domain: { devices: {} },
    nodeSelector: { zone: "a" },
    affinity: { nodeAffinity: { preferredDuringSchedulingIgnoredDuringExecution: [] } },
  },
};
const migration: VirtualMachineInstanceMigration = {
  apiVersion: "kubevirt.io/v1",
  kind: "VirtualMachineInstanceMigration",
  metadata: { name: "m", namespace: "ns", uid: "m1" },
  spec: { vmiName: "web", addedNodeSelector: { "kubernetes.io/hostname": "node-b" } },
};

describe("migrationTargetPod", () => {
  it(
    "is the VMI's launcher pod, labelled with the migration, kept off the " + "VMI's nodes, on the added node selector",
    () => {
      const pod = migrationTargetPod(vmi, migration, config, new Map());
      const own = launcherPod(vmi, config);
      expect(pod.spec.containers).toEqual(own.spec.containers);
      expect(pod.metadata.labels).toEqual({ ...own.metadata.labels, "kubevirt.io/migrationJobUID": "m1" });
      expect(pod.metadata.ownerReferences).toEqual(own.metadata.ownerReferences);
      expect(pod.spec.nodeSelector).toEqual({
        zone: "a",
        "kubernetes.io/hostname": "node-b",
        "kubevirt.io/schedulable": "true",
      });
      expect(pod.spec.affinity).toEqual({
        nodeAffinity: { preferredDuringSchedulingIgnoredDuringExecution: [] },
        podAntiAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: [
            {
              labelSelector: { matchExpressions: [{ key: "kubevirt.io/created-by", operator: "In", values: ["v1"] }] },
              topologyKey: "kubernetes.io/hostname",
            },
          ],
        },
      });
    },
  );

  it(
    "takes a host-model VMI only to a node that runs the source node's host model " +
      "and its required features (KubeVirt's)",
    () => {
      const source = {
        "host-model-cpu.node.kubevirt.io/EPYC": "true",
        "host-model-required-features.node.kubevirt.io/la57": "true",
        "kubernetes.io/hostname": "node-a",
      };
      expect(migrationTargetPod(vmi, migration, config, new Map(), source).spec.nodeSelector).toEqual({
        zone: "a",
        "kubernetes.io/hostname": "node-b",
        "kubevirt.io/schedulable": "true",
        "cpu-model-migration.node.kubevirt.io/EPYC": "true",
        "cpu-feature.node.kubevirt.io/la57": "true",
      });
      // A named model selects that model wherever the VMI goes, not the source's host model.
      const named = { ...vmi, spec: { ...vmi.spec, domain: { devices: {}, cpu: { model: "Westmere" } } } };
      expect(migrationTargetPod(named, migration, config, new Map(), source).spec.nodeSelector).toEqual({
        zone: "a",
        "kubernetes.io/hostname": "node-b",
        "kubevirt.io/schedulable": "true",
        "cpu-model.node.kubevirt.io/Westmere": "true",
      });
    },
  );
});
