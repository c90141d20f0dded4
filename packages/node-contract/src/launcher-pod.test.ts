import { describe, expect, it } from "vitest";
import {
  type LauncherPodMeta,
  isLauncherPodOf,
  launcherPodIndex,
  launcherPodProblem,
  launcherPodsKeyOf,
  unownedLauncherPodReason,
} from "./launcher-pod.ts";

const vmi = { metadata: { namespace: "victim", name: "vm", uid: "vmi-uid" } };
const labels = { "kubevirt.io": "virt-launcher", "kubevirt.io/created-by": "vmi-uid" };
const ownerRef = {
  apiVersion: "kubevirt.io/v1",
  kind: "VirtualMachineInstance",
  name: "vm",
  uid: "vmi-uid",
  controller: true,
  blockOwnerDeletion: true,
};

function pod(namespace: string, meta: Partial<LauncherPodMeta["metadata"]> = {}): LauncherPodMeta {
  return { metadata: { namespace, uid: "pod-uid", labels, ownerReferences: [ownerRef], ...meta } };
}

describe("a launcher pod belongs to a VMI", () => {
  const cases: [string, LauncherPodMeta, boolean][] = [
    ["the pod the controller made: same namespace, controlled by the VMI", pod("victim"), true],
    ["a decoy in another namespace with the labels only", pod("attacker", { ownerReferences: undefined }), false],
    ["a decoy in another namespace with a forged controller reference", pod("attacker"), false],
    ["a decoy in the same namespace with the labels only", pod("victim", { ownerReferences: undefined }), false],
    [
      "a pod owned, but not controlled, by the VMI",
      pod("victim", { ownerReferences: [{ ...ownerRef, controller: false }] }),
      false,
    ],
    [
      "a pod controlled by another kind with the VMI's uid",
      pod("victim", { ownerReferences: [{ ...ownerRef, kind: "ReplicaSet", apiVersion: "apps/v1" }] }),
      false,
    ],
    [
      "a pod controlled by another API version of the kind",
      pod("victim", { ownerReferences: [{ ...ownerRef, apiVersion: "kubevirt.io/v1alpha3" }] }),
      false,
    ],
    [
      "a pod controlled by another VMI",
      pod("victim", {
        ownerReferences: [{ ...ownerRef, uid: "other" }],
        labels: { ...labels, "kubevirt.io/created-by": "other" },
      }),
      false,
    ],
    [
      "a pod whose created-by label disagrees with its controller",
      pod("victim", { labels: { ...labels, "kubevirt.io/created-by": "other" } }),
      false,
    ],
    ["a pod without the launcher label", pod("victim", { labels: { "kubevirt.io/created-by": "vmi-uid" } }), false],
  ];
  it.each(cases)("%s", (_, p, expected) => {
    expect(isLauncherPodOf(p, vmi)).toBe(expected);
    expect(launcherPodIndex(p).includes(launcherPodsKeyOf(vmi))).toBe(expected);
  });

  it("never for a VMI without a uid", () => {
    expect(
      isLauncherPodOf(
        pod("victim", {
          ownerReferences: [{ ...ownerRef, uid: "" }],
          labels: { ...labels, "kubevirt.io/created-by": "" },
        }),
        { metadata: { namespace: "victim" } },
      ),
    ).toBe(false);
  });
});

describe("why a launcher-labelled pod is unowned", () => {
  it("says nothing of the controller's own pod, nor of pods without the launcher label", () => {
    expect(unownedLauncherPodReason(pod("victim"))).toBeUndefined();
    expect(unownedLauncherPodReason(pod("victim", { labels: {}, ownerReferences: undefined }))).toBeUndefined();
  });

  it("names the claimed uid when no VMI controls the pod", () => {
    expect(unownedLauncherPodReason(pod("attacker", { ownerReferences: undefined }))).toBe(
      "The pod carries the label kubevirt.io=virt-launcher and claims VMI uid vmi-uid, but no " +
        "VirtualMachineInstance controls it (it has no controller ownerReference); kubevirt-ts ignores it.",
    );
  });

  it("names the other controller", () => {
    expect(
      unownedLauncherPodReason(
        pod("victim", { ownerReferences: [{ ...ownerRef, kind: "ReplicaSet", apiVersion: "apps/v1", name: "rs" }] }),
      ),
    ).toContain("its controller is ReplicaSet rs (apps/v1)");
  });

  it("names both uids when the label disagrees with the controller", () => {
    expect(
      unownedLauncherPodReason(pod("victim", { labels: { ...labels, "kubevirt.io/created-by": "other" } })),
    ).toContain("(other) does not name the VMI that controls it (vm, uid vmi-uid)");
  });
});

describe("a launcher pod's problem, knowing which VMIs exist", () => {
  const vmis = new Map([["victim/vm", vmi]]);
  const vmiNamed = (namespace: string, name: string) => vmis.get(`${namespace}/${name}`);

  it("is none for the pod of a VMI that exists", () => {
    expect(launcherPodProblem(pod("victim"), vmiNamed)).toBeUndefined();
  });

  it("names the missing VMI for a forged reference in another namespace", () => {
    expect(launcherPodProblem(pod("attacker"), vmiNamed)).toBe(
      "The pod names VMI vm (uid vmi-uid) as its controller, but no such VMI exists in " +
        "namespace attacker; kubevirt-ts ignores it.",
    );
  });

  it("names the missing VMI when one of that name exists with another uid", () => {
    vmis.set("attacker/vm", { metadata: { namespace: "attacker", name: "vm", uid: "someone-else" } });
    expect(launcherPodProblem(pod("attacker"), vmiNamed)).toContain("no such VMI exists in namespace attacker");
  });

  it("is the unowned reason for a pod no VMI controls", () => {
    const decoy = pod("victim", { ownerReferences: undefined });
    expect(launcherPodProblem(decoy, vmiNamed)).toBe(unownedLauncherPodReason(decoy));
  });

  it("is none for a pod without the launcher label", () => {
    expect(launcherPodProblem(pod("attacker", { labels: {} }), vmiNamed)).toBeUndefined();
  });
});
