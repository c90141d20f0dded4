import { parseQuantity } from "../quantity.ts";
import type { Disk, VmiSpec, Volume } from "../schema/vmi.ts";
import type { Causes } from "./causes.ts";
import { dnsLabelProblem, dnsSubdomainProblem } from "./names.ts";

/** The largest cloud-init data kubevirt-ts embeds in a NoCloud seed disk. */
export const MAX_CLOUD_INIT_BYTES = 64 * 1024;

const VOLUME_SOURCES = [
  "containerDisk",
  "cloudInitNoCloud",
  "cloudInitConfigDrive",
  "emptyDisk",
  "persistentVolumeClaim",
  "dataVolume",
  "ephemeral",
  "configMap",
  "secret",
  "serviceAccount",
  "downwardAPI",
] as const;
/** The longest label an ISO 9660 volume takes. */
const MAX_VOLUME_LABEL = 32;
const DISK_TARGETS = ["disk", "cdrom", "lun"] as const;

/** Indexes of the first use of each name, reporting later duplicates. */
function checkUniqueNames(items: readonly { name: string }[], path: string, what: string, causes: Causes): void {
  const seen = new Map<string, number>();
  items.forEach((item, i) => {
    const first = seen.get(item.name);
    if (first !== undefined) {
      causes.duplicate(
        `${path}[${i}].name`,
        `"${item.name}" is already the name of ${path}[${first}]; each ${what} needs a name of its own`,
      );
    } else {
      seen.set(item.name, i);
    }
  });
}

function validateDisk(disk: Disk, path: string, volumes: ReadonlyMap<string, Volume>, causes: Causes): void {
  const nameProblem = dnsLabelProblem(disk.name);
  if (nameProblem) causes.invalid(`${path}.name`, nameProblem);

  const targets = DISK_TARGETS.filter((t) => disk[t] !== undefined);
  if (targets.length > 1) {
    causes.invalid(path, `sets ${targets.join(" and ")}; a disk has a single target type: disk, cdrom or lun`);
  }
  if (disk.cdrom?.bus === "virtio") {
    causes.notSupported(`${path}.cdrom.bus`, "is virtio, which CD-ROMs cannot use; use sata or scsi");
  }
  if (disk.disk?.bus === "sata" && disk.disk.readonly === true) {
    causes.invalid(
      `${path}.disk.readonly`,
      "is true, but sata hard disks cannot be read-only; use the virtio or scsi bus, or a cdrom",
    );
  }
  const onClaim =
    volumes.get(disk.name)?.persistentVolumeClaim !== undefined || volumes.get(disk.name)?.dataVolume !== undefined;
  if (disk.lun && !onClaim && volumes.has(disk.name)) {
    causes.invalid(
      `${path}.lun`,
      "needs a persistentVolumeClaim or dataVolume volume; attach other volumes as disk or cdrom",
    );
  } else if (disk.lun) {
    causes.notSupported(
      `${path}.lun`,
      "is not supported yet: it passes a Block-mode claim's SCSI device through to the guest, " +
        "which kubevirt-ts does not do; attach the claim as a disk",
    );
  }
  if (disk.bootOrder !== undefined && disk.bootOrder < 1) {
    causes.invalid(`${path}.bootOrder`, `must be 1 or more when set, got ${disk.bootOrder}`);
  }
  if (!volumes.has(disk.name)) {
    causes.notFound(
      `${path}.name`,
      `"${disk.name}" matches no volume; add a volume named "${disk.name}" to the volumes, or remove the disk`,
    );
  }
}

function decodedLength(base64: string): number | undefined {
  if (!/^[A-Za-z0-9+/\s]*={0,2}\s*$/.test(base64)) return undefined;
  return Buffer.from(base64, "base64").length;
}

function validateCloudInit(source: NonNullable<Volume["cloudInitNoCloud"]>, path: string, causes: Causes): void {
  const { userData, userDataBase64, secretRef, networkData, networkDataBase64, networkDataSecretRef } = source;
  if (
    [userData, userDataBase64, secretRef, networkData, networkDataBase64, networkDataSecretRef].every(
      (v) => v === undefined,
    )
  ) {
    causes.required(path, "has no data: set userData, userDataBase64 or secretRef (and optionally networkData)");
  }
  for (const [plain, encoded, secret] of [
    ["userData", "userDataBase64", "secretRef"],
    ["networkData", "networkDataBase64", "networkDataSecretRef"],
  ] as const) {
    const set = [plain, encoded, secret].filter((f) => source[f] !== undefined);
    if (set.length > 1)
      causes.invalid(`${path}.${set[1] ?? ""}`, `is set together with ${set[0] ?? ""}; set only one of them`);
    const secretName = source[secret]?.name;
    if (secretName !== undefined) {
      const problem = dnsSubdomainProblem(secretName);
      if (problem) causes.invalid(`${path}.${secret}.name`, `${problem}; name a Secret in the VMI's namespace`);
    }
    const text = source[plain];
    const base64 = source[encoded];
    const size = text !== undefined ? Buffer.byteLength(text) : base64 !== undefined ? decodedLength(base64) : 0;
    if (size === undefined) {
      causes.invalid(`${path}.${encoded}`, "is not valid base64; encode the data with `base64 -w0`");
    } else if (size > MAX_CLOUD_INIT_BYTES) {
      const field = text !== undefined ? plain : encoded;
      causes.invalid(`${path}.${field}`, `is ${size} bytes; at most ${MAX_CLOUD_INIT_BYTES} bytes are supported`);
    }
  }
}

