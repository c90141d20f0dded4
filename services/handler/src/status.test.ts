import { PhaseOwner, isAllowedTransition } from "@kubevirt-ts/vm-rules";
import type { VirtualMachineInstance } from "@kubevirt-ts/kubevirt-api";
import { domainStatus } from "@kubevirt-ts/launcher-protocol";
import { describe, expect, it } from "vitest";
import { handlerStatus, launcherFailedStatus, stopOverdue } from "./status.ts";

const now = new Date("2026-01-01T00:01:00Z");
const vmi = (phase: "Scheduled" | "Running"): VirtualMachineInstance => ({
  apiVersion: "kubevirt.io/v1",
  kind: "VirtualMachineInstance",
  metadata: { name: "vm", namespace: "ns" },
  spec: { domain: { devices: { interfaces: [{ name: "default", masquerade: {} }] } } },
  status: {
    phase,
    nodeName: "node-1",
    phaseTransitionTimestamps: [{ phase, phaseTransitionTimestamp: "2026-01-01T00:00:00Z" }],
  },
});
const pod = { podIP: "198.18.0.7", podIPs: [{ ip: "198.18.0.7" }] };

describe("handlerStatus", () => {
  it.each([
    ["a running domain: Running", "Scheduled", "Running", "Running"],
    ["a paused domain stays Running", "Running", "Paused", "Running"],
    ["a domain that stopped: Succeeded", "Running", "Shutoff", "Succeeded"],
    ["a crashed domain: Failed", "Running", "Crashed", "Failed"],
    ["no domain yet: unchanged", "Scheduled", "NoDomain", "Scheduled"],
  ] as const)("%s", (_name, from, state, phase) => {
    expect(handlerStatus(vmi(from), { state }, pod, now).phase).toBe(phase);
  });

  // Every phase the handler acts on against every state a launcher may report: it moves only along the state machine's
  // handler transitions.
  const states = domainStatus.shape.state.options;
  it.each((["Scheduled", "Running"] as const).flatMap((from) => states.map((state) => [from, state] as const)))(
    "from %s with a domain %s it follows the state machine",
    (from, state) => {
      const { phase } = handlerStatus(vmi(from), { state }, pod, now);
      if (phase !== from) expect(isAllowedTransition(from, phase ?? from, PhaseOwner.Handler)).toBe(true);
    },
  );

  it("reports each volume's device in the guest once the domain runs", () => {
    const given = vmi("Scheduled");
    given.spec.domain.devices.disks = [
      { name: "root", disk: { bus: "virtio" } },
      { name: "data", disk: { bus: "virtio" } },
    ];
    given.status = {
      ...given.status,
      volumeStatus: [
        { name: "data", target: "", persistentVolumeClaimInfo: { claimName: "data" } },
        { name: "root", target: "" },
      ],
    };
    expect(handlerStatus(given, { state: "Running" }, pod, now).volumeStatus).toEqual([
      { name: "data", target: "vdb", persistentVolumeClaimInfo: { claimName: "data" } },
      { name: "root", target: "vda" },
    ]);
    expect(handlerStatus(given, { state: "NoDomain" }, pod, now).volumeStatus?.map((v) => v.target)).toEqual(["", ""]);
  });

  it("records when the VMI started running", () => {
    expect(handlerStatus(vmi("Scheduled"), { state: "Running" }, pod, now).phaseTransitionTimestamps?.at(-1)).toEqual({
      phase: "Running",
      phaseTransitionTimestamp: "2026-01-01T00:01:00Z",
    });
  });

  it("reports Ready, the pod's address on each interface, and software emulation", () => {
    const status = handlerStatus(vmi("Scheduled"), { state: "Running", domainType: "qemu" }, pod, now);
    expect(status.conditions?.map((c) => [c.type, c.status])).toEqual([
      ["Ready", "True"],
      ["SoftwareEmulation", "True"],
    ]);
    expect(status.interfaces).toEqual([
      { name: "default", ipAddress: "198.18.0.7", ipAddresses: ["198.18.0.7"], infoSource: "domain" },
    ]);
  });

  it("reports no software emulation for a KVM domain, and drops it once the domain runs with KVM", () => {
    expect(
      handlerStatus(vmi("Scheduled"), { state: "Running", domainType: "kvm" }, pod, now).conditions?.map((c) => c.type),
    ).toEqual(["Ready"]);
    const emulated = handlerStatus(vmi("Scheduled"), { state: "Running", domainType: "qemu" }, pod, now);
    // A domain whose type the launcher did not say keeps what was reported.
    expect(
      handlerStatus({ ...vmi("Running"), status: emulated }, { state: "Running" }, pod, now).conditions?.map(
        (c) => c.type,
      ),
    ).toContain("SoftwareEmulation");
    expect(
      handlerStatus(
        { ...vmi("Running"), status: emulated },
        { state: "Running", domainType: "kvm" },
        pod,
        now,
      ).conditions?.map((c) => c.type),
    ).toEqual(["Ready"]);
  });

  it(
    "with a readiness probe, reports the guest Ready only while its launcher pod is, " +
      "whose readiness the kubelet takes from the probe",
    () => {
      const probed = {
        ...vmi("Running"),
        spec: { ...vmi("Running").spec, readinessProbe: { tcpSocket: { port: 22 } } },
      };
      const notReady = handlerStatus(
        probed,
        { state: "Running" },
        { ...pod, conditions: [{ type: "Ready", status: "False", reason: "ContainersNotReady" }] },
        now,
      );
      expect(notReady.conditions?.find((c) => c.type === "Ready")).toMatchObject({
        status: "False",
        reason: "GuestNotReady",
      });
      const ready = handlerStatus(
        { ...probed, status: notReady },
        { state: "Running" },
        { ...pod, conditions: [{ type: "Ready", status: "True" }] },
        now,
      );
      expect(ready.conditions?.find((c) => c.type === "Ready")).toMatchObject({ status: "True" });
      // Without a probe, the pod's readiness is the launcher's alone, and the guest is ready once it runs.
      expect(
        handlerStatus(
          vmi("Running"),
          { state: "Running" },
          { ...pod, conditions: [{ type: "Ready", status: "False" }] },
          now,
        ).conditions?.find((c) => c.type === "Ready"),
      ).toMatchObject({ status: "True" });
    },
  );

  it("reports a paused guest as not ready and Paused", () => {
    const status = handlerStatus(vmi("Running"), { state: "Paused" }, pod, now);
    expect(status.conditions?.find((c) => c.type === "Ready")).toMatchObject({ status: "False", reason: "Paused" });
    expect(status.conditions?.find((c) => c.type === "Paused")).toMatchObject({ status: "True" });
  });

  it("reports the guest's OS and AgentConnected when its agent answered, and forgets both when it stops", () => {
    const os = {
      id: "debian",
      prettyName: "Debian GNU/Linux 12 (bookworm)",
      versionId: "12",
      kernelRelease: "6.1.0-56-cloud-amd64",
    };
    const running = handlerStatus(vmi("Running"), { state: "Running" }, pod, now, os);
    expect(running.guestOSInfo).toEqual(os);
    expect(running.conditions?.find((c) => c.type === "AgentConnected")).toMatchObject({ status: "True" });
    const stopped = handlerStatus({ ...vmi("Running"), status: running }, { state: "Shutoff" }, pod, now);
    expect(stopped.guestOSInfo).toEqual({});
    expect(stopped.conditions?.find((c) => c.type === "AgentConnected")).toBeUndefined();
  });

  it("writes guestOSInfo as {} on a running guest without an agent, as KubeVirt's struct value always is", () => {
    const noAgent = handlerStatus(vmi("Running"), { state: "Running" }, pod, now);
    expect(JSON.parse(JSON.stringify(noAgent))).toMatchObject({ guestOSInfo: {}, runtimeUser: 107 });
    expect(noAgent.conditions?.some((c) => c.type === "AgentConnected")).toBe(false);
  });

  it("reports frozen file systems while the launcher says so, and nothing once they thaw", () => {
    const frozen = handlerStatus(vmi("Running"), { state: "Running", fsFreezeStatus: "frozen" }, pod, now);
    expect(frozen.fsFreezeStatus).toBe("frozen");
    expect(
      handlerStatus({ ...vmi("Running"), status: frozen }, { state: "Running" }, pod, now).fsFreezeStatus,
    ).toBeUndefined();
  });

  it(
    "says whether the guest has the access credentials given through its agent, " +
      "with the launcher's reason when not",
    () => {
      const failed = handlerStatus(
        vmi("Running"),
        {
          state: "Running",
          accessCredentials: {
            synchronized: false,
            message: "the guest agent refused the access credentials: no such user",
          },
        },
        pod,
        now,
      );
      expect(failed.conditions?.find((c) => c.type === "AccessCredentialsSynchronized")).toMatchObject({
        status: "False",
        reason: "AccessCredentialsSyncFailed",
        message: "the guest agent refused the access credentials: no such user",
      });
      const synced = handlerStatus(
        { ...vmi("Running"), status: failed },
        { state: "Running", accessCredentials: { synchronized: true, message: "" } },
        pod,
        now,
      );
      expect(synced.conditions?.find((c) => c.type === "AccessCredentialsSynchronized")).toMatchObject({
        status: "True",
        reason: "AccessCredentialsSyncSuccess",
      });
      expect(
        handlerStatus(vmi("Running"), { state: "Running" }, pod, now).conditions?.some(
          (c) => c.type === "AccessCredentialsSynchronized",
        ),
      ).toBe(false);
    },
  );

  it("says on the VMI that its launcher broke the protocol, and clears it once the launcher answers", () => {
    const failure = {
      reason: "LauncherProtocolViolation",
      message: `the launcher broke the protocol (InvalidJson): ${"x".repeat(5000)}`,
    };
    const failed = launcherFailedStatus(vmi("Scheduled"), failure, now);
    expect(failed.phase).toBe("Scheduled");
    const condition = failed.conditions?.find((c) => c.type === "Synchronized");
    expect(condition).toMatchObject({ status: "False", reason: "LauncherProtocolViolation" });
    expect(condition?.message).toHaveLength(1024);
    expect(
      launcherFailedStatus({ ...vmi("Scheduled"), status: failed }, failure, new Date(now.getTime() + 5_000)),
    ).toEqual(failed);
    const recovered = handlerStatus({ ...vmi("Scheduled"), status: failed }, { state: "Running" }, pod, now);
    expect(recovered.conditions?.find((c) => c.type === "Synchronized")).toBeUndefined();
  });

  it("leaves a Synchronized condition it did not set", () => {
    const pulling = {
      ...vmi("Scheduled"),
      status: {
        ...vmi("Scheduled").status,
        conditions: [{ type: "Synchronized", status: "False" as const, reason: "ErrImagePull" }],
      },
    };
    expect(
      handlerStatus(pulling, { state: "NoDomain" }, pod, now).conditions?.find((c) => c.type === "Synchronized"),
    ).toMatchObject({ reason: "ErrImagePull" });
  });

  it("changes nothing when nothing changed", () => {
    const first = handlerStatus(vmi("Scheduled"), { state: "Running", domainType: "qemu" }, pod, now);
    const again = handlerStatus(
      { ...vmi("Scheduled"), status: first },
      { state: "Running", domainType: "qemu" },
      pod,
      new Date(now.getTime() + 10_000),
    );
    expect(again).toEqual(first);
  });
});

describe("stopOverdue", () => {
  const deleted = (grace: number | undefined) =>
    ({
      metadata: { name: "web", deletionTimestamp: "2026-01-01T00:00:00Z" },
      spec: { ...(grace === undefined ? {} : { terminationGracePeriodSeconds: grace }), domain: { devices: {} } },
    }) as unknown as VirtualMachineInstance;
  it("is due once the grace period since the deletion is over, at once when it was cut to 0", () => {
    expect(stopOverdue(deleted(600), new Date("2026-01-01T00:01:00Z"))).toBe(false);
    expect(stopOverdue(deleted(600), new Date("2026-01-01T00:10:00Z"))).toBe(true);
    expect(stopOverdue(deleted(0), new Date("2026-01-01T00:00:00Z"))).toBe(true);
    expect(stopOverdue(deleted(undefined), new Date("2026-01-01T00:00:29Z"))).toBe(false);
    expect(stopOverdue({ ...deleted(0), metadata: { name: "web" } }, new Date())).toBe(false);
  });
});
