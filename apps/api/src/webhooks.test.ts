import { describe, expect, it } from "vitest";
import {
  type AdmissionReview,
  asStoredVersion,
  inferVmDefaults,
  mutate,
  validate,
  validateKubeVirtReview,
} from "./webhooks.ts";

const vm = (spec: Record<string, unknown>) => ({
  apiVersion: "kubevirt.io/v1",
  kind: "VirtualMachine",
  metadata: { name: "demo", namespace: "ns" },
  spec: {
    runStrategy: "Halted",
    template: {
      spec: {
        domain: { memory: { guest: "128Mi" }, devices: { disks: [{ name: "root", disk: {} }] } },
        volumes: [{ name: "root", containerDisk: { image: "x" } }],
        ...spec,
      },
    },
  },
});
const review = (operation: string, object: unknown, oldObject?: unknown): AdmissionReview => ({
  apiVersion: "admission.k8s.io/v1",
  kind: "AdmissionReview",
  request: { uid: "u-1", operation, object, oldObject },
});

describe("the validating webhook", () => {
  it("admits a valid VM", () => {
    expect(validate(review("CREATE", vm({})), "virtualmachines").response).toEqual({ uid: "u-1", allowed: true });
  });

  it("refuses an invalid VM with a 422 whose causes name each field", () => {
    const response = validate(review("CREATE", vm({ volumes: [] })), "virtualmachines").response;
    expect(response?.allowed).toBe(false);
    expect(response?.status?.code).toBe(422);
    expect(response?.status?.details.causes).toEqual([
      {
        reason: "FieldValueNotFound",
        field: "spec.template.spec.domain.devices.disks[0].name",
        message: expect.stringMatching(/^spec\.template\.spec\.domain\.devices\.disks\[0\]\.name/) as unknown,
      },
    ]);
    expect(response?.status?.message).toContain("disks[0].name");
  });

  it("lets a change of metadata alone through, so an old invalid object can still be cleaned up", () => {
    const old = vm({ volumes: [] });
    const updated = { ...old, metadata: { ...old.metadata, finalizers: [] } };
    expect(validate(review("UPDATE", updated, old), "virtualmachines").response?.allowed).toBe(true);
  });
});

describe("the validating webhook on a DataVolume", () => {
  const dv = (source: object) => ({
    apiVersion: "cdi.kubevirt.io/v1beta1",
    kind: "DataVolume",
    metadata: { name: "disk", namespace: "ns" },
    spec: { source, storage: { resources: { requests: { storage: "1Gi" } } } },
  });

  it("admits one source, and refuses two or a spec changed after it was made, naming the field", () => {
    expect(validate(review("CREATE", dv({ upload: {} })), "datavolumes").response?.allowed).toBe(true);
    const two = validate(review("CREATE", dv({ upload: {}, blank: {} })), "datavolumes").response;
    expect(two?.status?.details.causes[0]).toMatchObject({
      field: "spec.source",
      message: expect.stringMatching(/exactly one of/) as string,
    });
    expect(
      validate(review("UPDATE", dv({ blank: {} }), dv({ upload: {} })), "datavolumes").response?.status?.details
        .causes[0],
    ).toMatchObject({ field: "spec" });
    const relabelled = { ...dv({ upload: {} }), metadata: { name: "disk", namespace: "ns", labels: { a: "b" } } };
    expect(validate(review("UPDATE", relabelled, dv({ upload: {} })), "datavolumes").response?.allowed).toBe(true);
  });
});

describe("the validating webhook on a MigrationPolicy", () => {
  const policy = (spec: object) => ({
    apiVersion: "migrations.kubevirt.io/v1alpha1",
    kind: "MigrationPolicy",
    metadata: { name: "slow" },
    spec: { selectors: {}, ...spec },
  });

  it(
    "admits KubeVirt's settings, and refuses what kubevirt-ts cannot do with a " +
      "422 naming the field, on a change too",
    () => {
      expect(
        validate(
          review(
            "CREATE",
            policy({ bandwidthPerMigration: "64Mi", allowPostCopy: true, allowWorkloadDisruption: true }),
          ),
          "migrationpolicies",
        ).response?.allowed,
      ).toBe(true);
      const pause = validate(review("CREATE", policy({ allowWorkloadDisruption: true })), "migrationpolicies").response;
      expect(pause?.status).toMatchObject({
        code: 422,
        details: { causes: [{ field: "spec.allowWorkloadDisruption" }] },
      });
      const downtime = validate(
        review("UPDATE", policy({ maxDowntimeMs: 100 }), policy({})),
        "migrationpolicies",
      ).response;
      expect(downtime?.status?.details.causes[0]).toMatchObject({ field: "spec.maxDowntimeMs" });
    },
  );
});