function validateVolume(volume: Volume, path: string, causes: Causes): void {
  const nameProblem = dnsLabelProblem(volume.name);
  if (nameProblem) causes.invalid(`${path}.name`, nameProblem);

  const sources = VOLUME_SOURCES.filter((s) => volume[s] !== undefined);
  if (sources.length !== 1) {
    const got = sources.length === 0 ? "none" : sources.join(" and ");
    causes.invalid(path, `must have exactly one source (${VOLUME_SOURCES.join(", ")}); it has ${got}`);
  }
  if (volume.containerDisk?.image.trim() === "") {
    causes.required(`${path}.containerDisk.image`, "must name the image holding the disk");
  }
  if (volume.containerDisk?.path !== undefined && !volume.containerDisk.path.startsWith("/")) {
    causes.invalid(
      `${path}.containerDisk.path`,
      `must be an absolute path in the image, got ${JSON.stringify(volume.containerDisk.path)}`,
    );
  }
  if (volume.emptyDisk) {
    const bytes = parseQuantity(volume.emptyDisk.capacity);
    if (bytes !== undefined && bytes <= 0) {
      causes.invalid(`${path}.emptyDisk.capacity`, `must be greater than 0, got ${String(volume.emptyDisk.capacity)}`);
    }
  }
  if (volume.persistentVolumeClaim) {
    const problem = dnsSubdomainProblem(volume.persistentVolumeClaim.claimName);
    if (problem)
      causes.invalid(
        `${path}.persistentVolumeClaim.claimName`,
        `${problem}; name a PersistentVolumeClaim in the VMI's namespace`,
      );
  }
  if (volume.ephemeral) {
    const problem = dnsSubdomainProblem(volume.ephemeral.persistentVolumeClaim.claimName);
    if (problem)
      causes.invalid(
        `${path}.ephemeral.persistentVolumeClaim.claimName`,
        `${problem}; name a PersistentVolumeClaim in the VMI's namespace`,
      );
  }
  if (volume.dataVolume) {
    const problem = dnsSubdomainProblem(volume.dataVolume.name);
    if (problem) causes.invalid(`${path}.dataVolume.name`, `${problem}; name a DataVolume in the VMI's namespace`);
  }
  if (volume.cloudInitNoCloud) validateCloudInit(volume.cloudInitNoCloud, `${path}.cloudInitNoCloud`, causes);
  if (volume.cloudInitConfigDrive)
    validateCloudInit(volume.cloudInitConfigDrive, `${path}.cloudInitConfigDrive`, causes);
  validateConfigVolume(volume, path, causes);
}

/**
 * configMap, secret, serviceAccount and downwardAPI: what they name is in the VMI's namespace, and their disks' labels
 * fit ISO 9660.
 */
function validateConfigVolume(volume: Volume, path: string, causes: Causes): void {
  const names: [string, string | undefined][] = [
    ["configMap.name", volume.configMap?.name],
    ["secret.secretName", volume.secret?.secretName],
    ["serviceAccount.serviceAccountName", volume.serviceAccount?.serviceAccountName],
  ];
  for (const [field, name] of names) {
    const problem = name === undefined ? undefined : dnsSubdomainProblem(name);
    if (problem) causes.invalid(`${path}.${field}`, `${problem}; name an object in the VMI's namespace`);
  }
  for (const source of ["configMap", "secret", "downwardAPI"] as const) {
    const label = volume[source]?.volumeLabel;
    if (label !== undefined && (label.length > MAX_VOLUME_LABEL || !/^[A-Za-z0-9_-]*$/.test(label))) {
      causes.invalid(
        `${path}.${source}.volumeLabel`,
        `is ${JSON.stringify(label)}; an ISO 9660 label has at most ${MAX_VOLUME_LABEL} letters, digits, '-' and '_'`,
      );
    }
  }
  (volume.downwardAPI?.fields ?? []).forEach((file, i) => {
    const p = `${path}.downwardAPI.fields[${i}]`;
    if (file.path === "" || file.path.startsWith("/") || file.path.split("/").includes(".."))
      causes.invalid(`${p}.path`, `is ${JSON.stringify(file.path)}; give a relative path without '..'`);
    if ((file.fieldRef === undefined) === (file.resourceFieldRef === undefined))
      causes.invalid(p, "must have exactly one of fieldRef and resourceFieldRef");
  });
}

