import { type NodeDevice, NodeDevices, deviceResourceName } from "@kubevirt-ts/node-contract";
import {
  type AllocateRequest,
  type ContainerAllocateResponse,
  type Device,
  HEALTHY,
  type PreferredAllocationRequest,
  UNHEALTHY,
} from "./api.ts";

// What the handler's device plugins advertise and hand out, as KubeVirt's
// handler does (pkg/virt-handler/device-manager): three node devices, each a
// resource devices.kubevirt.io/<name> of many interchangeable units, since
// any number of launchers may share the one device node. Every unit is
// Healthy while the node has the character device and Unhealthy while it has
// not, so the node's allocatable count is 0 where the device is missing. The
// devices and their resource names are kubevirt-api's (node-devices.ts).

export type { NodeDevice };

/** KubeVirt's permanent device plugins, in the order they are started. */
export const NODE_DEVICES: readonly NodeDevice[] = [NodeDevices.kvm, NodeDevices.tun, NodeDevices.vhostNet];

/** How many units each resource has: KubeVirt's default (virt-handler's --max-devices), i.e. launchers per node. */
export const UNITS_PER_DEVICE = 1000;

/** Most containers one Allocate or GetPreferredAllocation request may name (a pod's containers). */
export const MAX_CONTAINER_REQUESTS = 64;

/** The file name of the device's plugin socket in the kubelet's device-plugins folder, as KubeVirt's. */
export const socketName = (device: NodeDevice) => `kubevirt-${device.name}.sock`;

const unitId = (device: NodeDevice, i: number) => `${device.name}${String(i)}`;

/** The units ListAndWatch sends: all healthy while the node has the device, all unhealthy while it has not. */
export function deviceUnits(device: NodeDevice, present: boolean, units = UNITS_PER_DEVICE): Device[] {
  const health = present ? HEALTHY : UNHEALTHY;
  return Array.from({ length: units }, (_, i) => ({ ID: unitId(device, i), health }));
}

/** A request the plugin refuses: the message names the field and what is wrong with it. */
export class AllocationRefused extends Error {
  constructor(message: string) {
    super(message);
    this.name = "AllocationRefused";
  }
}

function checkIds(device: NodeDevice, ids: readonly string[], field: string, units: number) {
  const known = new RegExp(`^${device.name.replace(/[^a-z0-9]/g, "\\$&")}(\\d{1,7})$`);
  for (const id of ids) {
    const index = known.exec(id)?.[1];
    if (index === undefined || Number(index) >= units)
      throw new AllocationRefused(
        `${field}: ${JSON.stringify(id.slice(0, 64))} is not a unit of ${deviceResourceName(device)} ` +
          `(${device.name}0 to ${device.name}${String(units - 1)})`,
      );
  }
}

function checkContainers(count: number) {
  if (count === 0) throw new AllocationRefused("container_requests: empty; the kubelet names one entry per container");
  if (count > MAX_CONTAINER_REQUESTS)
    throw new AllocationRefused(
      `container_requests: ${String(count)} containers, more than ${String(MAX_CONTAINER_REQUESTS)}`,
    );
}

/**
 * The answer to Allocate: each container that asked for units gets the device node, read-write, at its path; the
 * node's mode and owner decide who in the container may open it (see ADR 23). A unit that is not ours is refused.
 */
export function allocate(
  device: NodeDevice,
  request: AllocateRequest,
  units = UNITS_PER_DEVICE,
): { container_responses: ContainerAllocateResponse[] } {
  checkContainers(request.container_requests.length);
  return {
    container_responses: request.container_requests.map((container, i) => {
      checkIds(device, container.devices_ids, `container_requests[${String(i)}].devices_ids`, units);
      return {
        envs: {},
        mounts: [],
        devices: [{ container_path: device.path, host_path: device.path, permissions: "rw" }],
        annotations: {},
        cdi_devices: [],
      };
    }),
  };
}

/** Any units do (they are one device): the ones the kubelet must include, then the first available, up to the size. */
export function preferredAllocation(
  device: NodeDevice,
  request: PreferredAllocationRequest,
  units = UNITS_PER_DEVICE,
): { container_responses: { deviceIDs: string[] }[] } {
  checkContainers(request.container_requests.length);
  return {
    container_responses: request.container_requests.map((c, i) => {
      checkIds(device, c.must_include_deviceIDs, `container_requests[${String(i)}].must_include_deviceIDs`, units);
      checkIds(device, c.available_deviceIDs, `container_requests[${String(i)}].available_deviceIDs`, units);
      const chosen = new Set(c.must_include_deviceIDs);
      for (const id of c.available_deviceIDs) {
        if (chosen.size >= c.allocation_size) break;
        chosen.add(id);
      }
      return { deviceIDs: [...chosen] };
    }),
  };
}
