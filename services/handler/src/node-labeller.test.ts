import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { NodeAnnotation, NodeLabel } from "@kubevirt-ts/node-contract";
import { heartbeatPatch } from "./heartbeat.ts";
import { limits } from "./limits.ts";
import { LabellerFile, nodeLabellerLabels, readNodeLabellerLabels } from "./node-labeller.ts";

// libvirt 9.0's answers on this machine with QEMU 7.2 under emulation (virttype qemu), as the init container writes
// them.
const fixture = (name: string) => readFile(new URL(`./testdata/${name}`, import.meta.url), "utf8");

describe("the node labeller's labels from libvirt's capabilities", async () => {
  const labels = nodeLabellerLabels({
    domCapabilities: await fixture("domcapabilities-qemu.xml"),
    supportedFeatures: await fixture("supported-features.xml"),
    capabilities: await fixture("capabilities.xml"),
  });

  it("labels usable models, as models and migration targets, and leaves out unusable and obsolete ones", () => {
    expect(labels).toMatchObject({
      "cpu-model.node.kubevirt.io/Westmere": "true",
      "cpu-model-migration.node.kubevirt.io/Westmere": "true",
      "cpu-model.node.kubevirt.io/Penryn": "true",
      "cpu-model.node.kubevirt.io/Opteron_G2": "true",
    });
    expect(labels).not.toHaveProperty(["cpu-model.node.kubevirt.io/Skylake-Server"]);
    for (const obsolete of ["qemu64", "kvm64", "486", "Conroe", "core2duo"])
      expect(labels).not.toHaveProperty([`cpu-model.node.kubevirt.io/${obsolete}`]);
  });

  it("labels the host model, its vendor and required features, and the expanded model's features", () => {
    expect(labels).toMatchObject({
      "host-model-cpu.node.kubevirt.io/EPYC": "true",
      "cpu-model-migration.node.kubevirt.io/EPYC": "true",
      "cpu-vendor.node.kubevirt.io/AMD": "true",
      "host-model-required-features.node.kubevirt.io/la57": "true",
      "cpu-feature.node.kubevirt.io/avx2": "true",
      "cpu-feature.node.kubevirt.io/3dnow": "true",
    });
    // Disabled features are no feature of the node.
    expect(labels).not.toHaveProperty(["host-model-required-features.node.kubevirt.io/vme"]);
    expect(labels).not.toHaveProperty(["cpu-feature.node.kubevirt.io/3dnowprefetch"]);
  });

  it("labels the q35 machine types, alias included, and no other", () => {
    expect(labels).toMatchObject({
      "machine-type.node.kubevirt.io/q35": "true",
      "machine-type.node.kubevirt.io/pc-q35-7.2": "true",
    });
    expect(
      Object.keys(labels)
        .filter((k) => k.startsWith("machine-type."))
        .every((k) => /\/(q35|pc-q35-[\d.]+)$/.test(k)),
    ).toBe(true);
  });

  it("keeps out a name Kubernetes would refuse as a label, and keeps to its bound", () => {
    const hostile = `<domainCapabilities><cpu><mode name='custom' supported='yes'>
      <model usable='yes' vendor='x'>ok-model</model><model usable='yes' vendor='x'>bad/name</model>
      <model usable='yes' vendor='x'>${"a".repeat(64)}</model>
      ${Array.from({ length: 2000 }, (_, i) => `<model usable='yes' vendor='x'>m${String(i)}</model>`).join("")}
      </mode></cpu></domainCapabilities>`;
    const got = nodeLabellerLabels({ domCapabilities: hostile });
    expect(got["cpu-model.node.kubevirt.io/ok-model"]).toBe("true");
    expect(Object.keys(got).some((k) => k.includes("bad/name") || k.includes("a".repeat(64)))).toBe(false);
    expect(Object.keys(got)).toHaveLength(limits.nodeLabellerLabels);
  });

  it(
    "reads the init container's folder, refusing a file past its bound and " +
      "labelling nothing when it wrote nothing",
    async () => {
      const dir = await mkdtemp(join(tmpdir(), "labeller-"));
      try {
        await expect(readNodeLabellerLabels(dir)).resolves.toBeUndefined();
        await writeFile(join(dir, LabellerFile.domCapabilities), await fixture("domcapabilities-qemu.xml"));
        expect(await readNodeLabellerLabels(dir)).toHaveProperty(["host-model-cpu.node.kubevirt.io/EPYC"], "true");
        await writeFile(join(dir, LabellerFile.capabilities), Buffer.alloc(limits.nodeLabellerFileBytes + 1, 32));
        await expect(readNodeLabellerLabels(dir)).rejects.toThrow(
          `${join(dir, LabellerFile.capabilities)} is larger than ${String(limits.nodeLabellerFileBytes)} bytes`,
        );
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    },
  );
});

describe("a heartbeat's patch of its node", () => {
  const now = new Date("2026-01-02T03:04:05.678Z");
  const node = {
    metadata: {
      name: "n",
      labels: {
        "cpu-model.node.kubevirt.io/Gone": "true",
        "cpu-model.node.kubevirt.io/Kept": "true",
        team: "a",
        "kubernetes.io/hostname": "n",
      },
    },
  };

  it(
    "labels the node schedulable with the time, RFC 3339, and leaves its other " +
      "labels alone without labeller labels",
    () => {
      expect(heartbeatPatch(node, { schedulable: true, now, labels: undefined })).toEqual({
        metadata: {
          labels: { [NodeLabel.Schedulable]: "true" },
          annotations: { [NodeAnnotation.Heartbeat]: "2026-01-02T03:04:05Z" },
        },
      });
    },
  );

  it("puts the labeller's labels on and takes off the ones it no longer finds, never anyone else's", () => {
    const patch = heartbeatPatch(node, {
      schedulable: false,
      now,
      labels: { "cpu-model.node.kubevirt.io/Kept": "true", "cpu-model.node.kubevirt.io/New": "true" },
    });
    expect(patch.metadata.labels).toEqual({
      "cpu-model.node.kubevirt.io/Gone": null,
      "cpu-model.node.kubevirt.io/Kept": "true",
      "cpu-model.node.kubevirt.io/New": "true",
      [NodeLabel.Schedulable]: "false",
    });
  });
});
