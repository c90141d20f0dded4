import { execFile } from "node:child_process";
import { chmod, chown, mkdir, mkdtemp, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { LAUNCHER_UID, MAX_CLOUD_INIT_BYTES, type VirtualMachineInstance } from "@kubevirt-ts/kubevirt-api";
import { cloudInitData } from "./cloud-init.ts";

// The launcher's reading of cloud-init Secrets, from folders laid out as the
// kubelet mounts a Secret volume (each key a symlink into a timestamped
// folder through ..data), owned by root and readable by the pod's group.

const exec = promisify(execFile);
let secretsDir: string;

beforeEach(async () => {
  secretsDir = await mkdtemp(join(tmpdir(), "cloud-init-secrets-"));
  await chmod(secretsDir, 0o755);
});
afterEach(async () => {
  await rm(secretsDir, { recursive: true, force: true });
});

/** A Secret volume as the kubelet writes it: mode 0440 (the chart's defaultMode), group the launcher's. */
async function mountSecret(relativeDir: string, data: Record<string, string | Buffer>): Promise<void> {
  const dir = join(secretsDir, relativeDir);
  const version = join(dir, "..2026_01_01_00_00_00.000000001");
  await mkdir(version, { recursive: true });
  for (const [key, value] of Object.entries(data)) {
    await writeFile(join(version, key), value);
    await chown(join(version, key), 0, LAUNCHER_UID);
    await chmod(join(version, key), 0o440);
    await symlink(join("..data", key), join(dir, key));
  }
  await symlink("..2026_01_01_00_00_00.000000001", join(dir, "..data"));
  for (const d of [join(secretsDir, relativeDir.split("/")[0] ?? ""), dir, version]) await chmod(d, 0o755);
}

function vmiWith(
  cloudInitNoCloud: NonNullable<NonNullable<VirtualMachineInstance["spec"]["volumes"]>[number]["cloudInitNoCloud"]>,
): VirtualMachineInstance {
  return {
    apiVersion: "kubevirt.io/v1",
    kind: "VirtualMachineInstance",
    metadata: { name: "testvm", namespace: "ns" },
    spec: {
      domain: { devices: {} },
      volumes: [
        { name: "root", emptyDisk: { capacity: "1Gi" } },
        { name: "cloudinitdisk", cloudInitNoCloud },
      ],
    },
  };
}

describe("cloudInitData", () => {
  it("reads user and network data from their Secrets under KubeVirt's keys", async () => {
    await mountSecret("cloudinitdisk/userdata", { userdata: "#cloud-config\npassword: s3cret\n" });
    await mountSecret("cloudinitdisk/networkdata", { networkData: "version: 2\n" });
    const data = await cloudInitData(
      vmiWith({ secretRef: { name: "user" }, networkDataSecretRef: { name: "net" } }),
      secretsDir,
    );
    expect(data.get("cloudinitdisk")).toEqual({
      userdata: "#cloud-config\npassword: s3cret\n",
      networkdata: "version: 2\n",
    });
  });

  it("takes userdata before userData, as KubeVirt does", async () => {
    await mountSecret("cloudinitdisk/userdata", { userData: "second", userdata: "first" });
    expect((await cloudInitData(vmiWith({ secretRef: { name: "user" } }), secretsDir)).get("cloudinitdisk")).toEqual({
      userdata: "first",
    });
  });

  it("combines a Secret's user data with inline network data", async () => {
    await mountSecret("cloudinitdisk/userdata", { userData: "#cloud-config\n" });
    expect(
      (await cloudInitData(vmiWith({ secretRef: { name: "user" }, networkData: "version: 2\n" }), secretsDir)).get(
        "cloudinitdisk",
      ),
    ).toEqual({ userdata: "#cloud-config\n", networkdata: "version: 2\n" });
  });

  it("names the Secret and the keys it looked for when the Secret has none of them", async () => {
    await mountSecret("cloudinitdisk/userdata", { "user-data": "#cloud-config\n" });
    await expect(cloudInitData(vmiWith({ secretRef: { name: "testvm-user" } }), secretsDir)).rejects.toThrow(
      "volume cloudinitdisk: Secret testvm-user has no key userdata or userData; put " +
        "the cloud-init userdata under one of them",
    );
  });

  it("refuses more data than a seed disk takes", async () => {
    await mountSecret("cloudinitdisk/userdata", { userdata: Buffer.alloc(MAX_CLOUD_INIT_BYTES + 1, "a") });
    await expect(cloudInitData(vmiWith({ secretRef: { name: "big" } }), secretsDir)).rejects.toThrow(
      /key userdata of Secret big holds 65537 bytes; at most 65536/,
    );
  });

  it("decodes inline base64 data as before", async () => {
    const data = await cloudInitData(
      vmiWith({
        userDataBase64: Buffer.from("#cloud-config\n").toString("base64"),
        networkDataBase64: Buffer.from("version: 2\n").toString("base64"),
      }),
      secretsDir,
    );
    expect(data.get("cloudinitdisk")).toEqual({ userdata: "#cloud-config\n", networkdata: "version: 2\n" });
  });

  it("takes inline user data as it is", async () => {
    expect(
      (await cloudInitData(vmiWith({ userData: "#cloud-config\nhostname: inline\n" }), secretsDir)).get(
        "cloudinitdisk",
      ),
    ).toEqual({ userdata: "#cloud-config\nhostname: inline\n" });
  });

  it("decodes a config drive's inline base64 data the same way", async () => {
    const vmi = vmiWith({});
    vmi.spec.volumes = [
      {
        name: "drive",
        cloudInitConfigDrive: {
          userDataBase64: Buffer.from("#cloud-config\n").toString("base64"),
          networkDataBase64: Buffer.from("{}").toString("base64"),
        },
      },
    ];
    expect((await cloudInitData(vmi, secretsDir)).get("drive")).toEqual({
      userdata: "#cloud-config\n",
      networkdata: "{}",
    });
  });

  // Each look starts a Node process as another user: allow for a loaded machine.
  it(
    "reads the Secret as the launcher's user, which the Secret's mode lets read it and nobody else",
    { timeout: 60_000 },
    async () => {
      await mountSecret("cloudinitdisk/userdata", { userdata: "#cloud-config\n" });
      const script = `import { cloudInitData } from ${JSON.stringify(new URL("./cloud-init.ts", import.meta.url).href)};
const vmi = ${JSON.stringify(vmiWith({ secretRef: { name: "user" } }))};
try {
  console.log(JSON.stringify((await cloudInitData(vmi, process.argv[1])).get("cloudinitdisk")));
} catch (e) {
  console.log(JSON.stringify(e.message));
}`;
      const as = async (uid: number, gid: number) =>
        JSON.parse(
          (
            await exec("setpriv", [
              `--reuid=${String(uid)}`,
              `--regid=${String(gid)}`,
              "--clear-groups",
              process.execPath,
              "--input-type=module",
              "-e",
              script,
              secretsDir,
            ])
          ).stdout,
        ) as unknown;
      expect(await as(LAUNCHER_UID, LAUNCHER_UID)).toEqual({ userdata: "#cloud-config\n" });
      expect(await as(LAUNCHER_UID + 1, LAUNCHER_UID + 1)).toMatch(/cannot read key userdata of Secret user: EACCES/);
    },
  );
});
