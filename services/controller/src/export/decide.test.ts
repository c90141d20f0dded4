import type { PersistentVolumeClaim, Pod } from "@kubevirt-ts/kube";
import type {
  VirtualMachine,
  VirtualMachineExport,
  VirtualMachineInstance,
  VirtualMachineSnapshot,
  VirtualMachineSnapshotContent,
} from "@kubevirt-ts/kubevirt-api";
import { describe, expect, it } from "vitest";
import {
  EXPORT_CERT_ANNOTATION,
  type SourceObservation,
  exportDeadline,
  exportPod,
  exportSource,
  exportStatus,
  linkBases,
  vmManifests,
} from "./decide.ts";

const NOW = new Date("2026-11-28T12:00:00Z");
const exportOf = (kind: string, name: string, more: Partial<VirtualMachineExport["spec"]> = {}) =>
  ({
    apiVersion: "export.kubevirt.io/v1beta1",
    kind: "VirtualMachineExport",
    metadata: { name: "e", namespace: "ns", uid: "u-e", creationTimestamp: "2026-11-28T11:00:00Z" },
    spec: { source: { kind, name }, ...more },
  }) as VirtualMachineExport;

const vm: VirtualMachine = {
  apiVersion: "kubevirt.io/v1",
  kind: "VirtualMachine",
  metadata: { name: "vm", namespace: "ns", labels: { app: "web" } },
  spec: {
    runStrategy: "Halted",
    template: {
      spec: {
        domain: { devices: {} },
        volumes: [
          { name: "root", persistentVolumeClaim: { claimName: "root-pvc" } },
          { name: "data", dataVolume: { name: "data-dv" } },
          { name: "boot", containerDisk: { image: "img" } },
        ],
      },
    },
  },
};

const bound = (name: string): PersistentVolumeClaim => ({
  metadata: { name, namespace: "ns", annotations: { "volume.kubernetes.io/selected-node": "node-a" } },
  spec: { resources: { requests: { storage: "2Gi" } } },
  status: { phase: "Bound" },
});

const observation = (exp: VirtualMachineExport, more: Partial<SourceObservation> = {}): SourceObservation => ({
  exp,
  vm,
  claim: bound,
  dataVolumePhase: () => "Succeeded",
  claimUser: () => undefined,
  ...more,
});

describe("exportSource", () => {
  it("exports a stopped VM's claims, its DataVolumes' included, and not its container disk", () => {
    expect(exportSource(observation(exportOf("VirtualMachine", "vm")))).toMatchObject({
      state: "available",
      claims: [
        { name: "root-pvc", claim: "root-pvc" },
        { name: "data-dv", claim: "data-dv" },
      ],
      node: "node-a",
    });
  });

  it("waits while the VM runs, while a DataVolume fills, and for a VM that does not exist", () => {
    const exp = exportOf("VirtualMachine", "vm");
    const running = { status: { phase: "Running" } } as VirtualMachineInstance;
    expect(exportSource(observation(exp, { vmi: running }))).toEqual({
      state: "waiting",
      reason: "InUse",
      message: "Virtual Machine ns/vm is running",
    });
    const stopped = { status: { phase: "Succeeded" } } as VirtualMachineInstance;
    expect(exportSource(observation(exp, { vmi: stopped })).state).toBe("available");
    expect(exportSource(observation(exp, { dataVolumePhase: () => "ImportInProgress" }))).toMatchObject({
      state: "waiting",
      reason: "VolumesNotPopulated",
    });
    expect(exportSource(observation(exp, { vm: undefined }))).toMatchObject({ reason: "VMNotFound" });
  });

  it("skips a VM with no claim, as KubeVirt's VMNoVolumes", () => {
    const diskless = {
      ...vm,
      spec: {
        template: { spec: { domain: { devices: {} }, volumes: [{ name: "boot", containerDisk: { image: "i" } }] } },
      },
    } as VirtualMachine;
    expect(exportSource(observation(exportOf("VirtualMachine", "vm"), { vm: diskless }))).toMatchObject({
      state: "skipped",
      reason: "VMNoVolumes",
    });
  });

  it("exports a claim no pod uses, and waits while one does or while it is unbound", () => {
    const exp = exportOf("PersistentVolumeClaim", "root-pvc");
    expect(exportSource(observation(exp))).toMatchObject({ state: "available", claims: [{ name: "root-pvc" }] });
    expect(exportSource(observation(exp, { claimUser: () => "virt-launcher-vm-abc" }))).toEqual({
      state: "waiting",
      reason: "InUse",
      message: "pvc ns/root-pvc is in use by pod virt-launcher-vm-abc",
    });
    expect(
      exportSource(observation(exp, { claim: (n) => ({ ...bound(n), status: { phase: "Pending" } }) })),
    ).toMatchObject({ reason: "PVCPending" });
    expect(exportSource(observation(exp, { claim: () => undefined }))).toMatchObject({ reason: "PVCNotFound" });
  });

  it("exports a ready snapshot's copies under the names of the claims they copied, with the VM as it was", () => {
    const exp = exportOf("VirtualMachineSnapshot", "snap");
    const content = {
      apiVersion: "snapshot.kubevirt.io/v1beta1",
      kind: "VirtualMachineSnapshotContent",
      metadata: {
        name: "c",
        namespace: "ns",
        annotations: { "snapshot.kubevirt-ts.io/volume-copy-kind": "PersistentVolumeClaim" },
      },
      spec: {
        source: { virtualMachine: { metadata: { name: "vm" }, spec: vm.spec } },
        volumeBackups: [
          {
            volumeName: "root",
            persistentVolumeClaim: { metadata: { name: "root-pvc" } },
            volumeSnapshotName: "copy-root",
          },
        ],
      },
    } as VirtualMachineSnapshotContent;
    const ready = { status: { readyToUse: true } } as VirtualMachineSnapshot;
    const source = exportSource(observation(exp, { snapshot: ready, content }));
    expect(source).toMatchObject({ state: "available", claims: [{ name: "root-pvc", claim: "copy-root" }] });
    expect(source.state === "available" && source.vm?.metadata.name).toBe("vm");
    const taking = { status: { readyToUse: false } } as VirtualMachineSnapshot;
    expect(exportSource(observation(exp, { snapshot: taking, content }))).toMatchObject({ state: "waiting" });
  });
});