describe("the validating webhook on the KubeVirt CR", () => {
  const kv = (name: string, spec: Record<string, unknown>) => ({
    apiVersion: "kubevirt.io/v1",
    kind: "KubeVirt",
    metadata: { name, namespace: "kubevirt-ts" },
    spec,
  });

  it("admits KubeVirt's shipped CR and warns of each feature gate kubevirt-ts ignores", () => {
    const shipped = kv("kubevirt-ts", {
      certificateRotateStrategy: {},
      configuration: { developerConfiguration: { featureGates: ["HotplugVolumes"] } },
      customizeComponents: {},
      imagePullPolicy: "IfNotPresent",
      workloadUpdateStrategy: {},
    });
    expect(validateKubeVirtReview(review("CREATE", shipped), "kubevirt-ts").response).toEqual({
      uid: "u-1",
      allowed: true,
      warnings: [
        "spec.configuration.developerConfiguration.featureGates[0] (HotplugVolumes): kubevirt-ts " +
          "does not have this feature yet; the gate is ignored",
      ],
    });
  });

  it("refuses a field kubevirt-ts does not act on by its path, and a second CR that would have no effect", () => {
    const unknown = validateKubeVirtReview(
      review(
        "UPDATE",
        kv("kubevirt-ts", {
          configuration: { vmRolloutStrategy: "LiveUpdate" },
          workloadUpdateStrategy: { workloadUpdateMethods: ["Shutdown"] },
        }),
      ),
      "kubevirt-ts",
    ).response;
    expect(unknown?.allowed).toBe(false);
    expect(unknown?.status?.details.causes.map((c) => c.field)).toEqual(
      expect.arrayContaining([
        "spec.configuration.vmRolloutStrategy",
        "spec.workloadUpdateStrategy.workloadUpdateMethods[0]",
      ]),
    );
    const second = validateKubeVirtReview(
      review("CREATE", kv("kubevirt", { configuration: {} })),
      "kubevirt-ts",
    ).response;
    const causes = second?.status?.details.causes ?? [];
    expect(causes.map((c) => c.field)).toEqual(["metadata.name"]);
    expect(causes[0]?.message).toContain("kubevirt-ts reads one KubeVirt CR, kubevirt-ts/kubevirt-ts");
  });
});

describe("the mutating webhook", () => {
  it("fills in KubeVirt's defaults as one JSON patch of the template's spec", () => {
    const response = mutate(review("CREATE", vm({})), "virtualmachines").response;
    expect(response?.patchType).toBe("JSONPatch");
    const [op] = JSON.parse(Buffer.from(response?.patch ?? "", "base64").toString()) as [
      { op: string; path: string; value: { domain: { devices: { disks: { disk: { bus: string } }[] } } } },
    ];
    expect(op.op).toBe("replace");
    expect(op.path).toBe("/spec/template/spec");
    expect(op.value.domain.devices.disks[0]?.disk.bus).toBe("sata");
  });

  it("leaves an invalid object alone for the validating webhook to refuse", () => {
    expect(mutate(review("CREATE", vm({ volumes: [] })), "virtualmachines").response).toEqual({
      uid: "u-1",
      allowed: true,
    });
  });
});

describe("the mutating webhook on a VM that infers its instancetype from a volume", () => {
  const onClaim = vm({ volumes: [{ name: "root", persistentVolumeClaim: { claimName: "golden" } }] });
  const inferring = {
    ...onClaim,
    spec: { ...onClaim.spec, instancetype: { inferFromVolume: "root", inferFromVolumeFailurePolicy: "Ignore" } },
  };
  const patchOf = (review: AdmissionReview) =>
    JSON.parse(Buffer.from(review.response?.patch ?? "W10=", "base64").toString()) as {
      op: string;
      path: string;
      value?: unknown;
    }[];

  it("patches in the inferred matcher and drops the fallback memory, before the defaults", async () => {
    const claims = {
      "ns/golden": { metadata: { labels: { "instancetype.kubevirt.io/default-instancetype": "u1.small" } } },
    };
    const inferred = await inferVmDefaults(inferring, (_r, ns, name) =>
      Promise.resolve(claims[`${ns ?? ""}/${name}` as keyof typeof claims]),
    );
    const patch = patchOf(mutate(review("CREATE", inferring), "virtualmachines", inferred));
    expect(patch.slice(0, 2)).toEqual([
      { op: "replace", path: "/spec/instancetype", value: { name: "u1.small" } },
      { op: "remove", path: "/spec/template/spec/domain/memory" },
    ]);
  });

  it("refuses the VM with the cause at inferFromVolume when the claim is not there", async () => {
    const inferred = await inferVmDefaults(inferring, () => Promise.resolve(undefined));
    const response = mutate(review("CREATE", inferring), "virtualmachines", inferred).response;
    expect(response?.allowed).toBe(false);
    expect(response?.status?.details.causes).toEqual([
      {
        reason: "FieldValueInvalid",
        field: "spec.instancetype.inferFromVolume",
        message: expect.stringContaining("PersistentVolumeClaim ns/golden is not found") as unknown,
      },
    ]);
  });
});

