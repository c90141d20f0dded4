// The validation table, shared by the unit test (our validation functions)
// and the integration test (what the real API server accepts and refuses).
import { readFileSync } from "node:fs";
import { parseAllDocuments } from "yaml";
import type { DataVolumeSpec, VirtualMachine } from "../src/index.ts";
import { newVm, newVmi, newVmiSpec } from "./builders.ts";

export interface ValidationCase {
  name: string;
  object: unknown;
  /** For invalid objects: the field the first cause names, and what its message says. */
  invalid?: { field: string; message: RegExp };
  /** What the API server does with the object without our admission webhook. */
  apiServer?: "accepts" | "refuses";
}

/** The KubeVirt object of an example (its other documents, a claim say, are the cluster's business). */
function example(file: string): unknown {
  const documents = parseAllDocuments(readFileSync(new URL(`../../../examples/${file}`, import.meta.url), "utf8")).map(
    (d) => d.toJS() as { apiVersion?: string },
  );
  return documents.find((d) => d.apiVersion?.startsWith("kubevirt.io/"));
}

const tpl = "spec.template.spec";

/** A VM whose root disk is the DataVolume of its one template, with that spec. */
function dataVolumeVm(spec: DataVolumeSpec, namespace?: string): VirtualMachine {
  return newVm(
    newVmiSpec((s) => {
      s.volumes = [{ name: "containerdisk", dataVolume: { name: "root-dv" } }];
    }),
    (vm) => {
      if (namespace) vm.metadata.namespace = namespace;
      vm.spec.dataVolumeTemplates = [{ metadata: { name: "root-dv" }, spec }];
    },
  );
}

