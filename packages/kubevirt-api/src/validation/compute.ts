import { parseQuantity } from "../quantity.ts";
import type { DomainSpec } from "../schema/vmi.ts";
import type { Causes } from "./causes.ts";

/** KubeVirt's cap on the number of vCPUs of one guest. */
export const MAX_VCPUS = 512;
const MIN_GUEST_MEMORY = 2 ** 20;

function formatBytes(bytes: number): string {
  return bytes % 2 ** 20 === 0 ? `${bytes / 2 ** 20}Mi` : `${bytes} bytes`;
}

function validateCpu(domain: DomainSpec, path: string, causes: Causes): void {
  const cpu = domain.cpu;
  if (!cpu) return;
  let vcpus = 1;
  for (const key of ["sockets", "cores", "threads"] as const) {
    const value = cpu[key];
    if (value === undefined) continue;
    if (value < 1) causes.invalid(`${path}.cpu.${key}`, `must be at least 1, got ${value}`);
    vcpus *= Math.max(value, 1);
  }
  if (vcpus > MAX_VCPUS) {
    causes.invalid(
      `${path}.cpu`,
      `gives ${vcpus} vCPUs (sockets × cores × threads); at most ${MAX_VCPUS} are supported`,
    );
  }
}

function validateResources(domain: DomainSpec, path: string, causes: Causes): void {
  const { requests = {}, limits = {} } = domain.resources ?? {};
  for (const [kind, list] of [
    ["requests", requests],
    ["limits", limits],
  ] as const) {
    for (const [name, value] of Object.entries(list)) {
      const parsed = parseQuantity(value);
      if (parsed !== undefined && parsed < 0) {
        causes.invalid(`${path}.resources.${kind}.${name}`, `must not be negative, got ${String(value)}`);
      }
    }
  }
  for (const name of ["cpu", "memory"] as const) {
    const request = requests[name];
    const limit = limits[name];
    if (request === undefined || limit === undefined) continue;
    const r = parseQuantity(request);
    const l = parseQuantity(limit);
    if (r !== undefined && l !== undefined && r > l) {
      causes.invalid(
        `${path}.resources.requests.${name}`,
        `(${String(request)}) is greater than ${path}.resources.limits.${name} ` +
          `(${String(limit)}); lower the request or raise the limit`,
      );
    }
  }
}

function validateMemory(domain: DomainSpec, path: string, causes: Causes, sizedElsewhere: boolean): void {
  const guest = domain.memory?.guest;
  const request = domain.resources?.requests?.memory;
  const limit = domain.resources?.limits?.memory;
  const effective = guest ?? request ?? limit;
  if (effective === undefined) {
    if (sizedElsewhere) return;
    causes.required(
      `${path}.memory.guest`,
      `is not set and neither is ${path}.resources.requests.memory: set one of them to give the guest memory, e.g. 1Gi`,
    );
    return;
  }
  const field =
    guest !== undefined
      ? `${path}.memory.guest`
      : request !== undefined
        ? `${path}.resources.requests.memory`
        : `${path}.resources.limits.memory`;
  const bytes = parseQuantity(effective);
  if (bytes === undefined) return; // the schema reports malformed quantities
  if (bytes <= 0) {
    causes.invalid(field, `must be greater than 0, got ${String(effective)}`);
  } else if (bytes < MIN_GUEST_MEMORY) {
    causes.invalid(field, `must be at least 1Mi, got ${String(effective)} (${formatBytes(bytes)})`);
  }
  if (guest !== undefined && limit !== undefined) {
    const limitBytes = parseQuantity(limit);
    if (limitBytes !== undefined && bytes > limitBytes) {
      causes.invalid(field, `(${String(guest)}) must not exceed ${path}.resources.limits.memory (${String(limit)})`);
    }
  }
}

function validateMachine(domain: DomainSpec, path: string, causes: Causes): void {
  const type = domain.machine?.type;
  if (type === undefined || type === "q35" || type.startsWith("pc-q35")) return;
  causes.notSupported(
    `${path}.machine.type`,
    `"${type}" is not supported; use q35 or a versioned pc-q35-* machine type`,
  );
}

function isCleanAbsolutePath(value: string): boolean {
  return value.startsWith("/") && value !== "/" && !value.split("/").some((part) => part === ".." || part === ".");
}

/** KubeVirt's rules that tie features to firmware and the clock to one mode. */
function validateFeaturesAndClock(domain: DomainSpec, path: string, causes: Causes): void {
  const efi = domain.firmware?.bootloader?.efi;
  if (efi && efi.secureBoot !== false && domain.features?.smm?.enabled === false) {
    causes.invalid(
      `${path}.features.smm.enabled`,
      "is false, but secure boot (on unless efi.secureBoot is false) needs SMM: enable SMM " +
        "or set firmware.bootloader.efi.secureBoot: false",
    );
  }
  const watchdog = domain.devices.watchdog;
  if (watchdog && !watchdog.i6300esb)
    causes.required(
      `${path}.devices.watchdog.i6300esb`,
      "is required: name the watchdog's model, i6300esb (the one KubeVirt offers on amd64)",
    );
  const clock = domain.clock;
  if (clock?.utc && clock.timezone !== undefined)
    causes.invalid(`${path}.clock`, "sets both utc and timezone; choose one");
  if (clock?.timezone !== undefined && !/^[A-Za-z][A-Za-z0-9_+-]*(\/[A-Za-z0-9_+-]+)*$/.test(clock.timezone)) {
    causes.invalid(
      `${path}.clock.timezone`,
      `must be a time zone name such as Europe/Paris, got ${JSON.stringify(clock.timezone)}`,
    );
  }
}

function validateFirmware(domain: DomainSpec, path: string, causes: Causes): void {
  const firmware = domain.firmware;
  if (!firmware) return;
  if (firmware.bootloader?.bios && firmware.bootloader.efi) {
    causes.invalid(`${path}.firmware.bootloader`, "sets both bios and efi; choose one");
  }
  const kernelBoot = firmware.kernelBoot;
  if (!kernelBoot) return;
  const kernelPath = `${path}.firmware.kernelBoot`;
  if (!kernelBoot.container) {
    if (kernelBoot.kernelArgs !== undefined) {
      causes.required(
        `${kernelPath}.container`,
        "is required when kernelArgs is set: name the image holding the kernel",
      );
    }
    return;
  }
  const { image, kernelPath: kernel, initrdPath: initrd } = kernelBoot.container;
  if (image.trim() === "") causes.required(`${kernelPath}.container.image`, "must name the image holding the kernel");
  if (kernel === undefined && initrd === undefined) {
    causes.required(`${kernelPath}.container`, "must set kernelPath, initrdPath or both");
  }
  for (const [key, value] of [
    ["kernelPath", kernel],
    ["initrdPath", initrd],
  ] as const) {
    if (value !== undefined && !isCleanAbsolutePath(value)) {
      causes.invalid(
        `${kernelPath}.container.${key}`,
        `must be an absolute path without '.' or '..' parts, got ${JSON.stringify(value)}`,
      );
    }
  }
}

/**
 * KubeVirt's rules for CPU, memory, machine and firmware; `sizedElsewhere`: an instancetype not yet found gives the
 * memory.
 */
export function validateCompute(domain: DomainSpec, path: string, causes: Causes, sizedElsewhere = false): void {
  validateCpu(domain, path, causes);
  validateResources(domain, path, causes);
  validateMemory(domain, path, causes, sizedElsewhere);
  validateMachine(domain, path, causes);
  validateFirmware(domain, path, causes);
  validateFeaturesAndClock(domain, path, causes);
}
