import type { V1Pod } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { plainPod, podReadySeconds } from "./plain-pod.ts";

const compute = { requests: { cpu: "100m", memory: "300Mi" } };
const tiny = { requests: { cpu: "5m" } };
const small = { requests: { cpu: "10m", memory: "16Mi" }, limits: { memory: "64Mi" } };
const launcher: V1Pod = {
  metadata: {
    name: "virt-launcher-vmi-000-abcde",
    namespace: "a",
    labels: { "kubevirt.io": "virt-launcher" },
    ownerReferences: [{ apiVersion: "kubevirt.io/v1", kind: "VirtualMachineInstance", name: "vmi-000", uid: "u" }],
  },
  spec: {
    nodeName: "kubevirt-ts-node",
    nodeSelector: { "kubevirt.io/schedulable": "true" },
    securityContext: { runAsUser: 107, runAsNonRoot: true },
    volumes: [
      { name: "tools", emptyDir: {} },
      { name: "disks", emptyDir: {} },
      { name: "cloud-init", secret: { secretName: "s" } },
    ],
    initContainers: [
      { name: "container-disk-binary", image: "launcher:1", command: ["cp", "a", "b"], resources: small },
      { name: "volume-containerdisk", image: "blank-disk:1", command: ["/tools/copy", "/disk"], resources: small },
      { name: "guest-console-log", image: "launcher:1", restartPolicy: "Always", command: ["tail"], resources: tiny },
    ],
    containers: [
      {
        name: "compute",
        image: "launcher:1",
        imagePullPolicy: "IfNotPresent",
        env: [{ name: "A", value: "1" }],
        resources: compute,
        readinessProbe: { exec: { command: ["x"] } },
        volumeMounts: [
          { name: "disks", mountPath: "/disks" },
          { name: "cloud-init", mountPath: "/ci" },
        ],
      },
    ],
  },
};

describe("a plain pod of the launcher pod's shape", () => {
  const pod = plainPod(launcher, "pod-000", "b");

  it("has the launcher pod's containers, names, resources and emptyDirs, running true or sleep in its image", () => {
    expect(pod.spec?.initContainers?.map((c) => [c.name, c.image, c.command, c.resources, c.restartPolicy])).toEqual([
      ["container-disk-binary", "launcher:1", ["true"], small, undefined],
      ["volume-containerdisk", "launcher:1", ["true"], small, undefined],
      ["guest-console-log", "launcher:1", ["sleep", "100000"], tiny, "Always"],
    ]);
    const main = pod.spec?.containers.map((c) => [c.name, c.image, c.command, c.resources, c.readinessProbe, c.env]);
    expect(main).toEqual([["compute", "launcher:1", ["sleep", "100000"], compute, undefined, undefined]]);
    expect(pod.spec?.volumes).toEqual([
      { name: "tools", emptyDir: {} },
      { name: "disks", emptyDir: {} },
    ]);
    expect(pod.spec?.containers[0]?.volumeMounts).toEqual([{ name: "disks", mountPath: "/disks" }]);
    expect(pod.spec?.nodeSelector).toEqual({ "kubevirt.io/schedulable": "true" });
    expect(pod.spec?.securityContext).toEqual({ runAsUser: 107, runAsNonRoot: true });
  });

  it("is nobody's launcher: unscheduled, not owned, not labelled as one", () => {
    expect(pod.spec?.nodeName).toBeUndefined();
    expect(pod.metadata).toEqual({ name: "pod-000", namespace: "b", labels: { "kubevirt-ts.io/bench": "true" } });
    expect(launcher.spec?.nodeName).toBe("kubevirt-ts-node");
  });

  it("is Ready at its Ready condition's transition, by the server's clock", () => {
    const ready: V1Pod = {
      metadata: { creationTimestamp: new Date("2026-11-27T10:00:00Z") },
      status: { conditions: [{ type: "Ready", status: "True", lastTransitionTime: new Date("2026-11-27T10:00:04Z") }] },
    };
    expect(podReadySeconds(ready)).toBe(4);
    const notReady: V1Pod = { metadata: ready.metadata, status: { conditions: [{ type: "Ready", status: "False" }] } };
    expect(podReadySeconds(notReady)).toBeUndefined();
  });
});
