import { execFile } from "node:child_process";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import type { VirtualMachineInstance } from "@kubevirt-ts/kubevirt-api";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type StorageLayout, prepareDisks } from "./prepare.ts";

const exec = promisify(execFile);
let root: string;
let layout: StorageLayout;

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), "prepare-test-"));
  const dir = (name: string) => join(root, name);
  layout = {
    containerDisksDir: dir("container-disks"),
    disksDir: dir("disks"),
    cloudInitSecretsDir: dir("cloud-init"),
    configVolumesDir: dir("config"),
    accessCredentialsDir: dir("credentials"),
    claimDisksDir: dir("claims"),
    claimDevicesDir: dir("devices"),
  };
});

afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

describe("prepareDisks", () => {
  it("makes each emptyDisk a sparse qcow2 file of the capacity asked for, in whole 512-byte sectors", async () => {
    const vmi: VirtualMachineInstance = {
      apiVersion: "kubevirt.io/v1",
      kind: "VirtualMachineInstance",
      metadata: { name: "testvm", namespace: "ns" },
      spec: {
        domain: { devices: {} },
        volumes: [
          { name: "scratch", emptyDisk: { capacity: "3Gi" } },
          { name: "small", emptyDisk: { capacity: "100M" } },
        ],
      },
    };
    const disks = await prepareDisks(vmi, layout);
    expect(disks).toEqual({
      scratch: { path: join(layout.disksDir, "scratch.qcow2"), format: "qcow2" },
      small: { path: join(layout.disksDir, "small.qcow2"), format: "qcow2" },
    });
    const info = async (path: string) =>
      JSON.parse((await exec("qemu-img", ["info", "--output=json", path])).stdout) as {
        format: string;
        "virtual-size": number;
        "actual-size": number;
      };
    const scratch = await info(join(layout.disksDir, "scratch.qcow2"));
    expect(scratch).toMatchObject({ format: "qcow2", "virtual-size": 3 * 1024 ** 3 });
    expect(scratch["actual-size"]).toBeLessThan(1024 ** 2);
    expect((await info(join(layout.disksDir, "small.qcow2")))["virtual-size"]).toBe(Math.ceil(100_000_000 / 512) * 512);
  });

  it(
    "takes a self-contained qcow2 containerDisk under an overlay, and refuses one with a backing " +
      "file or an external data file, as KubeVirt's image verification does",
    async () => {
      const vmi = (volume: string): VirtualMachineInstance => ({
        apiVersion: "kubevirt.io/v1",
        kind: "VirtualMachineInstance",
        metadata: { name: "testvm", namespace: "ns" },
        spec: { domain: { devices: {} }, volumes: [{ name: volume, containerDisk: { image: "example/disk" } }] },
      });
      const containerDisk = async (volume: string, ...createArgs: string[]) => {
        const dir = join(layout.containerDisksDir, volume);
        await mkdir(dir, { recursive: true });
        await exec("qemu-img", ["create", "-q", "-f", "qcow2", ...createArgs, join(dir, "disk.qcow2"), "1M"]);
      };
      await containerDisk("plain");
      expect(await prepareDisks(vmi("plain"), layout)).toEqual({
        plain: { path: join(layout.disksDir, "plain.qcow2"), format: "qcow2" },
      });

      const backing = join(root, "node-file.qcow2");
      await exec("qemu-img", ["create", "-q", "-f", "qcow2", backing, "1M"]);
      await containerDisk("chained", "-F", "qcow2", "-b", backing);
      await expect(prepareDisks(vmi("chained"), layout)).rejects.toThrow(`the image has a backing file (${backing})`);

      await containerDisk("datafile", "-o", `data_file=${join(root, "outside.raw")}`);
      await expect(prepareDisks(vmi("datafile"), layout)).rejects.toThrow(
        `the qcow2 image has an external data file (${join(root, "outside.raw")})`,
      );
    },
  );
});
