import {
  type CallOptions,
  type Client,
  type GrpcObject,
  type ServiceClientConstructor,
  type ServiceDefinition,
  type ServiceError,
  loadPackageDefinition,
} from "@grpc/grpc-js";
import { fromJSON } from "@grpc/proto-loader";

// The kubelet's device-plugin API, v1beta1 (k8s.io/kubelet's
// pkg/apis/deviceplugin/v1beta1), as a protobuf descriptor built here: the
// handler is one bundled file, so no .proto is read at run time. Only the
// field numbers and types reach the wire; the names are the proto's.

const string = (id: number) => ({ type: "string", id });
const repeated = (type: string, id: number) => ({ rule: "repeated", type, id });
const map = (id: number) => ({ keyType: "string", type: "string", id });
const method = (requestType: string, responseType: string, responseStream = false) => ({
  requestType,
  responseType,
  ...(responseStream ? { responseStream } : {}),
});

const descriptor = {
  nested: {
    v1beta1: {
      nested: {
        Empty: { fields: {} },
        DevicePluginOptions: {
          fields: {
            pre_start_required: { type: "bool", id: 1 },
            get_preferred_allocation_available: { type: "bool", id: 2 },
          },
        },
        RegisterRequest: {
          fields: {
            version: string(1),
            endpoint: string(2),
            resource_name: string(3),
            options: { type: "DevicePluginOptions", id: 4 },
          },
        },
        ListAndWatchResponse: { fields: { devices: repeated("Device", 1) } },
        NUMANode: { fields: { ID: { type: "int64", id: 1 } } },
        TopologyInfo: { fields: { nodes: repeated("NUMANode", 1) } },
        Device: { fields: { ID: string(1), health: string(2), topology: { type: "TopologyInfo", id: 3 } } },
        PreStartContainerRequest: { fields: { devices_ids: repeated("string", 1) } },
        PreStartContainerResponse: { fields: {} },
        PreferredAllocationRequest: {
          fields: { container_requests: repeated("ContainerPreferredAllocationRequest", 1) },
        },
        ContainerPreferredAllocationRequest: {
          fields: {
            available_deviceIDs: repeated("string", 1),
            must_include_deviceIDs: repeated("string", 2),
            allocation_size: { type: "int32", id: 3 },
          },
        },
        PreferredAllocationResponse: {
          fields: { container_responses: repeated("ContainerPreferredAllocationResponse", 1) },
        },
        ContainerPreferredAllocationResponse: { fields: { deviceIDs: repeated("string", 1) } },
        AllocateRequest: { fields: { container_requests: repeated("ContainerAllocateRequest", 1) } },
        ContainerAllocateRequest: { fields: { devices_ids: repeated("string", 1) } },
        CDIDevice: { fields: { name: string(1) } },
        AllocateResponse: { fields: { container_responses: repeated("ContainerAllocateResponse", 1) } },
        ContainerAllocateResponse: {
          fields: {
            envs: map(1),
            mounts: repeated("Mount", 2),
            devices: repeated("DeviceSpec", 3),
            annotations: map(4),
            cdi_devices: repeated("CDIDevice", 5),
          },
        },
        Mount: { fields: { container_path: string(1), host_path: string(2), read_only: { type: "bool", id: 3 } } },
        DeviceSpec: { fields: { container_path: string(1), host_path: string(2), permissions: string(3) } },
        Registration: { methods: { Register: method("RegisterRequest", "Empty") } },
        DevicePlugin: {
          methods: {
            GetDevicePluginOptions: method("Empty", "DevicePluginOptions"),
            ListAndWatch: method("Empty", "ListAndWatchResponse", true),
            GetPreferredAllocation: method("PreferredAllocationRequest", "PreferredAllocationResponse"),
            Allocate: method("AllocateRequest", "AllocateResponse"),
            PreStartContainer: method("PreStartContainerRequest", "PreStartContainerResponse"),
          },
        },
      },
    },
  },
};

// Field names as the proto has them; 64-bit integers as strings, which no message the handler reads carries anyway.
const definition = fromJSON(descriptor as Parameters<typeof fromJSON>[0], {
  keepCase: true,
  longs: String,
  defaults: true,
  arrays: true,
  objects: true,
});
const v1beta1 = (loadPackageDefinition(definition) as { v1beta1: GrpcObject }).v1beta1;

/** The client of a service, which also carries its ServiceDefinition for a server. */
const service = (name: string) => v1beta1[name] as ServiceClientConstructor;
export const RegistrationService = service("Registration") as unknown as (new (
  ...args: ConstructorParameters<ServiceClientConstructor>
) => RegistrationClient) & { service: ServiceDefinition };
export const DevicePluginService = service("DevicePlugin");
export type { ServiceDefinition };

/** The version string Register carries (the kubelet's pluginapi.Version). */
export const DEVICE_PLUGIN_API_VERSION = "v1beta1";
export const KUBELET_SOCKET = "kubelet.sock";
export const HEALTHY = "Healthy";
export const UNHEALTHY = "Unhealthy";

export interface Device {
  ID: string;
  health: typeof HEALTHY | typeof UNHEALTHY;
}
export interface DeviceSpec {
  container_path: string;
  host_path: string;
  permissions: string;
}
export interface ContainerAllocateResponse {
  envs: Record<string, string>;
  mounts: never[];
  devices: DeviceSpec[];
  annotations: Record<string, string>;
  cdi_devices: never[];
}
export interface AllocateRequest {
  container_requests: { devices_ids: string[] }[];
}
export interface PreferredAllocationRequest {
  container_requests: { available_deviceIDs: string[]; must_include_deviceIDs: string[]; allocation_size: number }[];
}
export interface RegisterRequest {
  version: string;
  endpoint: string;
  resource_name: string;
  options: { pre_start_required: boolean; get_preferred_allocation_available: boolean };
}

/** The kubelet's side of registration, as a client calls it. */
export interface RegistrationClient extends Client {
  Register(request: RegisterRequest, options: CallOptions, done: (error: ServiceError | null) => void): void;
}
