import type { VirtualMachineClone } from "@kubevirt-ts/kubevirt-api";
import { describe, expect, it } from "vitest";
import { applyJsonPatches, type SnapshotVm } from "../restore/decide.ts";
import {
  cloneRestore,
  cloneSnapshot,
  clonePatches,
  cloneStatus,
  keptKeys,
  matchesFilter,
  targetName,
} from "./decide.ts";

const UID = "ab12c3d4-0000-4000-8000-000000000001";

const clone = (spec: Partial<VirtualMachineClone["spec"]> = {}, name = "c1"): VirtualMachineClone => ({
  apiVersion: "clone.kubevirt.io/v1beta1",
  kind: "VirtualMachineClone",
  metadata: { name, namespace: "ns", uid: UID },
  spec: { source: { apiGroup: "kubevirt.io", kind: "VirtualMachine", name: "db" }, ...spec },
});

const vm = (): SnapshotVm => ({
  metadata: {
    name: "db",
    namespace: "ns",
    labels: { app: "db", "team.example.com/owner": "ops", tier: "backend" },
    annotations: { note: "x", "restore.kubevirt.io/lastRestoreUID": "r-1" },
  },
  spec: {
    runStrategy: "Always",
    template: {
      metadata: { labels: { "kubevirt.io/domain": "db", app: "db" }, annotations: { a: "1" } },
      spec: {
        domain: {
          firmware: { serial: "S-1", uuid: "6f1a2b3c-4d5e-5f60-8a7b-9c0d1e2f3a4b" },
          devices: {
            interfaces: [
              { name: "default", masquerade: {}, macAddress: "02:00:00:00:00:01" },
              { name: "storage", bridge: {} },
            ],
          },
        },
        networks: [
          { name: "default", pod: {} },
          { name: "storage", pod: {} },
        ],
      },
    },
  },
});

/** The VM the restore would make: the clone's patches applied to the snapshot's VM. */
const patched = (c: VirtualMachineClone) => {
  const patches = clonePatches(c, vm());
  if (typeof patches === "string") throw new Error(patches);
  const v = vm();
  const out = applyJsonPatches({ metadata: v.metadata, spec: v.spec }, patches);
  if (typeof out === "string") throw new Error(out);
  return out as ReturnType<typeof vm>;
};

describe("filters", () => {
  it("matches wildcards anywhere in the key, as KubeVirt's unanchored expressions do", () => {
    expect(matchesFilter("*", "anything/at-all")).toBe(true);
    expect(matchesFilter(".*", "anything")).toBe(true);
    expect(matchesFilter("team.example.com/*", "team.example.com/owner")).toBe(true);
    expect(matchesFilter("team.example.com/*", "other.example.com/owner")).toBe(false);
    expect(matchesFilter("app", "application")).toBe(true);
    expect(matchesFilter("app", "app.kubernetes.io/name")).toBe(true);
    expect(matchesFilter("app", "tier")).toBe(false);
    expect(matchesFilter("a*b*c", "xxaxxbyycxx")).toBe(true);
    expect(matchesFilter("a*b*c", "axxbyy")).toBe(false);
    // A dot is a dot, not any character.
    expect(matchesFilter("a.c", "abc")).toBe(false);
  });

  it("answers a filter of many stars on a long key without backtracking away", () => {
    const filter = `${"a*".repeat(150)}b`;
    expect(matchesFilter(filter, "a".repeat(317))).toBe(false);
  });

  it("keeps every key when unset, none for an empty list, and lets negations win", () => {
    const keys = ["app", "tier", "team.example.com/owner"];
    expect([...keptKeys(keys, undefined)]).toEqual(keys);
    expect([...keptKeys(keys, [])]).toEqual([]);
    expect([...keptKeys(keys, ["*", "!team.example.com/*"])]).toEqual(["app", "tier"]);
    expect([...keptKeys(keys, ["app"])]).toEqual(["app"]);
    expect([...keptKeys(keys, ["*", "!team"])]).toEqual(["app", "tier"]);
  });
});

