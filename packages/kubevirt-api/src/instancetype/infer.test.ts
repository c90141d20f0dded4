import { describe, expect, it } from "vitest";
import { type InferringVm, inferFromVolumes } from "./infer.ts";
import type { Lookup } from "./find.ts";

// The cluster stands in as a map of objects by plural/namespace/name; a lookup answers undefined for what is absent, as
// a 404.
function cluster(objects: Record<string, object>): Lookup {
  return (resource, namespace, name) => Promise.resolve(objects[`${resource.plural}/${namespace ?? ""}/${name}`]);
}

const labelled = (labels: Record<string, string>) => ({ metadata: { labels } });
type Volume = NonNullable<
  NonNullable<NonNullable<NonNullable<InferringVm["spec"]>["template"]>["spec"]>["volumes"]
>[number];
const vm = (spec: Omit<NonNullable<InferringVm["spec"]>, "template">, volumes: Volume[]) => ({
  metadata: { namespace: "ns" },
  spec: { ...spec, template: { spec: { domain: { memory: { guest: "512Mi" } as unknown, devices: {} }, volumes } } },
});

describe("inferFromVolume", () => {
  it(
    "names the instancetype and preference from the labels of a volume's " + "claim, and drops inferFromVolume",
    async () => {
      const lookup = cluster({
        "persistentvolumeclaims/ns/golden": labelled({
          "instancetype.kubevirt.io/default-instancetype": "u1.small",
          "instancetype.kubevirt.io/default-preference": "debian",
          "instancetype.kubevirt.io/default-preference-kind": "VirtualMachinePreference",
        }),
      });
      const given = vm({ instancetype: { inferFromVolume: "root" }, preference: { inferFromVolume: "root" } }, [
        { name: "root", persistentVolumeClaim: { claimName: "golden" } },
      ]);
      const { vm: inferred, refusals } = await inferFromVolumes(given, lookup);
      expect(refusals).toEqual([]);
      expect(inferred.spec.instancetype).toEqual({ name: "u1.small" });
      expect(inferred.spec.preference).toEqual({ name: "debian", kind: "VirtualMachinePreference" });
      // The memory stays with Reject (the validating webhook then says it conflicts); the VM given is unchanged.
      expect(inferred.spec.template.spec.domain.memory).toEqual({ guest: "512Mi" });
      expect(given.spec.instancetype).toEqual({ inferFromVolume: "root" });
    },
  );

  it(
    "follows a dataVolumeTemplate to its source claim, and a DataVolume to its " + "labels or, once gone, to its claim",
    async () => {
      const lookup = cluster({
        "persistentvolumeclaims/images/debian-12": labelled({
          "instancetype.kubevirt.io/default-instancetype": "u1.medium",
        }),
        "datavolumes/ns/kept": labelled({ "instancetype.kubevirt.io/default-instancetype": "u1.large" }),
        "persistentvolumeclaims/ns/collected": labelled({
          "instancetype.kubevirt.io/default-instancetype": "u1.xlarge",
        }),
      });
      const fromTemplate = vm(
        {
          instancetype: { inferFromVolume: "root" },
          dataVolumeTemplates: [
            { metadata: { name: "root-dv" }, spec: { source: { pvc: { namespace: "images", name: "debian-12" } } } },
          ],
        },
        [{ name: "root", dataVolume: { name: "root-dv" } }],
      );
      expect((await inferFromVolumes(fromTemplate, lookup)).vm.spec.instancetype).toEqual({ name: "u1.medium" });
      expect(
        (
          await inferFromVolumes(
            vm({ instancetype: { inferFromVolume: "root" } }, [{ name: "root", dataVolume: { name: "kept" } }]),
            lookup,
          )
        ).vm.spec.instancetype,
      ).toEqual({ name: "u1.large" });
      expect(
        (
          await inferFromVolumes(
            vm({ instancetype: { inferFromVolume: "root" } }, [{ name: "root", dataVolume: { name: "collected" } }]),
            lookup,
          )
        ).vm.spec.instancetype,
      ).toEqual({ name: "u1.xlarge" });
    },
  );

  it(
    "with Ignore, drops a matcher its volume does not name, and the memory " + "when an instancetype is inferred",
    async () => {
      const lookup = cluster({
        "persistentvolumeclaims/ns/plain": labelled({}),
        "persistentvolumeclaims/ns/sized": labelled({ "instancetype.kubevirt.io/default-instancetype": "u1.small" }),
      });
      const unlabelled = await inferFromVolumes(
        vm({ instancetype: { inferFromVolume: "root", inferFromVolumeFailurePolicy: "Ignore" } }, [
          { name: "root", persistentVolumeClaim: { claimName: "plain" } },
        ]),
        lookup,
      );
      expect(unlabelled.refusals).toEqual([]);
      expect(unlabelled.vm.spec).not.toHaveProperty("instancetype");
      expect(unlabelled.vm.spec.template.spec.domain.memory).toEqual({ guest: "512Mi" });
      const sized = await inferFromVolumes(
        vm({ instancetype: { inferFromVolume: "root", inferFromVolumeFailurePolicy: "Ignore" } }, [
          { name: "root", persistentVolumeClaim: { claimName: "sized" } },
        ]),
        lookup,
      );
      expect(sized.vm.spec.instancetype).toEqual({ name: "u1.small" });
      expect(sized.vm.spec.template.spec.domain).not.toHaveProperty("memory");
    },
  );

  it(
    "refuses, naming the field and what to do: no label under Reject, and a " +
      "missing volume or claim whatever the policy",
    async () => {
      const lookup = cluster({ "persistentvolumeclaims/ns/plain": labelled({}) });
      const unlabelled = await inferFromVolumes(
        vm({ preference: { inferFromVolume: "root" } }, [
          { name: "root", persistentVolumeClaim: { claimName: "plain" } },
        ]),
        lookup,
      );
      expect(unlabelled.refusals).toEqual([
        {
          field: "spec.preference.inferFromVolume",
          message: expect.stringMatching(
            /has no .*\/default-preference label; label it .*or set inferFromVolumeFailurePolicy: Ignore/,
          ) as unknown,
        },
      ]);
      const noVolume = await inferFromVolumes(
        vm({ instancetype: { inferFromVolume: "disk0", inferFromVolumeFailurePolicy: "Ignore" } }, []),
        lookup,
      );
      expect(noVolume.refusals[0]?.message).toMatch(/no volume is named "disk0"/);
      const noClaim = await inferFromVolumes(
        vm({ instancetype: { inferFromVolume: "root", inferFromVolumeFailurePolicy: "Ignore" } }, [
          { name: "root", persistentVolumeClaim: { claimName: "absent" } },
        ]),
        lookup,
      );
      expect(noClaim.refusals[0]?.message).toMatch(/PersistentVolumeClaim ns\/absent is not found/);
    },
  );
});