describe("exportDeadline", () => {
  it("is the creation plus two hours, the spec's TTL, or a week at most", () => {
    expect(exportDeadline(exportOf("VirtualMachine", "vm"), NOW).toISOString()).toBe("2026-11-28T13:00:00.000Z");
    expect(exportDeadline(exportOf("VirtualMachine", "vm", { ttlDuration: "1h30m" }), NOW).toISOString()).toBe(
      "2026-11-28T12:30:00.000Z",
    );
    expect(exportDeadline(exportOf("VirtualMachine", "vm", { ttlDuration: "9999h" }), NOW).toISOString()).toBe(
      "2026-12-05T11:00:00.000Z",
    );
  });
});

describe("exportStatus", () => {
  const exp = exportOf("VirtualMachine", "vm");
  const source = exportSource(observation(exp));
  const bases = linkBases(exp, "https://dash.example:30080/");
  const pod = (phase: string, ready: boolean): Pod => ({
    metadata: { name: "virt-export-e", annotations: { [EXPORT_CERT_ANNOTATION]: "POD-CERT" } },
    status: { phase, conditions: [{ type: "Ready", status: ready ? "True" : "False" }] },
  });
  const statusOf = (p?: Pod, routed = true) =>
    exportStatus({
      exp,
      source,
      pod: p,
      routed,
      bases,
      externalCert: "DASH-CERT",
      deadline: new Date("2026-11-28T13:00:00Z"),
      now: NOW,
    });

  it("is Ready with KubeVirt's links once the pod is ready: raw and gzip per claim, manifests for a VM", () => {
    const status = statusOf(pod("Running", true));
    expect(status).toMatchObject({
      phase: "Ready",
      serviceName: "virt-export-e",
      tokenSecretRef: "export-token-e",
      virtualMachineName: "vm",
      ttlExpirationTime: "2026-11-28T13:00:00.000Z",
      conditions: [{ type: "Ready", status: "True", reason: "PodReady" }],
    });
    expect(status.links?.internal).toEqual({
      cert: "POD-CERT",
      volumes: [
        {
          name: "root-pvc",
          formats: [
            { format: "raw", url: "https://virt-export-e.ns.svc/volumes/root-pvc/disk.img" },
            { format: "gzip", url: "https://virt-export-e.ns.svc/volumes/root-pvc/disk.img.gz" },
          ],
        },
        expect.objectContaining({ name: "data-dv" }),
      ],
      manifests: [
        { type: "all", url: "https://virt-export-e.ns.svc/internal/manifests/all" },
        { type: "auth-header-secret", url: "https://virt-export-e.ns.svc/internal/manifests/secret" },
      ],
    });
    expect(status.links?.external?.cert).toBe("DASH-CERT");
    expect(status.links?.external?.volumes?.[0]?.formats?.[1]?.url).toBe(
      "https://dash.example:30080/api/export.kubevirt.io/v1/namespaces/ns/virtualmachineexports/e/volumes/root-pvc/disk.img.gz",
    );
    expect(status.links?.external?.manifests?.[0]?.url).toMatch(
      /\/virtualmachineexports\/e\/external\/manifests\/all$/,
    );
  });

  it("is Pending without links until the pod is ready, and Terminated once it ended", () => {
    expect(statusOf(undefined)).toMatchObject({ phase: "Pending", conditions: [{ reason: "Initializing" }] });
    const pending = statusOf(pod("Running", false));
    expect(pending).toMatchObject({ phase: "Pending", conditions: [{ reason: "PodPending" }] });
    expect(pending.links).toBeUndefined();
    expect(statusOf(pod("Succeeded", false))).toMatchObject({ phase: "Terminated" });
  });

  it("stays Pending while the Service does not route to the ready pod: its links would not answer yet", () => {
    const waiting = statusOf(pod("Running", true), false);
    expect(waiting).toMatchObject({ phase: "Pending", conditions: [{ status: "False", reason: "PodPending" }] });
    expect(waiting.conditions?.[0]?.message).toContain("virt-export-e");
    expect(waiting.links).toBeUndefined();
  });

  it("has no external link without the dashboard's address", () => {
    const status = exportStatus({
      exp,
      source,
      pod: pod("Running", true),
      routed: true,
      bases: linkBases(exp, undefined),
      externalCert: "",
      deadline: NOW,
      now: NOW,
    });
    expect(status.links?.internal).toBeDefined();
    expect(status.links?.external).toBeUndefined();
  });
});