describe("the clone's patches", () => {
  it("sets the MACs it names, drops the source's serial, and keeps what no filter removes", () => {
    const out = patched(clone({ newMacAddresses: { storage: "02:00:00:00:00:99" } }));
    const domain = out.spec.template.spec.domain;
    expect(domain.devices.interfaces?.[1]?.macAddress).toBe("02:00:00:00:00:99");
    expect(domain.firmware?.serial).toBeUndefined();
    expect(out.metadata?.labels).toEqual(vm().metadata?.labels);
  });

  it("takes a MAC written with hyphens, as virtctl create clone writes it (the launcher gives libvirt colons)", () => {
    const out = patched(clone({ newMacAddresses: { default: "02-AB-00-00-00-07" } }));
    expect(out.spec.template.spec.domain.devices.interfaces?.[0]?.macAddress).toBe("02-AB-00-00-00-07");
  });

  it("removes the labels and annotations the filters do not keep, of the VM and its template", () => {
    const out = patched(
      clone({
        labelFilters: ["*", "!team.example.com/*"],
        annotationFilters: [],
        template: { labelFilters: ["kubevirt.io/*"], annotationFilters: ["*"] },
      }),
    );
    expect(out.metadata?.labels).toEqual({ app: "db", tier: "backend" });
    // The restore's own annotation stays, whatever the filters.
    expect(out.metadata?.annotations).toEqual({ "restore.kubevirt.io/lastRestoreUID": "r-1" });
    expect(out.spec.template.metadata?.labels).toEqual({ "kubevirt.io/domain": "db" });
    expect(out.spec.template.metadata?.annotations).toEqual({ a: "1" });
  });

  it("sets a new SMBIOS serial, and applies the clone's own patches after its own", () => {
    const out = patched(
      clone({
        newSMBiosSerial: "S-2",
        patches: ['{"op": "add", "path": "/metadata/labels/cloned", "value": "yes"}'],
      }),
    );
    expect(out.spec.template.spec.domain.firmware?.serial).toBe("S-2");
    expect(out.metadata?.labels?.cloned).toBe("yes");
  });

  it("escapes keys with slashes and tildes as JSON pointers", () => {
    const patches = clonePatches(clone({ labelFilters: ["app", "tier"] }), vm());
    expect(patches).toContain('{"op":"remove","path":"/metadata/labels/team.example.com~1owner"}');
  });

  it("names the field of what cannot be cloned", () => {
    expect(clonePatches(clone({ newMacAddresses: { eth9: "02:00:00:00:00:02" } }), vm())).toMatch(
      /^spec\.newMacAddresses\.eth9: the VM has no interface eth9 \(it has default, storage\)/,
    );
    expect(clonePatches(clone({ newMacAddresses: { default: "not-a-mac" } }), vm())).toMatch(
      /^spec\.newMacAddresses\.default: not-a-mac is not a MAC address/,
    );
    expect(
      clonePatches(clone({ patches: ['{"op": "add", "path": "/spec/x", "value": 1}', "{not json"] }), vm()),
    ).toMatch(/^spec\.patches\[1\]: not JSON/);
    expect(clonePatches(clone({ patches: ['{"op": "remove", "path": "/spec/nothing"}'] }), vm())).toMatch(
      /^spec\.patches\[0\]: \/spec\/nothing: does not exist/,
    );
    // As KubeVirt's restore admission: the VM's spec, labels and annotations only, never the restore's mark.
    expect(
      clonePatches(clone({ patches: ['{"op": "replace", "path": "/metadata/name", "value": "x"}'] }), vm()),
    ).toMatch(
      /^spec\.patches\[0\]: "\/metadata\/name": only \/spec\/, \/metadata\/labels\/ and \/metadata\/annotations\//,
    );
    expect(
      clonePatches(
        clone({ patches: ['{"op": "remove", "path": "/metadata/annotations/restore.kubevirt.io~1lastRestoreUID"}'] }),
        vm(),
      ),
    ).toMatch(/^spec\.patches\[0\]: .*the restore's own annotation cannot be patched/);
    // The restore takes at most 100 patches: the clone's own count with those it makes.
    const many = Array.from(
      { length: 100 },
      (_, i) => `{"op": "add", "path": "/metadata/labels/l${String(i)}", "value": "v"}`,
    );
    expect(clonePatches(clone({ labelFilters: [], patches: many }), vm())).toMatch(
      /^spec\.patches: with the 4 patches the clone makes .* its restore would have 104, more than 100/,
    );
  });
});

describe("names", () => {
  it("names the snapshot and restore as KubeVirt does, and the new VM the same on every pass", () => {
    const c = clone({ volumeNamePolicy: "PrefixTargetName" });
    expect(cloneSnapshot(c).metadata.name).toBe(`tmp-snapshot-${UID}`);
    expect(cloneSnapshot(c).metadata.ownerReferences?.[0]).toMatchObject({ kind: "VirtualMachineClone", uid: UID });
    // A copy of each disk takes longer than KubeVirt's 5 minutes for a CSI snapshot.
    expect(cloneSnapshot(c).spec.failureDeadline).toBe("1h");
    const restore = cloneRestore(c, "snap", "db", []);
    expect(restore.metadata.name).toBe(`tmp-restore-${UID}`);
    expect(restore.spec.target.name).toBe("db-clone-ab12c");
    expect(restore.spec.virtualMachineSnapshotName).toBe("snap");
    expect(restore.spec.volumeRestorePolicy).toBe("PrefixTargetName");
    expect(restore.metadata.ownerReferences?.[0]).toMatchObject({ kind: "VirtualMachineClone", name: "c1", uid: UID });
    expect(targetName(clone({ target: { kind: "VirtualMachine", name: "copy" } }), "db")).toBe("copy");
    // virtctl create clone writes an empty target name when none is given.
    expect(targetName(clone({ target: { kind: "VirtualMachine", name: "" } }), "db")).toBe("db-clone-ab12c");
    expect(targetName(c, "x".repeat(80))).toHaveLength(63);
  });

  it("says Progressing until it succeeds or fails, and Ready once it succeeds", () => {
    const now = new Date("2026-11-28T00:00:00Z");
    const running = cloneStatus({}, "RestoreInProgress", "Restoring", now);
    expect(running.conditions?.map((c) => [c.type, c.status])).toEqual([
      ["Progressing", "True"],
      ["Ready", "False"],
    ]);
    const done = cloneStatus(running, "Succeeded", "Ready", now);
    expect(done.conditions?.map((c) => [c.type, c.status])).toEqual([
      ["Progressing", "False"],
      ["Ready", "True"],
    ]);
    expect(cloneStatus(running, "Failed", "broken", now).conditions?.map((c) => c.status)).toEqual(["False", "False"]);
  });
});