describe("the mutating webhook on a VMI", () => {
  const vmi = (metadata: Record<string, unknown>) => ({
    apiVersion: "kubevirt.io/v1",
    kind: "VirtualMachineInstance",
    metadata: { name: "demo", namespace: "ns", ...metadata },
    spec: {
      domain: { memory: { guest: "64Mi" }, devices: { disks: [{ name: "root", disk: {} }] } },
      volumes: [{ name: "root", containerDisk: { image: "x" } }],
    },
  });
  const ops = (review: AdmissionReview) =>
    JSON.parse(Buffer.from(review.response?.patch ?? "W10=", "base64").toString()) as {
      op: string;
      path: string;
      value: unknown;
    }[];

  it("creates it with the controller's finalizer, as KubeVirt's mutator does", () => {
    expect(ops(mutate(review("CREATE", vmi({})), "virtualmachineinstances"))).toContainEqual({
      op: "add",
      path: "/metadata/finalizers",
      value: ["kubevirt.io/virtualMachineControllerFinalize"],
    });
  });

  it("appends the finalizer to the ones the object has, and adds it only once", () => {
    expect(ops(mutate(review("CREATE", vmi({ finalizers: ["other"] })), "virtualmachineinstances"))).toContainEqual({
      op: "add",
      path: "/metadata/finalizers/-",
      value: "kubevirt.io/virtualMachineControllerFinalize",
    });
    const again = ops(
      mutate(
        review("CREATE", vmi({ finalizers: ["kubevirt.io/virtualMachineControllerFinalize"] })),
        "virtualmachineinstances",
      ),
    );
    expect(again.filter((op) => op.path.startsWith("/metadata"))).toEqual([]);
  });

  it("never adds it on an update (a finalizer the controller removed stays removed)", () => {
    const object = vmi({});
    expect(
      ops(mutate(review("UPDATE", object, object), "virtualmachineinstances")).filter((op) =>
        op.path.startsWith("/metadata"),
      ),
    ).toEqual([]);
  });
});

describe("the mutating webhook on a new VMI with a status (say, exported from a cluster)", () => {
  it("makes it Pending and drops the node label, which only kubevirt-ts writes", () => {
    const object = {
      apiVersion: "kubevirt.io/v1",
      kind: "VirtualMachineInstance",
      metadata: { name: "demo", namespace: "ns", labels: { app: "x", "kubevirt.io/nodeName": "node-1" } },
      spec: {
        domain: { memory: { guest: "64Mi" }, devices: { disks: [{ name: "root", disk: {} }] } },
        volumes: [{ name: "root", containerDisk: { image: "x" } }],
      },
      status: { phase: "Running", nodeName: "node-1" },
    };
    const patch = JSON.parse(
      Buffer.from(
        mutate(review("CREATE", object), "virtualmachineinstances").response?.patch ?? "",
        "base64",
      ).toString(),
    ) as unknown[];
    expect(patch).toContainEqual({
      op: "add",
      path: "/status",
      value: {
        guestOSInfo: {},
        runtimeUser: 107,
        phase: "Pending",
        phaseTransitionTimestamps: [
          {
            phase: "Pending",
            phaseTransitionTimestamp: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/) as unknown,
          },
        ],
      },
    });
    expect(patch).toContainEqual({ op: "remove", path: "/metadata/labels/kubevirt.io~1nodeName" });
  });
});

describe("the webhooks on an object sent as kubevirt.io/v1alpha3", () => {
  const old = { ...vm({}), apiVersion: "kubevirt.io/v1alpha3" };
  const sent = (operation: string, object: unknown, oldObject?: unknown): AdmissionReview => {
    const kind = { group: "kubevirt.io", version: "v1alpha3", kind: "VirtualMachine" };
    return {
      apiVersion: "admission.k8s.io/v1",
      kind: "AdmissionReview",
      request: { uid: "u-1", kind, operation, object, oldObject },
    };
  };

  it("validates and defaults it as v1, whose schema it has, with the same patch", () => {
    expect(validate(review("CREATE", old), "virtualmachines").response?.allowed).toBe(false);
    expect(validate(asStoredVersion(sent("CREATE", old)), "virtualmachines").response).toEqual({
      uid: "u-1",
      allowed: true,
    });
    expect(mutate(asStoredVersion(sent("CREATE", old)), "virtualmachines").response).toEqual(
      mutate(review("CREATE", vm({})), "virtualmachines").response,
    );
    const invalid = validate(
      asStoredVersion(sent("UPDATE", { ...vm({ volumes: [] }), apiVersion: "kubevirt.io/v1alpha3" }, old)),
      "virtualmachines",
    ).response;
    expect(invalid?.status?.details.causes[0]?.field).toBe("spec.template.spec.domain.devices.disks[0].name");
  });

  it("leaves any other group's version alone", () => {
    const policy = {
      apiVersion: "migrations.kubevirt.io/v1alpha3",
      kind: "MigrationPolicy",
      metadata: { name: "p" },
      spec: {},
    };
    expect(asStoredVersion(review("CREATE", policy)).request?.object).toBe(policy);
  });
});