export const validationCases: ValidationCase[] = [
  // Valid.
  {
    name: "KubeVirt's example VM with a containerDisk and cloud-init",
    object: example("vm-containerdisk-cloudinit.yaml"),
    apiServer: "accepts",
  },
  { name: "a VMI with an emptyDisk", object: example("vmi-emptydisk.yaml"), apiServer: "accepts" },
  {
    name: "a VM with a disk on a claim, and an ISO on a read-only claim as a CD-ROM",
    object: newVm(
      newVmiSpec((s) => {
        s.domain.devices.disks?.push(
          { name: "data", disk: { bus: "virtio" } },
          { name: "installer", cdrom: { bus: "sata" }, bootOrder: 2 },
        );
        s.volumes?.push(
          { name: "data", persistentVolumeClaim: { claimName: "data" } },
          { name: "installer", persistentVolumeClaim: { claimName: "debian-iso", readOnly: true } },
        );
      }),
    ),
    apiServer: "accepts",
  },
  {
    name: "a VM with an ephemeral disk over a claim",
    object: newVm(
      newVmiSpec((s) => {
        s.domain.devices.disks?.push({ name: "scratch", disk: { bus: "virtio" } });
        s.volumes?.push({
          name: "scratch",
          ephemeral: { persistentVolumeClaim: { claimName: "golden-image", readOnly: true } },
        });
      }),
    ),
    apiServer: "accepts",
  },
  {
    name: "a VM with SSH keys and a password through the guest agent",
    object: newVm(
      newVmiSpec(
        (s) =>
          (s.accessCredentials = [
            {
              sshPublicKey: {
                source: { secret: { secretName: "my-keys" } },
                propagationMethod: { qemuGuestAgent: { users: ["debian"] } },
              },
            },
            {
              userPassword: {
                source: { secret: { secretName: "my-passwords" } },
                propagationMethod: { qemuGuestAgent: {} },
              },
            },
          ]),
      ),
    ),
    apiServer: "accepts",
  },
  { name: "the Debian guest example with a cloud-init user", object: example("vm-debian.yaml"), apiServer: "accepts" },
  {
    name: "the Debian guest example with a data disk on a claim",
    object: example("vm-debian-data-disk.yaml"),
    apiServer: "accepts",
  },
  {
    name: "KubeVirt's vm-alpine-datavolume shape: the Debian guest on a DataVolume from a registry",
    object: example("vm-debian-datavolume.yaml"),
    apiServer: "accepts",
  },
  ...(["Always", "RerunOnFailure", "Manual", "Halted", "Once"] as const).map((runStrategy): ValidationCase => ({
    name: `runStrategy ${runStrategy}`,
    object: newVm(undefined, (vm) => (vm.spec.runStrategy = runStrategy)),
    apiServer: "accepts",
  })),
  {
    name: "the deprecated running: true",
    object: newVm(undefined, (vm) => {
      delete vm.spec.runStrategy;
      vm.spec.running = true;
    }),
    apiServer: "accepts",
  },
  {
    name: "memory.guest without resources",
    object: newVm(
      newVmiSpec((s) => {
        delete s.domain.resources;
        s.domain.memory = { guest: "1Gi" };
      }),
    ),
    apiServer: "accepts",
  },
  {
    name: "a cpu topology of 2 sockets, 2 cores, 1 thread",
    object: newVm(newVmiSpec((s) => (s.domain.cpu = { sockets: 2, cores: 2, threads: 1 }))),
    apiServer: "accepts",
  },
  {
    name: "named TCP and UDP ports of the pod's address forwarded to the guest, in its own vmNetworkCIDR",
    object: newVm(
      newVmiSpec((s) => {
        s.domain.devices.interfaces = [
          {
            name: "default",
            masquerade: {},
            ports: [{ name: "ssh", port: 22 }, { name: "dns", port: 53, protocol: "UDP" }, { port: 53 }],
          },
        ];
        s.networks = [{ name: "default", pod: { vmNetworkCIDR: "198.18.200.0/24" } }];
      }),
    ),
    apiServer: "accepts",
  },
  {
    // What `kubectl get vm -o yaml` gives on a KubeVirt cluster: its defaults written in, its finalizer, server-set
    // metadata.
    name: "a VM as a KubeVirt cluster exports it",
    object: {
      apiVersion: "kubevirt.io/v1",
      kind: "VirtualMachine",
      metadata: {
        // Its namespace is left out here: each test creates it in a namespace of its own.
        name: "exported",
        annotations: {
          "kubevirt.io/latest-observed-api-version": "v1",
          "kubevirt.io/storage-observed-api-version": "v1",
        },
        finalizers: ["kubevirt.io/virtualMachineControllerFinalize"],
        generation: 3,
      },
      spec: {
        runStrategy: "Always",
        template: {
          metadata: {
            creationTimestamp: null,
            labels: { "kubevirt.io/domain": "exported", "kubevirt.io/size": "small" },
          },
          spec: {
            architecture: "amd64",
            domain: {
              devices: {
                disks: [
                  { name: "containerdisk", disk: { bus: "virtio" } },
                  { name: "cloudinitdisk", disk: { bus: "virtio" } },
                ],
                interfaces: [{ name: "default", masquerade: {} }],
              },
              firmware: { uuid: "6f1a2b3c-4d5e-5f60-8a7b-9c0d1e2f3a4b" },
              machine: { type: "q35" },
              memory: { guest: "128Mi" },
              resources: { requests: { memory: "128Mi" } },
            },
            networks: [{ name: "default", pod: {} }],
            terminationGracePeriodSeconds: 0,
            volumes: [
              { name: "containerdisk", containerDisk: { image: "kubevirt-ts.local/tiny-guest:1" } },
              {
                name: "cloudinitdisk",
                cloudInitNoCloud: { userDataBase64: Buffer.from("#cloud-config\n").toString("base64") },
              },
            ],
          },
        },
      },
    },
    apiServer: "accepts",
  },
  {
    name: "another architecture than amd64",
    object: newVm(newVmiSpec((s) => (s.architecture = "arm64"))),
    invalid: { field: `${tpl}.architecture`, message: /only amd64 guests run here/ },
    apiServer: "accepts",
  },
  {
    name:
      "a Windows-style VM: Hyper-V enlightenments, SMM, EFI with secure boot, persistent " +
      "EFI variables and TPM, local time and timers",
    object: newVm(
      newVmiSpec((s) => {
        s.domain.firmware = { bootloader: { efi: { secureBoot: true, persistent: true } } };
        s.domain.devices.tpm = { persistent: true };
        s.domain.features = {
          acpi: {},
          apic: {},
          smm: {},
          hyperv: {
            relaxed: {},
            vapic: {},
            spinlocks: { spinlocks: 8191 },
            synictimer: { direct: {} },
            vendorid: { vendorid: "KVMKVMKVM" },
          },
        };
        s.domain.clock = {
          timezone: "America/New_York",
          timer: { hpet: { present: false }, pit: { tickPolicy: "delay" }, rtc: { tickPolicy: "catchup" }, hyperv: {} },
        };
      }),
    ),
    apiServer: "accepts",
  },
  {
    name: "a hook sidecar, which nothing would run",
    object: newVm(
      undefined,
      (vm) =>
        (vm.spec.template.metadata = {
          annotations: {
            "hooks.kubevirt.io/hookSidecars": '[{"image": "registry:5000/kubevirt/example-hook-sidecar:devel"}]',
          },
        }),
    ),
    invalid: {
      field: `spec.template.metadata.annotations.hooks.kubevirt.io/hookSidecars`,
      message: /runs no hook sidecars/,
    },
    apiServer: "accepts",
  },
  {
    name: "a watchdog without its model",
    object: newVm(newVmiSpec((s) => (s.domain.devices.watchdog = { name: "wd" }))),
    invalid: { field: `${tpl}.domain.devices.watchdog.i6300esb`, message: /is required/ },
    apiServer: "accepts",
  },
  {
    name: "probes of each kind, a port by its name",
    object: newVm(
      newVmiSpec((s) => {
        const [iface] = s.domain.devices.interfaces ?? [];
        if (iface) iface.ports = [{ name: "http", port: 80 }];
        s.readinessProbe = {
          httpGet: { port: "http", path: "/healthz", scheme: "HTTP", httpHeaders: [{ name: "X-Probe", value: "1" }] },
          initialDelaySeconds: 5,
          periodSeconds: 3,
          timeoutSeconds: 2,
          successThreshold: 2,
          failureThreshold: 4,
        };
        s.livenessProbe = { exec: { command: ["cat", "/tmp/healthy"] }, initialDelaySeconds: 120 };
      }),
    ),
    apiServer: "accepts",
  },
  {
    name: "ConfigMap, Secret, ServiceAccount and downward API disks",
    object: newVm(
      newVmiSpec((s) => {
        s.volumes = [
          ...(s.volumes ?? []),
          { name: "app", configMap: { name: "app", volumeLabel: "cfg" } },
          { name: "creds", secret: { secretName: "db", optional: true } },
          { name: "sa", serviceAccount: { serviceAccountName: "default" } },
          { name: "meta", downwardAPI: { fields: [{ path: "labels", fieldRef: { fieldPath: "metadata.labels" } }] } },
        ];
        s.domain.devices.disks = [
          ...(s.domain.devices.disks ?? []),
          ...["app", "creds", "sa", "meta"].map((name) => ({ name, disk: { bus: "virtio" as const } })),
        ];
      }),
    ),
    apiServer: "accepts",
  },
  {
    name: "a cloud-init config drive",
    object: newVm(
      newVmiSpec((s) => {
        s.volumes = [...(s.volumes ?? []), { name: "drive", cloudInitConfigDrive: { userData: "#cloud-config\n" } }];
        s.domain.devices.disks = [...(s.domain.devices.disks ?? []), { name: "drive", disk: { bus: "virtio" } }];
      }),
    ),
    apiServer: "accepts",
  },
  {
    name: "a config drive without data",
    object: newVm(
      newVmiSpec((s) => {
        s.volumes = [...(s.volumes ?? []), { name: "drive", cloudInitConfigDrive: {} }];
      }),
    ),
    invalid: { field: `${tpl}.volumes[1].cloudInitConfigDrive`, message: /has no data/ },
    apiServer: "accepts",
  },
  {
    name: "SSH keys through the NoCloud disk",
    object: newVm(
      newVmiSpec((s) => {
        s.volumes = [...(s.volumes ?? []), { name: "cloudinit", cloudInitNoCloud: { userData: "#cloud-config\n" } }];
        s.domain.devices.disks = [...(s.domain.devices.disks ?? []), { name: "cloudinit", disk: { bus: "virtio" } }];
        s.accessCredentials = [
          { sshPublicKey: { source: { secret: { secretName: "my-keys" } }, propagationMethod: { noCloud: {} } } },
        ];
      }),
    ),
    apiServer: "accepts",
  },
  {
    name: "SSH keys through a NoCloud disk the VM lacks",
    object: newVm(
      newVmiSpec(
        (s) =>
          (s.accessCredentials = [
            { sshPublicKey: { source: { secret: { secretName: "my-keys" } }, propagationMethod: { noCloud: {} } } },
          ]),
      ),
    ),
    invalid: {
      field: `${tpl}.accessCredentials[0].sshPublicKey.propagationMethod.noCloud`,
      message: /needs a cloudInitNoCloud volume/,
    },
    apiServer: "accepts",
  },
  {
    name: "SSH keys through the guest agent for no user",
    object: newVm(
      newVmiSpec(
        (s) =>
          (s.accessCredentials = [
            {
              sshPublicKey: {
                source: { secret: { secretName: "my-keys" } },
                propagationMethod: { qemuGuestAgent: { users: [] } },
              },
            },
          ]),
      ),
    ),
    invalid: {
      field: `${tpl}.accessCredentials[0].sshPublicKey.propagationMethod.qemuGuestAgent.users`,
      message: /must name at least one user/,
    },
    apiServer: "accepts",
  },
  {
    name: "a password with no way to the guest",
    object: newVm(
      newVmiSpec(
        (s) =>
          (s.accessCredentials = [
            { userPassword: { source: { secret: { secretName: "my-passwords" } }, propagationMethod: {} } },
          ]),
      ),
    ),
    invalid: {
      field: `${tpl}.accessCredentials[0].userPassword.propagationMethod.qemuGuestAgent`,
      message: /passwords reach the guest through its QEMU guest agent/,
    },
    apiServer: "accepts",
  },
  {
    name: "the WaitAsReceiver run strategy, which needs migration",
    object: newVm(undefined, (vm) => ((vm.spec as { runStrategy?: string }).runStrategy = "WaitAsReceiver")),
    invalid: { field: "spec.runStrategy", message: /WaitAsReceiver, which has a VM wait for a live migration/ },
    apiServer: "refuses",
  },
  {
    name: "a second serviceAccount volume",
    object: newVm(
      newVmiSpec((s) => {
        s.volumes = [
          ...(s.volumes ?? []),
          { name: "sa1", serviceAccount: { serviceAccountName: "a" } },
          { name: "sa2", serviceAccount: { serviceAccountName: "b" } },
        ];
      }),
    ),
    invalid: { field: `${tpl}.volumes[2].serviceAccount`, message: /second serviceAccount volume/ },
    apiServer: "accepts",
  },
  {
    name: "a disk label ISO 9660 cannot hold",
    object: newVm(
      newVmiSpec((s) => {
        s.volumes = [
          ...(s.volumes ?? []),
          { name: "app", configMap: { name: "app", volumeLabel: "a label with spaces" } },
        ];
      }),
    ),
    invalid: { field: `${tpl}.volumes[1].configMap.volumeLabel`, message: /ISO 9660 label/ },
    apiServer: "accepts",
  },
  {
    name: "a paused start with a liveness probe",
    object: newVm(
      newVmiSpec((s) => {
        s.startStrategy = "Paused";
        s.livenessProbe = { guestAgentPing: {} };
      }),
    ),
    invalid: { field: `${tpl}.startStrategy`, message: /Paused together with a livenessProbe/ },
    apiServer: "accepts",
  },
  {
    name: "a probe that reaches another host",
    object: newVm(newVmiSpec((s) => (s.readinessProbe = { httpGet: { port: 80, host: "example.org" } }))),
    invalid: { field: `${tpl}.readinessProbe.httpGet.host`, message: /reaches the guest itself/ },
    apiServer: "accepts",
  },
  {
    name: "a TCP probe's host",
    object: newVm(newVmiSpec((s) => (s.livenessProbe = { tcpSocket: { port: 22, host: "198.18.0.1" } }))),
    invalid: { field: `${tpl}.livenessProbe.tcpSocket.host`, message: /reaches the guest itself/ },
    apiServer: "accepts",
  },
  {
    name: "a probe with two ways to check",
    object: newVm(newVmiSpec((s) => (s.readinessProbe = { tcpSocket: { port: 22 }, guestAgentPing: {} }))),
    invalid: { field: `${tpl}.readinessProbe`, message: /exactly one of .* it has tcpSocket and guestAgentPing/ },
    apiServer: "accepts",
  },
  {
    name: "a probe's port by a name the interface does not give",
    object: newVm(newVmiSpec((s) => (s.readinessProbe = { tcpSocket: { port: "http" } }))),
    invalid: {
      field: `${tpl}.readinessProbe.tcpSocket.port`,
      message: /no port of the pod-network interface is named/,
    },
    apiServer: "accepts",
  },
  {
    name: "a liveness probe that must pass twice",
    object: newVm(newVmiSpec((s) => (s.livenessProbe = { guestAgentPing: {}, successThreshold: 2 }))),
    invalid: { field: `${tpl}.livenessProbe.successThreshold`, message: /must be 1 for a liveness probe/ },
    apiServer: "accepts",
  },
  {
    name: "a probe that never waits",
    object: newVm(newVmiSpec((s) => (s.readinessProbe = { exec: { command: [] }, periodSeconds: 0 }))),
    invalid: { field: `${tpl}.readinessProbe.periodSeconds`, message: /must be 1 or more/ },
    apiServer: "accepts",
  },
  {
    name: "secure boot with SMM turned off",
    object: newVm(
      newVmiSpec((s) => {
        s.domain.firmware = { bootloader: { efi: {} } };
        s.domain.features = { smm: { enabled: false } };
      }),
    ),
    invalid: { field: `${tpl}.domain.features.smm.enabled`, message: /secure boot .* needs SMM/ },
    apiServer: "accepts",
  },
  {
    name: "a clock in UTC and in a time zone at once",
    object: newVm(newVmiSpec((s) => (s.domain.clock = { utc: {}, timezone: "Europe/Paris" }))),
    invalid: { field: `${tpl}.domain.clock`, message: /choose one/ },
    apiServer: "accepts",
  },
  {
    name: "a time zone that is no name",
    object: newVm(newVmiSpec((s) => (s.domain.clock = { timezone: "../../etc/passwd" }))),
    invalid: { field: `${tpl}.domain.clock.timezone`, message: /time zone name/ },
    apiServer: "accepts",
  },
  {
    name: "no interfaces and no networks (a default pod network is added)",
    object: newVm(
      newVmiSpec((s) => {
        delete s.domain.devices.interfaces;
        delete s.networks;
      }),
    ),
    apiServer: "accepts",
  },
  {
    name: "a cdrom on sata with cloud-init as base64",
    object: newVm(
      newVmiSpec((s) => {
        s.domain.devices.disks?.push({ name: "seed", cdrom: { bus: "sata" } });
        s.volumes?.push({
          name: "seed",
          cloudInitNoCloud: { userDataBase64: Buffer.from("#cloud-config\n").toString("base64") },
        });
      }),
    ),
    apiServer: "accepts",
  },
  {
    name: "cloud-init user and network data from Secrets (KubeVirt's secretRef and networkDataSecretRef)",
    object: newVm(
      newVmiSpec((s) => {
        s.domain.devices.disks?.push({ name: "seed", disk: { bus: "virtio" } });
        s.volumes?.push({
          name: "seed",
          cloudInitNoCloud: {
            secretRef: { name: "testvm-cloud-init" },
            networkDataSecretRef: { name: "testvm-network" },
          },
        });
      }),
    ),
    apiServer: "accepts",
  },
  {
    name: "kernel boot from a container",
    object: newVmi(
      newVmiSpec(
        (s) =>
          (s.domain.firmware = {
            kernelBoot: {
              kernelArgs: "console=ttyS0",
              container: { image: "example/kernel:1", kernelPath: "/boot/vmlinuz", initrdPath: "/boot/initrd" },
            },
          }),
      ),
    ),
    apiServer: "accepts",
  },
  {
    name: "a CD-ROM whose tray starts open",
    object: newVm(
      newVmiSpec((s) => {
        s.domain.devices.disks?.push({ name: "seed", cdrom: { bus: "sata", tray: "open" } });
        s.volumes?.push({ name: "seed", containerDisk: { image: "kubevirt-ts.local/iso:1" } });
      }),
    ),
    apiServer: "accepts",
  },

  // Invalid.
  {
    name: "both running and runStrategy",
    object: newVm(undefined, (vm) => (vm.spec.running = true)),
    invalid: { field: "spec.running", message: /mutually exclusive/ },
    apiServer: "refuses",
  },
  {
    name: "neither running nor runStrategy",
    object: newVm(undefined, (vm) => delete vm.spec.runStrategy),
    invalid: {
      field: "spec.runStrategy",
      message: /must be set to one of: Always, RerunOnFailure, Manual, Halted, Once/,
    },
  },
  {
    name: "an unknown runStrategy",
    object: newVm(undefined, (vm) => ((vm.spec as Record<string, unknown>).runStrategy = "Sometimes")),
    invalid: { field: "spec.runStrategy", message: /unsupported value "Sometimes"; use one of: Always/ },
    apiServer: "refuses",
  },
  {
    name: "a VM without a template",
    object: newVm(undefined, (vm) => delete (vm.spec as Partial<typeof vm.spec>).template),
    invalid: { field: "spec.template", message: /spec.template is required/ },
    apiServer: "refuses",
  },
  {
    name: "a disk without a volume",
    object: newVm(newVmiSpec((s) => s.domain.devices.disks?.push({ name: "data", disk: {} }))),
    invalid: {
      field: `${tpl}.domain.devices.disks[1].name`,
      message: /"data" matches no volume; add a volume named "data"/,
    },
  },
  {
    name: "two disks with the same name (one volume used twice)",
    object: newVm(newVmiSpec((s) => s.domain.devices.disks?.push({ name: "containerdisk", disk: { bus: "sata" } }))),
    invalid: { field: `${tpl}.domain.devices.disks[1].name`, message: /already the name of .*disks\[0\]/ },
  },
  {
    name: "two volumes with the same name",
    object: newVm(newVmiSpec((s) => s.volumes?.push({ name: "containerdisk", emptyDisk: { capacity: "1Gi" } }))),
    invalid: { field: `${tpl}.volumes[1].name`, message: /already the name of .*volumes\[0\]/ },
  },
  {
    name: "an unknown disk bus",
    object: newVm(newVmiSpec((s) => ((s.domain.devices.disks?.[0]?.disk as Record<string, unknown>).bus = "ide"))),
    invalid: {
      field: `${tpl}.domain.devices.disks[0].disk.bus`,
      message: /unsupported value "ide"; use one of: virtio, sata, scsi, usb/,
    },
    apiServer: "refuses",
  },
  {
    name: "a cdrom on virtio",
    object: newVm(
      newVmiSpec((s) => {
        s.domain.devices.disks = [{ name: "containerdisk", cdrom: { bus: "virtio" } }];
      }),
    ),
    invalid: { field: `${tpl}.domain.devices.disks[0].cdrom.bus`, message: /CD-ROMs cannot use/ },
  },
  {
    name: "no memory at all",
    object: newVm(newVmiSpec((s) => delete s.domain.resources)),
    invalid: { field: `${tpl}.domain.memory.guest`, message: /neither is .*resources.requests.memory/ },
  },
  {
    name: "zero guest memory",
    object: newVm(newVmiSpec((s) => (s.domain.memory = { guest: "0" }))),
    invalid: { field: `${tpl}.domain.memory.guest`, message: /must be greater than 0/ },
  },
  {
    name: "less than 1Mi of memory",
    object: newVm(newVmiSpec((s) => (s.domain.resources = { requests: { memory: "512Ki" } }))),
    invalid: { field: `${tpl}.domain.resources.requests.memory`, message: /must be at least 1Mi/ },
  },
  {
    name: "guest memory above the memory limit",
    object: newVm(
      newVmiSpec((s) => {
        s.domain.memory = { guest: "2Gi" };
        s.domain.resources = { limits: { memory: "1Gi" } };
      }),
    ),
    invalid: { field: `${tpl}.domain.memory.guest`, message: /must not exceed .*limits.memory/ },
  },
  {
    name: "zero cores",
    object: newVm(newVmiSpec((s) => (s.domain.cpu = { cores: 0 }))),
    invalid: { field: `${tpl}.domain.cpu.cores`, message: /must be at least 1, got 0/ },
  },
  {
    name: "more vCPUs than supported",
    object: newVm(newVmiSpec((s) => (s.domain.cpu = { sockets: 4, cores: 16, threads: 16 }))),
    invalid: { field: `${tpl}.domain.cpu`, message: /1024 vCPUs .* at most 512/ },
  },
  {
    name: "cores given as a word",
    object: newVm(newVmiSpec((s) => (s.domain.cpu = { cores: "two" as unknown as number }))),
    invalid: { field: `${tpl}.domain.cpu.cores`, message: /must be a number, not a string/ },
    apiServer: "refuses",
  },
  {
    name: "a cloud-init volume without data",
    object: newVm(
      newVmiSpec((s) => {
        s.volumes = [...(s.volumes ?? []), { name: "cloudinit", cloudInitNoCloud: {} }];
      }),
    ),
    invalid: { field: `${tpl}.volumes[1].cloudInitNoCloud`, message: /set userData, userDataBase64 or secretRef/ },
  },
  {
    name: "cloud-init userData and userDataBase64 together",
    object: newVm(
      newVmiSpec((s) =>
        s.volumes?.push({
          name: "cloudinit",
          cloudInitNoCloud: { userData: "#cloud-config", userDataBase64: "I2Nsb3VkLWNvbmZpZw==" },
        }),
      ),
    ),
    invalid: { field: `${tpl}.volumes[1].cloudInitNoCloud.userDataBase64`, message: /set only one of them/ },
  },
  {
    name: "cloud-init userData and a secretRef together",
    object: newVm(
      newVmiSpec((s) =>
        s.volumes?.push({
          name: "cloudinit",
          cloudInitNoCloud: { userData: "#cloud-config", secretRef: { name: "seed" } },
        }),
      ),
    ),
    invalid: {
      field: `${tpl}.volumes[1].cloudInitNoCloud.secretRef`,
      message: /is set together with userData; set only one of them/,
    },
  },
  {
    name: "a cloud-init networkDataSecretRef that names no valid Secret",
    object: newVm(
      newVmiSpec((s) =>
        s.volumes?.push({
          name: "cloudinit",
          cloudInitNoCloud: { userData: "#cloud-config", networkDataSecretRef: { name: "Net_Config" } },
        }),
      ),
    ),
    invalid: {
      field: `${tpl}.volumes[1].cloudInitNoCloud.networkDataSecretRef.name`,
      message: /must be a DNS subdomain.*name a Secret in the VMI's namespace/,
    },
  },
  {
    name: "cloud-init userDataBase64 that is not base64",
    object: newVm(
      newVmiSpec((s) => s.volumes?.push({ name: "cloudinit", cloudInitNoCloud: { userDataBase64: "not base64!" } })),
    ),
    invalid: { field: `${tpl}.volumes[1].cloudInitNoCloud.userDataBase64`, message: /not valid base64/ },
  },
  {
    name: "a VM name that is not a DNS label",
    object: newVm(undefined, (vm) => (vm.metadata.name = "Test_VM")),
    invalid: { field: "metadata.name", message: /must be a DNS label/ },
    apiServer: "refuses",
  },
  {
    name: "a VMI name with dots",
    object: newVmi(undefined, (vmi) => (vmi.metadata.name = "my.vmi")),
    invalid: { field: "metadata.name", message: /must be a DNS label/ },
  },
  {
    name: "a KubeVirt field kubevirt-ts does not support yet",
    object: newVm(
      newVmiSpec(
        (s) =>
          ((s.domain.devices as Record<string, unknown>).gpus = [{ name: "gpu1", deviceName: "nvidia.com/GP102GL" }]),
      ),
    ),
    invalid: { field: `${tpl}.domain.devices.gpus`, message: /is not a field kubevirt-ts supports/ },
    apiServer: "refuses",
  },
  {
    name: "an unsupported volume type",
    object: newVm(
      newVmiSpec(
        (s) => ((s.volumes?.[0] as Record<string, unknown>).hostDisk = { path: "/data/disk.img", type: "Disk" }),
      ),
    ),
    invalid: { field: `${tpl}.volumes[0].hostDisk`, message: /is not a field kubevirt-ts supports/ },
    apiServer: "refuses",
  },
  {
    name: "a DataVolume template that no volume names",
    object: newVm(newVmiSpec(), (vm) => {
      vm.spec.dataVolumeTemplates = [
        {
          metadata: { name: "orphan" },
          spec: { source: { blank: {} }, storage: { resources: { requests: { storage: "1Gi" } } } },
        },
      ];
    }),
    invalid: {
      field: "spec.dataVolumeTemplates[0].metadata.name",
      message: /is named by no volume; add a volume with dataVolume.name: orphan/,
    },
    apiServer: "accepts",
  },
  {
    name: "a DataVolume template in another namespace",
    object: newVm(
      newVmiSpec((s) => (s.volumes = [{ name: "containerdisk", dataVolume: { name: "root-dv" } }])),
      (vm) => {
        vm.metadata.namespace = "default";
        vm.spec.dataVolumeTemplates = [
          {
            metadata: { name: "root-dv", namespace: "other" },
            spec: { source: { blank: {} }, storage: { resources: { requests: { storage: "1Gi" } } } },
          },
        ];
      },
    ),
    invalid: {
      field: "spec.dataVolumeTemplates[0].metadata.namespace",
      message: /a VM's DataVolumes are in its own namespace \(default\): remove it/,
    },
  },
  {
    name: "a DataVolume template of another API group",
    object: newVm(
      newVmiSpec((s) => (s.volumes = [{ name: "containerdisk", dataVolume: { name: "root-dv" } }])),
      (vm) => {
        vm.spec.dataVolumeTemplates = [
          {
            apiVersion: "v1",
            kind: "DataVolume",
            metadata: { name: "root-dv" },
            spec: { source: { blank: {} }, storage: { resources: { requests: { storage: "1Gi" } } } },
          },
        ];
      },
    ),
    invalid: {
      field: "spec.dataVolumeTemplates[0].apiVersion",
      message: /a template makes a DataVolume of cdi.kubevirt.io\/v1beta1 or cdi.kubevirt.io\/v1alpha1/,
    },
  },
  {
    name: "a DataVolume template of another kind",
    object: newVm(
      newVmiSpec((s) => (s.volumes = [{ name: "containerdisk", dataVolume: { name: "root-dv" } }])),
      (vm) => {
        vm.spec.dataVolumeTemplates = [
          {
            apiVersion: "cdi.kubevirt.io/v1beta1",
            kind: "PersistentVolumeClaim",
            metadata: { name: "root-dv" },
            spec: { source: { blank: {} }, storage: { resources: { requests: { storage: "1Gi" } } } },
          },
        ];
      },
    ),
    invalid: { field: "spec.dataVolumeTemplates[0].kind", message: /set kind: DataVolume or leave it out/ },
  },
  {
    name: "a DataVolume template of archive content, which kubevirt-ts does not unpack",
    object: newVm(
      newVmiSpec((s) => (s.volumes = [{ name: "containerdisk", dataVolume: { name: "root-dv" } }])),
      (vm) => {
        vm.spec.dataVolumeTemplates = [
          {
            metadata: { name: "root-dv" },
            spec: {
              contentType: "archive" as "kubevirt",
              source: { blank: {} },
              storage: { resources: { requests: { storage: "1Gi" } } },
            },
          },
        ];
      },
    ),
    invalid: { field: "spec.dataVolumeTemplates[0].spec.contentType", message: /kubevirt/ },
    apiServer: "refuses",
  },
  {
    name: "a DataVolume template with two sources",
    object: dataVolumeVm({
      source: { blank: {}, http: { url: "http://images.example/disk.qcow2" } },
      storage: { resources: { requests: { storage: "1Gi" } } },
    }),
    invalid: {
      field: "spec.dataVolumeTemplates[0].spec.source",
      message: /exactly one of http, registry, pvc, blank, upload; it has http and blank/,
    },
    apiServer: "accepts",
  },
  {
    name: "a DataVolume template without a size",
    object: dataVolumeVm({ source: { blank: {} }, storage: {} }),
    invalid: {
      field: "spec.dataVolumeTemplates[0].spec.storage.resources.requests.storage",
      message: /is required: give the disk's size/,
    },
    apiServer: "accepts",
  },
  {
    name: "a DataVolume template whose registry source is no docker:// URL",
    object: dataVolumeVm({
      source: { registry: { url: "kubevirt-ts.local/debian-guest:12" } },
      storage: { resources: { requests: { storage: "4Gi" } } },
    }),
    invalid: {
      field: "spec.dataVolumeTemplates[0].spec.source.registry.url",
      message: /give a containerDisk image as docker:\/\/<image>/,
    },
    apiServer: "accepts",
  },
  {
    name: "a DataVolume template that clones a claim of another namespace, not supported",
    object: dataVolumeVm({ source: { pvc: { namespace: "golden-images", name: "debian" } }, storage: {} }, "default"),
    invalid: {
      field: "spec.dataVolumeTemplates[0].spec.source.pvc.namespace",
      message: /copies claims within the DataVolume's own namespace \(default\) only/,
    },
  },
  {
    name: "a DataVolume template with CDI's s3 source, which kubevirt-ts's importer does not read",
    object: dataVolumeVm({
      source: { s3: { url: "s3://bucket/disk.qcow2" } } as never,
      storage: { resources: { requests: { storage: "1Gi" } } },
    }),
    invalid: { field: "spec.dataVolumeTemplates[0].spec.source.s3", message: /is not a field kubevirt-ts supports/ },
    apiServer: "refuses",
  },
  {
    name: "a volume with two sources",
    object: newVm(
      newVmiSpec((s) => {
        const v = s.volumes?.[0];
        if (v) v.emptyDisk = { capacity: "1Gi" };
      }),
    ),
    invalid: { field: `${tpl}.volumes[0]`, message: /exactly one source .* it has containerDisk and emptyDisk/ },
  },
  {
    name: "a volume without a source",
    object: newVm(
      newVmiSpec((s) => {
        s.domain.devices.disks?.push({ name: "empty" });
        s.volumes?.push({ name: "empty" });
      }),
    ),
    invalid: { field: `${tpl}.volumes[1]`, message: /exactly one source .* it has none/ },
  },
  {
    name: "an interface without a network",
    object: newVm(newVmiSpec((s) => s.domain.devices.interfaces?.push({ name: "second", masquerade: {} }))),
    invalid: { field: `${tpl}.domain.devices.interfaces[1].name`, message: /"second" matches no network/ },
  },
  {
    name: "an interface with two bindings",
    object: newVm(
      newVmiSpec((s) => {
        s.domain.devices.interfaces = [{ name: "default", masquerade: {}, bridge: {} }];
      }),
    ),
    invalid: {
      field: `${tpl}.domain.devices.interfaces[0]`,
      message: /exactly one binding method .* masquerade and bridge/,
    },
  },
  {
    name: "a network without a type",
    object: newVm(newVmiSpec((s) => (s.networks = [{ name: "default" }]))),
    invalid: { field: `${tpl}.networks[0].pod`, message: /pod network is the only network type/ },
  },
  {
    name: "a MAC address that is not one",
    object: newVm(
      newVmiSpec((s) => {
        const [iface] = s.domain.devices.interfaces ?? [];
        if (iface) iface.macAddress = "02:00:00:00:00";
      }),
    ),
    invalid: { field: `${tpl}.domain.devices.interfaces[0].macAddress`, message: /must be a MAC address/ },
  },
  {
    name: "the MAC address KubeVirt reserves for the masquerade binding's in-pod bridge",
    object: newVm(
      newVmiSpec((s) => {
        const [iface] = s.domain.devices.interfaces ?? [];
        if (iface) iface.macAddress = "02-00-00-00-00-00";
      }),
    ),
    invalid: { field: `${tpl}.domain.devices.interfaces[0].macAddress`, message: /reserved for the masquerade/ },
  },
  {
    name: "a boot order of 0",
    object: newVm(
      newVmiSpec((s) => {
        const d = s.domain.devices.disks?.[0];
        if (d) d.bootOrder = 0;
      }),
    ),
    invalid: { field: `${tpl}.domain.devices.disks[0].bootOrder`, message: /must be 1 or more/ },
  },
  {
    name: "a boot order used twice",
    object: newVm(
      newVmiSpec((s) => {
        s.domain.devices.disks = [
          { name: "containerdisk", bootOrder: 1 },
          { name: "scratch", bootOrder: 1 },
        ];
        s.volumes?.push({ name: "scratch", emptyDisk: { capacity: "1Gi" } });
      }),
    ),
    invalid: { field: `${tpl}.domain.devices.disks[1].bootOrder`, message: /1 is already the boot order of/ },
  },
  {
    name: "an i440fx machine type",
    object: newVm(newVmiSpec((s) => (s.domain.machine = { type: "pc-i440fx-8.0" }))),
    invalid: { field: `${tpl}.domain.machine.type`, message: /use q35/ },
  },
  {
    name: "kernel arguments without a kernel",
    object: newVmi(newVmiSpec((s) => (s.domain.firmware = { kernelBoot: { kernelArgs: "console=ttyS0" } }))),
    invalid: { field: "spec.domain.firmware.kernelBoot.container", message: /required when kernelArgs is set/ },
  },
  {
    name: "a relative kernel path",
    object: newVmi(
      newVmiSpec(
        (s) => (s.domain.firmware = { kernelBoot: { container: { image: "k:1", kernelPath: "../vmlinuz" } } }),
      ),
    ),
    invalid: { field: "spec.domain.firmware.kernelBoot.container.kernelPath", message: /absolute path/ },
  },
  {
    name: "a cpu request above the cpu limit",
    object: newVm(
      newVmiSpec((s) => (s.domain.resources = { requests: { memory: "128Mi", cpu: "2" }, limits: { cpu: "1" } })),
    ),
    invalid: { field: `${tpl}.domain.resources.requests.cpu`, message: /greater than .*limits.cpu/ },
  },
  {
    name: "an emptyDisk capacity that is not a quantity",
    object: newVm(newVmiSpec((s) => s.volumes?.push({ name: "scratch", emptyDisk: { capacity: "big" } }))),
    invalid: { field: `${tpl}.volumes[1].emptyDisk.capacity`, message: /Kubernetes quantity/ },
    apiServer: "refuses",
  },
  {
    name: "a port out of range",
    object: newVm(
      newVmiSpec((s) => {
        s.domain.devices.interfaces = [{ name: "default", masquerade: {}, ports: [{ port: 70000 }] }];
      }),
    ),
    invalid: { field: `${tpl}.domain.devices.interfaces[0].ports[0].port`, message: /between 1 and 65535/ },
  },
  {
    name: "the launcher's own port as a forwarded port",
    object: newVm(
      newVmiSpec((s) => {
        s.domain.devices.interfaces = [{ name: "default", masquerade: {}, ports: [{ port: 9102 }] }];
      }),
    ),
    invalid: { field: `${tpl}.domain.devices.interfaces[0].ports[0].port`, message: /the launcher's own port/ },
  },
  {
    name: "a port forwarded twice",
    object: newVm(
      newVmiSpec((s) => {
        s.domain.devices.interfaces = [
          { name: "default", masquerade: {}, ports: [{ port: 22 }, { port: 80 }, { port: 22, protocol: "TCP" }] },
        ];
      }),
    ),
    invalid: { field: `${tpl}.domain.devices.interfaces[0].ports[2].port`, message: /TCP\/22 is forwarded already/ },
  },
  {
    name: "a port name a pod cannot carry",
    object: newVm(
      newVmiSpec((s) => {
        s.domain.devices.interfaces = [
          { name: "default", masquerade: {}, ports: [{ name: "Secure_Shell", port: 22 }] },
        ];
      }),
    ),
    invalid: { field: `${tpl}.domain.devices.interfaces[0].ports[0].name`, message: /must be a port name as a pod's/ },
  },
  {
    name: "a claim as a LUN, not supported yet",
    object: newVm(
      newVmiSpec((s) => {
        s.domain.devices.disks?.push({ name: "data", lun: { bus: "scsi" } });
        s.volumes?.push({ name: "data", persistentVolumeClaim: { claimName: "data" } });
      }),
    ),
    invalid: {
      field: `${tpl}.domain.devices.disks[1].lun`,
      message: /is not supported yet: it passes a Block-mode claim's SCSI device through/,
    },
    apiServer: "accepts",
  },
  {
    name: "a claim whose name is no object name",
    object: newVm(
      newVmiSpec((s) => {
        s.domain.devices.disks?.push({ name: "data", disk: { bus: "virtio" } });
        s.volumes?.push({ name: "data", persistentVolumeClaim: { claimName: "Data_Disk" } });
      }),
    ),
    invalid: {
      field: `${tpl}.volumes[1].persistentVolumeClaim.claimName`,
      message: /name a PersistentVolumeClaim in the VMI's namespace/,
    },
    apiServer: "accepts",
  },
  {
    name: "an ephemeral volume whose claim's name is no object name",
    object: newVm(
      newVmiSpec((s) => {
        s.domain.devices.disks?.push({ name: "scratch", disk: { bus: "virtio" } });
        s.volumes?.push({ name: "scratch", ephemeral: { persistentVolumeClaim: { claimName: "Golden_Image" } } });
      }),
    ),
    invalid: {
      field: `${tpl}.volumes[1].ephemeral.persistentVolumeClaim.claimName`,
      message: /name a PersistentVolumeClaim in the VMI's namespace/,
    },
    apiServer: "accepts",
  },
  {
    name: "both bios and efi",
    object: newVm(newVmiSpec((s) => (s.domain.firmware = { bootloader: { bios: {}, efi: {} } }))),
    invalid: { field: `${tpl}.domain.firmware.bootloader`, message: /choose one/ },
  },
];
