import { describe, expect, it } from "vitest";
import { EMPTY_FORM, causesByField, userDataFor, vmFromForm } from "./vm-form";

describe("vmFromForm", () => {
  it("makes a KubeVirt VM with a containerDisk, masquerade networking and a cloud-init user", () => {
    const vm = vmFromForm({ ...EMPTY_FORM, name: " web-1 ", cpu: "2", memory: "2Gi", image: "example/debian:12", user: "ops", password: "s3cret" });
    expect(vm.metadata.name).toBe("web-1");
    expect(vm.spec.template.spec.domain.cpu?.cores).toBe(2);
    expect(vm.spec.template.spec.domain.memory?.guest).toBe("2Gi");
    expect(vm.spec.instancetype).toBeUndefined();
    expect(vm.spec.template.spec.volumes[0]).toEqual({ name: "root", containerDisk: { image: "example/debian:12" } });
    expect(vm.spec.template.spec.volumes[1]).toEqual({ name: "cloudinit", cloudInitNoCloud: { secretRef: { name: "web-1-cloud-init" } } });
    expect(JSON.stringify(vm)).not.toContain("s3cret");
    expect(vm.spec.template.spec.domain.devices.disks.map((d) => d.name)).toEqual(["root", "cloudinit"]);
  });

  it("sends the user data for the Secret the VM names, and only then", () => {
    const form = { ...EMPTY_FORM, name: "web-1", image: "x", user: "ops", password: "s3cret", sshKey: "ssh-ed25519 AAAA" };
    const userData = userDataFor(vmFromForm(form), form) ?? "";
    expect(userData).toContain('  - name: "ops"');
    expect(userData).toContain('plain_text_passwd: "s3cret"');
    expect(userData).toContain('      - "ssh-ed25519 AAAA"');
    // A manifest edited in YAML that no longer names the Secret gets no data.
    const edited = vmFromForm(form);
    edited.spec.template.spec.volumes = edited.spec.template.spec.volumes.slice(0, 1);
    expect(userDataFor(edited, form)).toBeUndefined();
    expect(userDataFor(vmFromForm({ ...EMPTY_FORM, name: "bare", image: "x" }), EMPTY_FORM)).toBeUndefined();
  });

  it("leaves CPU and memory to the instancetype chosen, which the template must not set, and names the preference", () => {
    const vm = vmFromForm({ ...EMPTY_FORM, name: "sized", size: "u1.small", preference: "debian", cpu: "4", memory: "8Gi", image: "x" });
    expect(vm.spec.instancetype).toEqual({ name: "u1.small" });
    expect(vm.spec.preference).toEqual({ name: "debian" });
    expect(vm.spec.template.spec.domain.cpu).toBeUndefined();
    expect(vm.spec.template.spec.domain.memory).toBeUndefined();
    expect(causesByField([{ field: "spec.instancetype", message: "too small" }])).toEqual({ size: ["too small"] });
  });

  it("leaves cloud-init out when no user or key is given", () => {
    const vm = vmFromForm({ ...EMPTY_FORM, name: "bare", image: "x" });
    expect(vm.spec.template.spec.volumes).toHaveLength(1);
  });
});

describe("causesByField", () => {
  it("puts each cause next to its form field, the rest at the top", () => {
    expect(
      causesByField([
        { field: "metadata.name", message: "metadata.name must be a DNS label" },
        { field: "spec.template.spec.domain.memory.guest", message: "memory must be positive" },
        { field: "spec.template.spec.hostname", message: "hostname is bad" },
      ]),
    ).toEqual({ name: ["metadata.name must be a DNS label"], memory: ["memory must be positive"], "": ["hostname is bad"] });
  });

  it("gives a persistent root disk copied from an image of the namespace, or a blank one with the ISO booting first", () => {
    const clone = vmFromForm({ ...EMPTY_FORM, name: "db", rootDisk: "clone", sourceImage: "debian-12", diskSize: "20Gi" }, "team-a");
    expect(clone.spec.dataVolumeTemplates).toEqual([{ metadata: { name: "db-root" }, spec: { source: { pvc: { namespace: "team-a", name: "debian-12" } }, storage: { resources: { requests: { storage: "20Gi" } } } } }]);
    expect(clone.spec.template.spec.volumes[0]).toEqual({ name: "root", dataVolume: { name: "db-root" } });
    const install = vmFromForm({ ...EMPTY_FORM, name: "new", rootDisk: "install", sourceImage: "installer-iso", diskSize: "8Gi" }, "team-a");
    expect(install.spec.dataVolumeTemplates?.[0]?.spec.source).toEqual({ blank: {} });
    expect(install.spec.template.spec.domain.devices.disks).toEqual([
      { name: "root", disk: { bus: "virtio" }, bootOrder: 1 },
      { name: "installer", cdrom: { bus: "sata" }, bootOrder: 2 },
    ]);
    expect(install.spec.template.spec.volumes[1]).toEqual({ name: "installer", persistentVolumeClaim: { claimName: "installer-iso", readOnly: true } });
    expect(causesByField([{ field: "spec.dataVolumeTemplates[0].spec.storage.resources.requests.storage", message: "must be greater than 0" }])).toEqual({ diskSize: ["must be greater than 0"] });
  });
});