/** KubeVirt's rules for access credentials, and what kubevirt-ts cannot do with them yet. */
function validateAccessCredentials(spec: VmiSpec, path: string, causes: Causes): void {
  const volumes = spec.volumes ?? [];
  (spec.accessCredentials ?? []).forEach((credential, i) => {
    const p = `${path}.accessCredentials[${i}]`;
    const kinds = (["sshPublicKey", "userPassword"] as const).filter((k) => credential[k] !== undefined);
    if (kinds.length !== 1)
      causes.invalid(
        p,
        "must have exactly one of sshPublicKey and userPassword; it " +
          `has ${kinds.length === 0 ? "none" : kinds.join(" and ")}`,
      );
    if (credential.userPassword) {
      const secretProblem = dnsSubdomainProblem(credential.userPassword.source.secret.secretName);
      if (secretProblem)
        causes.invalid(
          `${p}.userPassword.source.secret.secretName`,
          `${secretProblem}; name a Secret in the VMI's namespace`,
        );
      if (!credential.userPassword.propagationMethod.qemuGuestAgent)
        causes.required(
          `${p}.userPassword.propagationMethod.qemuGuestAgent`,
          "must be set: passwords reach the guest through its QEMU guest agent",
        );
    }
    const key = credential.sshPublicKey;
    if (!key) return;
    const secretProblem = dnsSubdomainProblem(key.source.secret.secretName);
    if (secretProblem)
      causes.invalid(
        `${p}.sshPublicKey.source.secret.secretName`,
        `${secretProblem}; name a Secret in the VMI's namespace`,
      );
    const methods = (["noCloud", "configDrive", "qemuGuestAgent"] as const).filter(
      (m) => key.propagationMethod[m] !== undefined,
    );
    if (methods.length !== 1) {
      causes.invalid(
        `${p}.sshPublicKey.propagationMethod`,
        "must have exactly one of noCloud, configDrive and qemuGuestAgent; it " +
          `has ${methods.length === 0 ? "none" : methods.join(" and ")}`,
      );
      return;
    }
    if (key.propagationMethod.qemuGuestAgent?.users.length === 0) {
      causes.required(
        `${p}.sshPublicKey.propagationMethod.qemuGuestAgent.users`,
        "must name at least one user of the guest whose authorized_keys get the keys",
      );
    }
    // KubeVirt's rule: the keys ride on a cloud-init disk of the same kind.
    if (key.propagationMethod.noCloud && !volumes.some((v) => v.cloudInitNoCloud)) {
      causes.invalid(
        `${p}.sshPublicKey.propagationMethod.noCloud`,
        "needs a cloudInitNoCloud volume to carry the keys; add one (its user data may be empty)",
      );
    }
    if (key.propagationMethod.configDrive && !volumes.some((v) => v.cloudInitConfigDrive)) {
      causes.invalid(
        `${p}.sshPublicKey.propagationMethod.configDrive`,
        "needs a cloudInitConfigDrive volume to carry the keys; add one (its user data may be empty)",
      );
    }
  });
}

export function validateStorage(spec: VmiSpec, path: string, causes: Causes): void {
  validateAccessCredentials(spec, path, causes);
  const disks = spec.domain.devices.disks ?? [];
  const volumes = spec.volumes ?? [];
  const disksPath = `${path}.domain.devices.disks`;
  const volumesPath = `${path}.volumes`;

  checkUniqueNames(volumes, volumesPath, "volume", causes);
  const serviceAccounts = volumes.flatMap((v, i) => (v.serviceAccount ? [i] : []));
  if (serviceAccounts.length > 1)
    causes.invalid(
      `${volumesPath}[${String(serviceAccounts[1])}].serviceAccount`,
      "is a second serviceAccount volume; a VMI's launcher runs as one ServiceAccount, so keep one",
    );
  volumes.forEach((v, i) => {
    validateVolume(v, `${volumesPath}[${i}]`, causes);
  });

  // Disks attach the volume of the same name, so a repeated disk name would
  // attach one volume twice.
  checkUniqueNames(disks, disksPath, "disk (and the volume it attaches)", causes);
  const volumesByName = new Map(volumes.map((v) => [v.name, v]));
  disks.forEach((d, i) => {
    validateDisk(d, `${disksPath}[${i}]`, volumesByName, causes);
  });
}
