import { execFile } from "node:child_process";
import { mkdir, mkdtemp, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { VirtualMachineInstance } from "@kubevirt-ts/kubevirt-api";
import { cloudInitIso, configDriveIso, sshPublicKeys } from "../src/storage/cloud-init.ts";
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

/**
 * A folder as the kubelet fills it: the keys in a hidden, timestamped folder, ..data pointing at it, and a link per
 * key.
 */
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
    const source = await kubeletFolder("app", {
      greeting: "hello from a ConfigMap\n",
      "app.properties": "mode=test\n",
    });
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
  it(
    "is an OpenStack config drive: label config-2, with the metadata, user data " +
      "and network data under openstack/latest",
    async () => {
      const iso = join(dir, "config-drive.iso");
      const networkData = JSON.stringify({ links: [], networks: [], services: [] });
      await configDriveIso(iso, {
        userData: "#cloud-config\nhostname: web-1\n",
        networkData,
        instanceId: "c1f0a2d4-0000-4000-8000-00000000000a",
        hostname: "web-1",
        publicKeys: ["ssh-ed25519 AAAAC3Nza test@example"],
      });
      expect(await isoinfo("-d", "-i", iso)).toMatch(/Volume id: config-2\n/);
      const listed = (await isoinfo("-R", "-f", "-i", iso))
        .split("\n")
        .filter((f) => f.startsWith("/openstack/latest/"))
        .sort();
      expect(listed).toEqual([
        "/openstack/latest/meta_data.json",
        "/openstack/latest/network_data.json",
        "/openstack/latest/user_data",
      ]);
      expect(JSON.parse(await isoinfo("-R", "-i", iso, "-x", "/openstack/latest/meta_data.json"))).toMatchObject({
        uuid: "c1f0a2d4-0000-4000-8000-00000000000a",
        hostname: "web-1",
        public_keys: { "key-0": "ssh-ed25519 AAAAC3Nza test@example" },
      });
      expect(await isoinfo("-R", "-i", iso, "-x", "/openstack/latest/user_data")).toBe(
        "#cloud-config\nhostname: web-1\n",
      );
      expect(await isoinfo("-R", "-i", iso, "-x", "/openstack/latest/network_data.json")).toBe(networkData);
    },
  );
});

describe("SSH public keys of access credentials", () => {
  it("are read from every value of their Secrets and go into the NoCloud disk's metadata as public-keys", async () => {
    const credentials = join(dir, "access-credentials");
    await mkdir(credentials);
    // Mount 0 as the kubelet fills it: two values, one with two keys, a blank line and a comment.
    await kubeletFolder("access-credentials/0", {
      alice: "ssh-ed25519 AAAAC3NzaA alice@laptop\n\n# old key below was removed\nssh-rsa AAAAB3NzaB alice@desk\n",
      bob: "ssh-ed25519 AAAAC3NzaC bob\n",
    });
    const vmi = {
      apiVersion: "kubevirt.io/v1",
      kind: "VirtualMachineInstance",
      metadata: { name: "web", namespace: "ns" },
      spec: {
        domain: { devices: {} },
        volumes: [{ name: "cloudinit", cloudInitNoCloud: { userData: "#cloud-config\n" } }],
        accessCredentials: [
          { sshPublicKey: { source: { secret: { secretName: "keys" } }, propagationMethod: { noCloud: {} } } },
        ],
      },
    } satisfies VirtualMachineInstance;
    const keys = await sshPublicKeys(vmi, credentials, "noCloud");
    expect(keys).toEqual([
      "ssh-ed25519 AAAAC3NzaA alice@laptop",
      "ssh-rsa AAAAB3NzaB alice@desk",
      "ssh-ed25519 AAAAC3NzaC bob",
    ]);
    expect(await sshPublicKeys(vmi, credentials, "configDrive")).toEqual([]);
    const iso = join(dir, "nocloud.iso");
    await cloudInitIso(iso, {
      userData: "#cloud-config\n",
      networkData: undefined,
      instanceId: "uid-1",
      hostname: "web",
      publicKeys: keys,
    });
    expect(await isoinfo("-d", "-i", iso)).toMatch(/Volume id: cidata\n/);
    expect(await isoinfo("-R", "-i", iso, "-x", "/meta-data")).toBe(
      'instance-id: "uid-1"\nlocal-hostname: "web"\npublic-keys:\n  - "ssh-ed25519 AAAAC3NzaA ' +
        'alice@laptop"\n  - "ssh-rsa AAAAB3NzaB alice@desk"\n  - "ssh-ed25519 AAAAC3NzaC bob"\n',
    );
  });
});
