import type { VirtualMachine, VirtualMachineInstance } from "@kubevirt-ts/kubevirt-api";
import { describe, expect, it } from "vitest";
import { ActionRefusal } from "../vm-actions.ts";
import { type ObjectGraphNode, buildObjectGraph, filterObjectGraph, parseObjectGraphOptions } from "./object-graph.ts";

const ref = (apiGroup: string, kind: string, name: string, namespace = "ns") => ({ apiGroup, kind, name, namespace });
const labels = (type: string) => ({ "kubevirt.io/dependency-type": type });

const template = {
  domain: { devices: {}, firmware: { bootloader: { efi: { persistent: true } } } },
  accessCredentials: [
    {
      sshPublicKey: {
        source: { secret: { secretName: "keys" } },
        propagationMethod: { qemuGuestAgent: { users: ["debian"] } },
      },
    },
    { userPassword: { source: { secret: { secretName: "passwords" } }, propagationMethod: { qemuGuestAgent: {} } } },
  ],
  volumes: [
    { name: "root", dataVolume: { name: "root-dv" } },
    { name: "data", persistentVolumeClaim: { claimName: "data" } },
    { name: "config", configMap: { name: "settings" } },
    { name: "secret", secret: { secretName: "tls" } },
    { name: "cloudinit", cloudInitNoCloud: { secretRef: { name: "userdata" }, networkDataSecretRef: { name: "net" } } },
    { name: "scratch", emptyDisk: { capacity: "1Gi" } },
  ],
} as unknown as VirtualMachine["spec"]["template"]["spec"];

const vm = {
  apiVersion: "kubevirt.io/v1",
  kind: "VirtualMachine",
  metadata: { name: "web", namespace: "ns" },
  spec: {
    instancetype: { name: "u1.small" },
    preference: { kind: "VirtualMachinePreference", name: "debian", revisionName: "web-debian-1" },
    template: { spec: template },
  },
  status: {
    created: true,
    instancetypeRef: { name: "u1.small", controllerRevisionRef: { name: "web-u1.small-1" } },
  },
} as unknown as VirtualMachine;

