import { describe, expect, it } from "vitest";
import { validateVirtualMachine } from "@kubevirt-ts/kubevirt-api";
import { EMPTY_FORM, causesByField, formWarnings, userDataFor, vmFromForm } from "./vm-form";

describe("vmFromForm", () => {
  it("makes a KubeVirt VM with a containerDisk, masquerade networking and a cloud-init user", () => {
    const vm = vmFromForm({
      ...EMPTY_FORM,
      name: " web-1 ",
      cpu: "2",
      memory: "2Gi",
      image: "example/debian:12",
      user: "ops",
      password: "s3cret",
    });
    expect(vm.metadata.name).toBe("web-1");
    expect(vm.spec.template.spec.domain.cpu?.cores).toBe(2);
    expect(vm.spec.template.spec.domain.memory?.guest).toBe("2Gi");
    expect(vm.spec.instancetype).toBeUndefined();
    expect(vm.spec.template.spec.volumes[0]).toEqual({ name: "root", containerDisk: { image: "example/debian:12" } });
    expect(vm.spec.template.spec.volumes[1]).toEqual({
      name: "cloudinit",
      cloudInitNoCloud: { secretRef: { name: "web-1-cloud-init" } },
    });
    expect(JSON.stringify(vm)).not.toContain("s3cret");
    expect(vm.spec.template.spec.domain.devices.disks.map((d) => d.name)).toEqual(["root", "cloudinit"]);
  });

  it("sends the user data for the Secret the VM names, and only then", () => {
    const form = {
      ...EMPTY_FORM,
      name: "web-1",
      image: "x",
      user: "ops",
      password: "s3cret",
      sshKey: "ssh-ed25519 AAAA",
    };
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

  it(
    "leaves CPU and memory to the instancetype chosen, which the template must " + "not set, and names the preference",
    () => {
      const vm = vmFromForm({
        ...EMPTY_FORM,
        name: "sized",
        size: "u1.small",
        preference: "debian",
        cpu: "4",
        memory: "8Gi",
        image: "x",
      });
      expect(vm.spec.instancetype).toEqual({ name: "u1.small" });
      expect(vm.spec.preference).toEqual({ name: "debian" });
      expect(vm.spec.template.spec.domain.cpu).toBeUndefined();
      expect(vm.spec.template.spec.domain.memory).toBeUndefined();
      expect(causesByField([{ field: "spec.instancetype", message: "too small" }])).toEqual({
        size: [{ message: "too small", path: "spec.instancetype" }],
      });
    },
  );

  it(
    "gives a persistent root disk copied from an image of the namespace, or a " +
      "blank one with the ISO booting first",
    () => {
      const clone = vmFromForm(
        { ...EMPTY_FORM, name: "db", rootDisk: "clone", sourceImage: "debian-12", diskSize: "20Gi" },
        "team-a",
      );
      expect(clone.spec.dataVolumeTemplates).toEqual([
        {
          metadata: { name: "db-root" },
          spec: {
            source: { pvc: { namespace: "team-a", name: "debian-12" } },
            storage: { resources: { requests: { storage: "20Gi" } } },
          },
        },
      ]);
      expect(clone.spec.template.spec.volumes[0]).toEqual({ name: "root", dataVolume: { name: "db-root" } });
      const install = vmFromForm(
        { ...EMPTY_FORM, name: "new", rootDisk: "install", sourceImage: "installer-iso", diskSize: "8Gi" },
        "team-a",
      );
      expect(install.spec.dataVolumeTemplates?.[0]?.spec.source).toEqual({ blank: {} });
      expect(install.spec.template.spec.domain.devices.disks).toEqual([
        { name: "root", disk: { bus: "virtio" }, bootOrder: 1 },
        { name: "installer", cdrom: { bus: "sata" }, bootOrder: 2 },
      ]);
      expect(install.spec.template.spec.volumes[1]).toEqual({
        name: "installer",
        persistentVolumeClaim: { claimName: "installer-iso", readOnly: true },
      });
      expect(
        causesByField([
          {
            field: "spec.dataVolumeTemplates[0].spec.storage.resources.requests.storage",
            message: "must be greater than 0",
          },
        ]),
      ).toEqual({
        diskSize: [
          {
            message: "must be greater than 0",
            path: "spec.dataVolumeTemplates[0].spec.storage.resources.requests.storage",
          },
        ],
      });
    },
  );

  it("leaves cloud-init out when no user or key is given", () => {
    const vm = vmFromForm({ ...EMPTY_FORM, name: "bare", image: "x" });
    expect(vm.spec.template.spec.volumes).toHaveLength(1);
  });
});

describe("causesByField", () => {
  it("puts each cause next to its form field in words (the API's path kept aside), the rest at the top", () => {
    expect(
      causesByField([
        { field: "metadata.name", message: "metadata.name must be a DNS label" },
        {
          field: "spec.template.spec.domain.memory.guest",
          message: "spec.template.spec.domain.memory.guest must be greater than 0, got -1Gi",
        },
        { field: "spec.template.spec.hostname", message: "spec.template.spec.hostname is bad" },
      ]),
    ).toEqual({
      name: [{ message: "The name must be a DNS label", path: "metadata.name" }],
      memory: [{ message: "Memory must be greater than 0, got -1Gi", path: "spec.template.spec.domain.memory.guest" }],
      "": [{ message: "spec.template.spec.hostname is bad", path: "spec.template.spec.hostname" }],
    });
  });

  it("checks the form with the server's own rules, every problem at once", () => {
    const vm = vmFromForm({ ...EMPTY_FORM, name: "Bad_Name", cpu: "0", memory: "-1Gi", image: "x" });
    const result = validateVirtualMachine(vm);
    expect(result.ok).toBe(false);
    const problems = causesByField(result.ok ? [] : result.causes);
    expect(Object.keys(problems).sort()).toEqual(["cpu", "memory", "name"]);
    expect(problems.cpu?.[0]?.message).toBe("CPU cores must be at least 1, got 0");
  });
});

describe("formWarnings", () => {
  const largest = { name: "node-1", memoryBytes: 8 * 1024 ** 3 };
  it("warns of a user nobody can log in as, of root, and of memory no node holds", () => {
    expect(formWarnings({ ...EMPTY_FORM, user: "tester" }, 1024 ** 3, largest).password).toBe(
      "tester gets neither a password nor an SSH key: nobody can log in as tester. Give one, or leave the user empty.",
    );
    expect(formWarnings({ ...EMPTY_FORM, user: "root", password: "x" }, 1024 ** 3, largest).user).toMatch(
      /prefer a user of your own/,
    );
    expect(formWarnings({ ...EMPTY_FORM }, 10 * 1024 ** 4, largest).memory).toBe(
      "No node can hold 10240.0 GiB: the largest, node-1, has 8.0 GiB for pods. The VM would wait, unplaced.",
    );
    expect(formWarnings({ ...EMPTY_FORM, size: "u1.huge" }, 10 * 1024 ** 4, largest).size).toMatch(/^No node can hold/);
  });

  it("says nothing of a sound form, or of memory when the nodes are not known", () => {
    expect(formWarnings({ ...EMPTY_FORM, user: "tester", sshKey: "ssh-ed25519 AAAA" }, 1024 ** 3, largest)).toEqual({});
    expect(formWarnings({ ...EMPTY_FORM }, 10 * 1024 ** 4, undefined)).toEqual({});
  });
});
