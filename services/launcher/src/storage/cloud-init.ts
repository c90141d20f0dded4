import { execFile } from "node:child_process";
import { mkdir, mkdtemp, readFile, readdir, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import {
  type CloudInitSecretKind,
  CloudInitSecretKeys,
  accessCredentialMounts,
  cloudInitSecretMounts,
  cloudInitSourceOf,
} from "@kubevirt-ts/node-contract";
import { MAX_CLOUD_INIT_BYTES, type VirtualMachineInstance } from "@kubevirt-ts/kubevirt-api";

// A VMI's cloud-init data, inline, base64 or from the Secrets the kubelet
// mounted into the launcher pod (the launcher reads files; it has no
// account to read Secrets with), and the NoCloud seed ISO made from it.

const exec = promisify(execFile);

export type CloudInitData = Partial<Record<CloudInitSecretKind, string>>;

const decode = (base64: string | undefined) =>
  base64 === undefined ? undefined : Buffer.from(base64, "base64").toString("utf8");

/** A mounted Secret's data under the first of KubeVirt's keys it has. */
async function secretData(dir: string, volume: string, kind: CloudInitSecretKind, secretName: string): Promise<string> {
  const keys = CloudInitSecretKeys[kind];
  for (const key of keys) {
    const data = await readFile(join(dir, key)).catch((error: unknown) => {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
      throw new Error(`volume ${volume}: cannot read key ${key} of Secret ${secretName}: ${(error as Error).message}`);
    });
    if (data === undefined) continue;
    if (data.length > MAX_CLOUD_INIT_BYTES) {
      throw new Error(
        `volume ${volume}: key ${key} of Secret ${secretName} holds ${String(data.length)} bytes; ` +
          `at most ${String(MAX_CLOUD_INIT_BYTES)} are supported`,
      );
    }
    return data.toString("utf8");
  }
  throw new Error(
    `volume ${volume}: Secret ${secretName} has no key ${keys.join(" or ")}; put ` +
      `the cloud-init ${kind} under one of them`,
  );
}

/** The user and network data of each cloud-init volume, by volume name. */
export async function cloudInitData(
  vmi: VirtualMachineInstance,
  secretsDir: string,
): Promise<Map<string, CloudInitData>> {
  const data = new Map<string, CloudInitData>();
  for (const volume of vmi.spec.volumes ?? []) {
    const source = cloudInitSourceOf(volume);
    if (!source) continue;
    const userdata = source.userData ?? decode(source.userDataBase64);
    const networkdata = source.networkData ?? decode(source.networkDataBase64);
    data.set(volume.name, {
      ...(userdata !== undefined ? { userdata } : {}),
      ...(networkdata !== undefined ? { networkdata } : {}),
    });
  }
  for (const mount of cloudInitSecretMounts(vmi.spec)) {
    const value = await secretData(join(secretsDir, mount.relativeDir), mount.volume, mount.kind, mount.secretName);
    data.set(mount.volume, { ...data.get(mount.volume), [mount.kind]: value });
  }
  return data;
}

/**
 * What a cloud-init disk holds: the data, the instance's identity, and the SSH public keys of its access credentials.
 */
export interface CloudInitDisk {
  userData: string | undefined;
  networkData: string | undefined;
  instanceId: string;
  hostname: string;
  publicKeys: string[];
}

/** The values of a Secret as the kubelet mounted it, by key (its own ..data entries left out), sorted by key. */
export async function mountedSecret(dir: string, secretName: string): Promise<[string, string][]> {
  const names = (await readdir(dir)).filter((name) => !name.startsWith("..")).sort();
  return Promise.all(
    names.map(async (name): Promise<[string, string]> => [
      name,
      await readFile(join(dir, name), "utf8").catch((error: unknown) => {
        throw new Error(`access credential Secret ${secretName}: cannot read key ${name}: ${(error as Error).message}`);
      }),
    ]),
  );
}

/** The public keys in a Secret's value: a key per line, blank lines and comments left out. */
export const keysIn = (text: string): string[] =>
  text
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter((line) => line !== "" && !line.startsWith("#"));

/**
 * The SSH public keys of the VMI's access credentials that a cloud-init disk of that kind carries, from their Secrets
 * as the kubelet mounted them: every value of each Secret, a key per line.
 */
export async function sshPublicKeys(
  vmi: VirtualMachineInstance,
  credentialsDir: string,
  propagation: "noCloud" | "configDrive",
): Promise<string[]> {
  const keys: string[] = [];
  for (const mount of accessCredentialMounts(vmi.spec).filter((m) => m.propagation === propagation)) {
    for (const [, text] of await mountedSecret(join(credentialsDir, mount.relativeDir), mount.secretName))
      keys.push(...keysIn(text));
  }
  return keys;
}

/**
 * Writes an OpenStack config drive (volume label config-2), as KubeVirt's cloudInitConfigDrive: the metadata, user
 * data and network data under openstack/latest/, where cloud-init's ConfigDrive datasource reads them.
 */
export async function configDriveIso(target: string, disk: CloudInitDisk): Promise<void> {
  const dir = await mkdtemp(`${target}.src-`);
  try {
    const latest = join(dir, "openstack", "latest");
    await mkdir(latest, { recursive: true });
    const publicKeys = Object.fromEntries(disk.publicKeys.map((key, i) => [`key-${String(i)}`, key]));
    const metadata = {
      uuid: disk.instanceId,
      instance_id: disk.instanceId,
      hostname: disk.hostname,
      name: disk.hostname,
      ...(disk.publicKeys.length > 0 ? { public_keys: publicKeys } : {}),
    };
    await writeFile(join(latest, "meta_data.json"), JSON.stringify(metadata));
    await writeFile(join(latest, "user_data"), disk.userData ?? "");
    if (disk.networkData !== undefined) await writeFile(join(latest, "network_data.json"), disk.networkData);
    await exec("genisoimage", ["-quiet", "-output", target, "-volid", "config-2", "-joliet", "-rock", dir]);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * Writes a NoCloud seed ISO (volume label cidata) with the given data; SSH public keys go in its metadata's
 * public-keys.
 */
export async function cloudInitIso(target: string, disk: CloudInitDisk): Promise<void> {
  const dir = await mkdtemp(`${target}.src-`);
  try {
    // JSON strings are YAML's double-quoted strings: a key or a name is written as it is, whatever it holds.
    const keys =
      disk.publicKeys.length > 0
        ? `public-keys:\n${disk.publicKeys.map((k) => `  - ${JSON.stringify(k)}\n`).join("")}`
        : "";
    await writeFile(
      join(dir, "meta-data"),
      `instance-id: ${JSON.stringify(disk.instanceId)}\nlocal-hostname: ${JSON.stringify(disk.hostname)}\n${keys}`,
    );
    await writeFile(join(dir, "user-data"), disk.userData ?? "");
    const files = ["user-data", "meta-data"];
    if (disk.networkData !== undefined) {
      await writeFile(join(dir, "network-config"), disk.networkData);
      files.push("network-config");
    }
    // The NoCloud datasource looks for a filesystem labelled "cidata".
    await exec("genisoimage", [
      "-quiet",
      "-output",
      target,
      "-volid",
      "cidata",
      "-joliet",
      "-rock",
      ...files.map((f) => join(dir, f)),
    ]);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