describe("buildObjectGraph, KubeVirt's object graph of what kubevirt-ts has", () => {
  const graph = buildObjectGraph({ vm, launcherPod: "virt-launcher-web-abcde" });

  it("roots a VM's graph at it: its VMI with the launcher pod, instancetype, preference, secrets, volumes", () => {
    expect(graph).toEqual({
      objectReference: ref("kubevirt.io", "VirtualMachine", "web"),
      labels: labels("compute"),
      children: [
        {
          objectReference: ref("kubevirt.io", "VirtualMachineInstance", "web"),
          labels: labels("compute"),
          children: [{ objectReference: ref("", "Pod", "virt-launcher-web-abcde"), labels: labels("compute") }],
        },
        // A cluster instancetype by default, optional; its revision from the status.
        {
          objectReference: ref("instancetype.kubevirt.io", "VirtualMachineClusterInstancetype", "u1.small", ""),
          labels: labels("config"),
          optional: true,
        },
        { objectReference: ref("apps", "ControllerRevision", "web-u1.small-1"), labels: labels("config") },
        // A namespaced preference; before the status names its revision, the spec's revisionName.
        {
          objectReference: ref("instancetype.kubevirt.io", "VirtualMachinePreference", "debian"),
          labels: labels("config"),
          optional: true,
        },
        { objectReference: ref("apps", "ControllerRevision", "web-debian-1"), labels: labels("config") },
        { objectReference: ref("", "Secret", "keys"), labels: labels("config") },
        { objectReference: ref("", "Secret", "passwords"), labels: labels("config") },
        {
          objectReference: ref("cdi.kubevirt.io", "DataVolume", "root-dv"),
          labels: labels("storage"),
          children: [{ objectReference: ref("", "PersistentVolumeClaim", "root-dv"), labels: labels("storage") }],
        },
        { objectReference: ref("", "PersistentVolumeClaim", "data"), labels: labels("storage") },
        { objectReference: ref("", "ConfigMap", "settings"), labels: labels("config") },
        { objectReference: ref("", "Secret", "tls"), labels: labels("config") },
        { objectReference: ref("", "Secret", "userdata"), labels: labels("config") },
        { objectReference: ref("", "Secret", "net"), labels: labels("config") },
        // Persistent EFI variables: the VM's backend-storage claim.
        {
          objectReference: ref("", "PersistentVolumeClaim", "persistent-state-for-web"),
          labels: labels("storage"),
        },
      ],
    });
  });

  it("leaves out the VMI of a VM that has none, and a VMI's graph has the pod, secrets and volumes", () => {
    const stopped = buildObjectGraph({ vm: { ...vm, status: {} } });
    expect(stopped.children?.map((c) => c.objectReference.kind)).not.toContain("VirtualMachineInstance");
    const vmi = {
      metadata: { name: "web", namespace: "ns" },
      spec: { ...template, volumes: [{ name: "data", persistentVolumeClaim: { claimName: "data" } }] },
    } as unknown as VirtualMachineInstance;
    expect(
      buildObjectGraph({ vmi, launcherPod: "virt-launcher-web-abcde" }).children?.map(
        (c) => `${c.objectReference.kind}/${c.objectReference.name}`,
      ),
    ).toEqual([
      "Pod/virt-launcher-web-abcde",
      "Secret/keys",
      "Secret/passwords",
      "PersistentVolumeClaim/data",
      "PersistentVolumeClaim/persistent-state-for-web",
    ]);
  });

  const names = (node: ObjectGraphNode): string[] =>
    (node.children ?? []).flatMap((c) => [c.objectReference.name, ...names(c)]);

  it("drops optional nodes only when includeOptionalNodes is false", () => {
    expect(names(filterObjectGraph(graph, {}))).toContain("u1.small");
    expect(names(filterObjectGraph(graph, { includeOptionalNodes: true }))).toContain("debian");
    const without = names(filterObjectGraph(graph, { includeOptionalNodes: false }));
    expect(without).not.toContain("u1.small");
    expect(without).not.toContain("debian");
    expect(without).toContain("web-u1.small-1");
  });

  it("keeps the nodes a label selector matches; a node left out takes its children along", () => {
    const storage = filterObjectGraph(graph, {
      labelSelector: { matchLabels: { "kubevirt.io/dependency-type": "storage" } },
    });
    expect(names(storage)).toEqual(["root-dv", "root-dv", "data", "persistent-state-for-web"]);
    // The VMI is compute: its pod goes with it even under a selector that would match the pod alone.
    const notConfig = filterObjectGraph(graph, {
      labelSelector: {
        matchExpressions: [{ key: "kubevirt.io/dependency-type", operator: "NotIn", values: ["config", "storage"] }],
      },
    });
    expect(names(notConfig)).toEqual(["web", "virt-launcher-web-abcde"]);
  });
});

describe("parseObjectGraphOptions", () => {
  it("reads virtctl's body, and an empty one as the defaults", () => {
    expect(parseObjectGraphOptions("")).toEqual({});
    expect(
      parseObjectGraphOptions(
        JSON.stringify({
          includeOptionalNodes: false,
          labelSelector: { matchLabels: { "kubevirt.io/dependency-type": "storage" } },
        }),
      ),
    ).toEqual({
      includeOptionalNodes: false,
      labelSelector: { matchLabels: { "kubevirt.io/dependency-type": "storage" } },
    });
  });

  it.each([
    ["{", "Can not unmarshal Request body to struct"],
    ['{"includeOptionalNodes": "no"}', "includeOptionalNodes must be true or false"],
    ['{"labelSelector": {"matchLabels": {"a": 1}}}', "labelSelector: matchLabels must map label names to values"],
    [
      '{"labelSelector": {"matchExpressions": [{"key": "a", "operator": "Near"}]}}',
      "labelSelector: matchExpressions[0].operator must be one of In, NotIn, Exists, DoesNotExist",
    ],
    [
      '{"labelSelector": {"matchExpressions": [{"key": "a", "operator": "In"}]}}',
      "labelSelector: matchExpressions[0].values must be set for In and NotIn, and only for them",
    ],
  ])("refuses %s with a 400 naming the field", (body, message) => {
    expect(() => parseObjectGraphOptions(body)).toThrow(ActionRefusal);
    expect(() => parseObjectGraphOptions(body)).toThrow(message);
  });
});
