import { describe, expect, it } from "vitest";
import {
  customCpuModel,
  followsHostModel,
  hostModelTargetSelector,
  isNodeLabellerLabel,
  launcherNodeSelector,
} from "./node-labels.ts";

describe("the nodes a launcher pod selects, as KubeVirt's", () => {
  it("a node whose handler beats, and for a named CPU model one that has it", () => {
    expect(launcherNodeSelector(undefined)).toEqual({ "kubevirt.io/schedulable": "true" });
    expect(launcherNodeSelector("host-model")).toEqual({ "kubevirt.io/schedulable": "true" });
    expect(launcherNodeSelector("host-passthrough")).toEqual({ "kubevirt.io/schedulable": "true" });
    expect(launcherNodeSelector("Westmere")).toEqual({
      "kubevirt.io/schedulable": "true",
      "cpu-model.node.kubevirt.io/Westmere": "true",
    });
    expect(customCpuModel("")).toBeUndefined();
  });

  it(
    "a host-model VMI's migration target: the source's host model as a " + "migration model, and its required features",
    () => {
      const source = {
        "host-model-cpu.node.kubevirt.io/EPYC": "true",
        "host-model-required-features.node.kubevirt.io/la57": "true",
        "host-model-required-features.node.kubevirt.io/pku": "true",
        "cpu-model.node.kubevirt.io/Westmere": "true",
        team: "a",
      };
      expect(hostModelTargetSelector(source)).toEqual({
        "cpu-model-migration.node.kubevirt.io/EPYC": "true",
        "cpu-feature.node.kubevirt.io/la57": "true",
        "cpu-feature.node.kubevirt.io/pku": "true",
      });
      expect(hostModelTargetSelector({ team: "a" })).toBeUndefined();
      expect(followsHostModel(undefined)).toBe(true);
      expect(followsHostModel("host-model")).toBe(true);
      expect(followsHostModel("Westmere")).toBe(false);
    },
  );

  it("knows the labeller's own labels from everyone else's", () => {
    expect(isNodeLabellerLabel("cpu-feature.node.kubevirt.io/avx2")).toBe(true);
    expect(isNodeLabellerLabel("machine-type.node.kubevirt.io/q35")).toBe(true);
    expect(isNodeLabellerLabel("kubevirt.io/schedulable")).toBe(false);
    expect(isNodeLabellerLabel("node.kubernetes.io/instance-type")).toBe(false);
  });
});
