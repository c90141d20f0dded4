import { execFile } from "node:child_process";
import { mkdir, mkdtemp, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { configDriveIso } from "../src/storage/cloud-init.ts";
import { configVolumeIso } from "../src/storage/config-disk.ts";

// The ISO disk of a ConfigMap, Secret, ServiceAccount or downward API
// volume, made by the real genisoimage from a folder laid out as the
// kubelet's atomic writer lays it out, and read back with isoinfo.

const exec = promisify(execFile);
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "config-disk-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** A folder as the kubelet fills it: the keys in a hidden, timestamped folder, ..data pointing at it, and a link per key. */
async function kubeletFolder(name: string, files: Record<string, string>): Promise<string> {
  const root = join(dir, name);
  const stamped = join(root, "..2026_11_24_01_00_00.123456789");
  await mkdir(stamped, { recursive: true });
  await symlink("..2026_11_24_01_00_00.123456789", join(root, "..data"));
  for (const [key, value] of Object.entries(files)) {
    await writeFile(join(stamped, key), value);
    await symlink(join("..data", key), join(root, key));
  }
  return root;
}

const isoinfo = async (...args: string[]) => (await exec("isoinfo", args)).stdout;

describe("a config volume's disk", () => {
  it("holds each key as a plain file under the volume's label, and none of the kubelet's own entries", async () => {
    const source = await kubeletFolder("app", { greeting: "hello from a ConfigMap\n", "app.properties": "mode=test\n" });
    const iso = join(dir, "app.iso");
    await configVolumeIso(iso, source, "app-config");
    expect(await isoinfo("-d", "-i", iso)).toMatch(/Volume id: app-config/);
    const listed = (await isoinfo("-R", "-f", "-i", iso)).split("\n").filter(Boolean).sort();
    expect(listed).toEqual(["/app.properties", "/greeting"]);
    expect(await isoinfo("-R", "-i", iso, "-x", "/greeting")).toBe("hello from a ConfigMap\n");
    // The links are followed: the disk holds the data, not a link into a folder it does not have.
    expect(await isoinfo("-R", "-l", "-i", iso)).not.toMatch(/->/);
  });

  it("is empty, and unlabelled unless a label is given, for an optional source that is missing", async () => {
    const iso = join(dir, "missing.iso");
    await configVolumeIso(iso, join(dir, "never-mounted"), undefined);
    expect((await isoinfo("-R", "-f", "-i", iso)).trim()).toBe("");
    expect(await isoinfo("-d", "-i", iso)).toMatch(/Volume id: *\n/);
  });
});

describe("a cloudInitConfigDrive volume's disk", () => {
  it("is an OpenStack config drive: label config-2, with the metadata, user data and network data under openstack/latest", async () => {
    const iso = join(dir, "config-drive.iso");
    const networkData = JSON.stringify({ links: [], networks: [], services: [] });
    await configDriveIso(iso, "#cloud-config\nhostname: web-1\n", networkData, "c1f0a2d4-0000-4000-8000-00000000000a", "web-1");
    expect(await isoinfo("-d", "-i", iso)).toMatch(/Volume id: config-2\n/);
    const listed = (await isoinfo("-R", "-f", "-i", iso)).split("\n").filter((f) => f.startsWith("/openstack/latest/")).sort();
    expect(listed).toEqual(["/openstack/latest/meta_data.json", "/openstack/latest/network_data.json", "/openstack/latest/user_data"]);
    expect(JSON.parse(await isoinfo("-R", "-i", iso, "-x", "/openstack/latest/meta_data.json"))).toMatchObject({ uuid: "c1f0a2d4-0000-4000-8000-00000000000a", hostname: "web-1" });
    expect(await isoinfo("-R", "-i", iso, "-x", "/openstack/latest/user_data")).toBe("#cloud-config\nhostname: web-1\n");
    expect(await isoinfo("-R", "-i", iso, "-x", "/openstack/latest/network_data.json")).toBe(networkData);
  });
});