describe("vmManifests", () => {
  it("brings each exported claim back as a DataVolume template reading the link's gzip URL with the token", () => {
    const exp = exportOf("VirtualMachine", "vm");
    const source = exportSource(observation(exp));
    if (source.state !== "available") throw new Error("the source should be available");
    const [configMap, manifest] = vmManifests(exp, vm, source.claims, bound, "https://base", "CERT") as [
      { kind: string; data: Record<string, string> },
      VirtualMachine,
    ];
    expect(configMap).toMatchObject({ kind: "ConfigMap", data: { "ca.pem": "CERT" } });
    expect(manifest.metadata).toEqual({ name: "vm", labels: { app: "web" } });
    expect(manifest.spec.template.spec.volumes).toEqual([
      { name: "root", dataVolume: { name: "root-pvc" } },
      { name: "data", dataVolume: { name: "data-dv" } },
      { name: "boot", containerDisk: { image: "img" } },
    ]);
    expect(manifest.spec.dataVolumeTemplates?.[0]).toEqual({
      metadata: { name: "root-pvc" },
      spec: {
        source: {
          http: {
            url: "https://base/volumes/root-pvc/disk.img.gz",
            certConfigMap: "export-ca-cm-e",
            secretExtraHeaders: ["header-secret-e"],
          },
        },
        storage: { resources: { requests: { storage: "2Gi" } } },
      },
    });
  });
});

describe("exportPod", () => {
  it("mounts each claim read-only with its token and certificate, on the claims' node", () => {
    const exp = exportOf("PersistentVolumeClaim", "root-pvc");
    const pod = exportPod({
      exp,
      claims: [{ name: "root-pvc", claim: "root-pvc" }],
      node: "node-a",
      image: "importer:1",
      imagePullPolicy: "IfNotPresent",
      certPem: "CERT",
      deadline: new Date("2026-11-28T13:00:00Z"),
    });
    expect(pod.metadata.ownerReferences?.[0]).toMatchObject({
      kind: "VirtualMachineExport",
      uid: "u-e",
      controller: true,
    });
    expect(pod.metadata.labels).toEqual({ "kubevirt.io.virt-export-service": "virt-export-e" });
    expect(pod.spec?.volumes).toEqual([
      { name: "volume-0", persistentVolumeClaim: { claimName: "root-pvc", readOnly: true } },
      { name: "token", secret: { secretName: "export-token-e" } },
      { name: "cert", secret: { secretName: "virt-export-e-tls" } },
    ]);
    const container = pod.spec?.containers[0];
    expect(container?.volumeMounts?.every((m) => m.readOnly === true)).toBe(true);
    expect(container?.env).toContainEqual({
      name: "EXPORT_VOLUMES",
      value: JSON.stringify([{ name: "root-pvc", dir: "/export-volumes/root-pvc" }]),
    });
    expect(container?.env).toContainEqual({ name: "EXPORT_DEADLINE", value: "2026-11-28T13:00:00.000Z" });
    expect(JSON.stringify(pod.spec?.affinity)).toContain("node-a");
  });
});
