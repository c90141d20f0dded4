import { z } from "zod";
import {
  DEFAULT_GRACE_PERIOD_SECONDS,
  DISK_BUSES,
  EVICTION_STRATEGIES,
  INTERFACE_MODELS,
  VMI_PHASES,
} from "../constants.ts";
import { condition, objectMeta, opaqueObject, quantity, resourceList } from "./common.ts";
import { migrationState } from "./migration.ts";

// The supported subset of KubeVirt's VirtualMachineInstance spec. Objects are
// strict: a field KubeVirt has but kubevirt-ts does not support yet is
// refused by validation, never silently dropped.

const diskBus = z.enum(DISK_BUSES).describe("The bus the disk is attached to: virtio, sata, scsi or usb.");

export const diskTarget = z.strictObject({
  bus: diskBus.optional(),
  readonly: z.boolean().optional().describe("Attach the disk read-only."),
});

export const cdromTarget = z.strictObject({
  bus: diskBus.optional(),
  readonly: z.boolean().optional(),
  tray: z.enum(["open", "closed"]).optional(),
});

export const disk = z
  .strictObject({
    name: z.string().describe("The disk's name; the volume of the same name is attached to it."),
    disk: diskTarget.optional().describe("Attach the volume as a hard disk."),
    cdrom: cdromTarget.optional().describe("Attach the volume as a CD-ROM."),
    lun: diskTarget.optional().describe("Attach the volume as a SCSI LUN."),
    bootOrder: z
      .number()
      .int()
      .optional()
      .describe("Boot priority of the disk, starting at 1; unset disks are not booted from."),
    serial: z.string().optional().describe("The serial number the guest sees."),
    cache: z.enum(["none", "writethrough", "writeback"]).optional(),
  })
  .describe("A disk of the guest, backed by the volume with the same name.");

export const port = z.strictObject({
  name: z.string().optional(),
  protocol: z.enum(["TCP", "UDP"]).optional(),
  port: z.number().int().describe("The port number to forward to the guest."),
});

export const networkInterface = z
  .strictObject({
    name: z.string().describe("The interface's name; the network of the same name is connected to it."),
    masquerade: z.strictObject({}).optional().describe("Connect through NAT behind the pod's address."),
    bridge: z
      .strictObject({})
      .optional()
      .describe("Connect the guest directly to the pod's network, giving it the pod's address."),
    model: z.enum(INTERFACE_MODELS).optional().describe("The emulated network card; virtio unless set."),
    macAddress: z.string().optional(),
    ports: z
      .array(port)
      .optional()
      .describe(
        "Ports of the pod's address forwarded to the guest. Unlike KubeVirt, none are forwarded when this is " +
          "empty (ADR 9); port forwarding through the API reaches any port.",
      ),
    bootOrder: z.number().int().optional(),
  })
  .describe("A network interface of the guest.");

export const devices = z.strictObject({
  disks: z.array(disk).optional(),
  interfaces: z.array(networkInterface).optional(),
  autoattachSerialConsole: z.boolean().optional().describe("Attach a serial console (default true)."),
  autoattachGraphicsDevice: z.boolean().optional().describe("Attach a VNC display (default true)."),
  autoattachPodInterface: z
    .boolean()
    .optional()
    .describe("Add a pod network interface when none is listed (default true)."),
  autoattachMemBalloon: z
    .boolean()
    .optional()
    .describe(
      "Attach a virtio memory balloon, through which the guest reports its own memory use every 10 s (default true).",
    ),
  rng: z.strictObject({}).optional().describe("Give the guest a virtio random number generator."),
  logSerialConsole: z
    .boolean()
    .optional()
    .describe("Keep a log of the serial console that outlives a closed console (default true)."),
  watchdog: z
    .strictObject({
      name: z.string().describe("The watchdog's name."),
      i6300esb: z
        .strictObject({
          action: z
            .enum(["poweroff", "reset", "shutdown"])
            .optional()
            .describe("What happens when the guest stops feeding it: reset unless set."),
        })
        .optional()
        .describe("An Intel 6300ESB watchdog."),
    })
    .optional()
    .describe("A watchdog that acts when the guest hangs."),
  inputs: z
    .array(
      z.strictObject({
        name: z.string(),
        type: z.enum(["tablet"]).describe("tablet: absolute pointing, so the VNC pointer follows the mouse."),
        bus: z.enum(["usb", "virtio"]).optional().describe("usb unless set."),
      }),
    )
    .optional()
    .describe("Input devices; a USB tablet comes with the graphics device unless inputs are listed."),
  tpm: z
    .strictObject({
      enabled: z.boolean().optional().describe("true unless set to false."),
      persistent: z
        .boolean()
        .optional()
        .describe(
          "Keep the TPM's state across restarts, on the VM's backend-storage claim " +
            "(persistent-state-for-<name>); the TPM is then on the CRB interface, as KubeVirt's.",
        ),
    })
    .optional()
    .describe(
      "Give the guest an emulated TPM 2.0 (swtpm), as Windows 11 needs; its state " +
        "lives as long as the VMI unless persistent.",
    ),
});

export const kernelBoot = z.strictObject({
  kernelArgs: z.string().optional().describe("The kernel command line."),
  container: z
    .strictObject({
      image: z.string().describe("The image holding the kernel and initrd."),
      imagePullPolicy: z.enum(["Always", "IfNotPresent", "Never"]).optional(),
      kernelPath: z.string().optional().describe("Absolute path of the kernel in the image."),
      initrdPath: z.string().optional().describe("Absolute path of the initrd in the image."),
    })
    .optional(),
});

export const firmware = z.strictObject({
  uuid: z.string().optional().describe("The SMBIOS UUID of the guest."),
  serial: z.string().optional().describe("The SMBIOS serial number of the guest."),
  bootloader: z
    .strictObject({
      bios: z.strictObject({}).optional(),
      efi: z
        .strictObject({
          secureBoot: z.boolean().optional(),
          persistent: z
            .boolean()
            .optional()
            .describe(
              "Keep the EFI variables across restarts, on the VM's backend-storage " +
                "claim (persistent-state-for-<name>).",
            ),
        })
        .optional(),
    })
    .optional(),
  kernelBoot: kernelBoot.optional().describe("Boot a kernel and initrd from a container image directly."),
});

/** A feature turned on by being listed, off with enabled: false (KubeVirt's FeatureState). */
const featureState = z.strictObject({ enabled: z.boolean().optional().describe("true unless set to false.") });

export const features = z
  .strictObject({
    acpi: featureState.optional().describe("ACPI, for power buttons and shutdown; on unless enabled: false."),
    apic: z
      .strictObject({
        enabled: z.boolean().optional(),
        endOfInterrupt: z.boolean().optional().describe("Paravirtualized end of interrupt."),
      })
      .optional()
      .describe("The APIC; on unless enabled: false."),
    smm: featureState.optional().describe("System management mode; secure boot needs it."),
    pvspinlock: featureState.optional().describe("Paravirtualized spinlocks."),
    hyperv: z
      .strictObject({
        relaxed: featureState.optional(),
        vapic: featureState.optional(),
        spinlocks: z
          .strictObject({
            enabled: z.boolean().optional(),
            spinlocks: z
              .number()
              .int()
              .min(4095)
              .optional()
              .describe("Retries before a spinlock is reported; 4096 unless set."),
          })
          .optional(),
        vpindex: featureState.optional(),
        runtime: featureState.optional(),
        synic: featureState.optional(),
        synictimer: z.strictObject({ enabled: z.boolean().optional(), direct: featureState.optional() }).optional(),
        reset: featureState.optional(),
        vendorid: z
          .strictObject({ enabled: z.boolean().optional(), vendorid: z.string().max(12).optional() })
          .optional(),
        frequencies: featureState.optional(),
        reenlightenment: featureState.optional(),
        tlbflush: featureState.optional(),
        ipi: featureState.optional(),
        evmcs: featureState.optional(),
      })
      .optional()
      .describe("Hyper-V enlightenments, for Windows guests."),
    kvm: z
      .strictObject({
        hidden: z
          .boolean()
          .optional()
          .describe("Hides the KVM signature from the guest's CPUID, for drivers that refuse to run in a VM."),
      })
      .optional()
      .describe("What the guest sees of KVM."),
  })
  .describe("Features of the virtual machine: ACPI, APIC, SMM, paravirtualization.");

/** A timer: KubeVirt names its on/off flag present, not enabled. */
const timer = <T extends z.ZodRawShape>(shape: T) =>
  z.strictObject({ present: z.boolean().optional().describe("true unless set to false."), ...shape }).optional();

export const clock = z
  .strictObject({
    utc: z
      .strictObject({
        offsetSeconds: z.number().int().optional().describe("Seconds the guest's clock is ahead of UTC."),
      })
      .optional()
      .describe("The guest's clock runs in UTC (the default)."),
    timezone: z
      .string()
      .optional()
      .describe(
        "The guest's clock runs in this time zone, e.g. Europe/Paris (for guests that keep local time, as Windows).",
      ),
    timer: z
      .strictObject({
        hpet: timer({ tickPolicy: z.enum(["delay", "catchup", "merge", "discard"]).optional() }),
        pit: timer({ tickPolicy: z.enum(["delay", "catchup", "discard"]).optional() }),
        rtc: timer({
          tickPolicy: z.enum(["delay", "catchup"]).optional(),
          track: z.enum(["guest", "wall"]).optional(),
        }),
        kvm: timer({}).describe("The KVM paravirtual clock."),
        hyperv: timer({}).describe("The Hyper-V reference time counter."),
      })
      .optional(),
  })
  .describe("The guest's clock and its timers.");

export const domainSpec = z
  .strictObject({
    resources: z
      .strictObject({
        requests: resourceList.optional().describe("Resources requested for the launcher pod, e.g. memory."),
        limits: resourceList.optional(),
        overcommitGuestOverhead: z.boolean().optional(),
      })
      .optional(),
    cpu: z
      .strictObject({
        cores: z.number().int().optional().describe("Cores per socket."),
        sockets: z.number().int().optional(),
        threads: z.number().int().optional().describe("Threads per core."),
        model: z.string().optional().describe("The CPU model, e.g. host-model or host-passthrough."),
      })
      .optional()
      .describe("The guest's CPU topology."),
    memory: z.strictObject({ guest: quantity.optional().describe("The memory the guest sees.") }).optional(),
    machine: z.strictObject({ type: z.string().optional().describe("The machine type, q35 unless set.") }).optional(),
    firmware: firmware.optional(),
    features: features.optional(),
    clock: clock.optional(),
    devices: devices.describe("The guest's devices."),
  })
  .describe("The guest's virtual hardware.");

export const containerDiskSource = z.strictObject({
  image: z.string().describe("The image holding the disk under /disk/."),
  imagePullPolicy: z.enum(["Always", "IfNotPresent", "Never"]).optional(),
  path: z.string().optional().describe("Path of the disk in the image when it is not the only file under /disk/."),
});

/** A Secret in the VMI's own namespace (KubeVirt's LocalObjectReference: a name, no namespace). */
export const localSecretReference = z.strictObject({
  name: z.string().describe("The Secret's name, in the VMI's namespace."),
});

export const cloudInitNoCloudSource = z.strictObject({
  userData: z.string().optional().describe("cloud-init user data in clear text."),
  userDataBase64: z.string().optional().describe("cloud-init user data, base64-encoded."),
  secretRef: localSecretReference
    .optional()
    .describe(
      "KubeVirt's userDataSecretRef: a Secret whose key userdata (or userData) holds the " +
        "user data; only the VMI's launcher pod reads it.",
    ),
  networkData: z.string().optional().describe("cloud-init network configuration in clear text."),
  networkDataBase64: z.string().optional(),
  networkDataSecretRef: localSecretReference
    .optional()
    .describe(
      "A Secret whose key networkdata (or networkData) holds the network " +
        "configuration; only the VMI's launcher pod reads it.",
    ),
});

const volumeLabel = z
  .string()
  .optional()
  .describe("The label of the ISO 9660 file system the guest sees; none unless set.");

/** A field of the VMI's own object, as a downwardAPI volume's file holds it. */
const downwardApiFile = z.strictObject({
  path: z.string().describe("The file's path in the volume."),
  fieldRef: z
    .strictObject({
      fieldPath: z
        .string()
        .describe(
          "A field of the launcher pod, as a pod's downwardAPI volume takes it: metadata.labels (the VMI's, " +
            "and KubeVirt's), metadata.namespace, metadata.name (the pod's), …",
        ),
      apiVersion: z.string().optional(),
    })
    .optional()
    .describe("A field of the launcher pod, as in KubeVirt."),
  resourceFieldRef: z
    .strictObject({ containerName: z.string().optional(), resource: z.string(), divisor: quantity.optional() })
    .optional()
    .describe("A resource of the launcher container (requests.memory, limits.cpu, …)."),
  mode: z.number().int().optional().describe("The file's mode bits."),
});

export const volume = z
  .strictObject({
    name: z.string().describe("The volume's name, matching a disk's name."),
    containerDisk: containerDiskSource.optional().describe("An ephemeral disk copied on write from a container image."),
    cloudInitNoCloud: cloudInitNoCloudSource.optional().describe("A NoCloud seed disk generated from the given data."),
    cloudInitConfigDrive: cloudInitNoCloudSource
      .optional()
      .describe(
        "An OpenStack config drive (label config-2) generated from the given data, for guests whose " +
          "cloud-init reads ConfigDrive; networkData is OpenStack's network_data.json.",
      ),
    emptyDisk: z
      .strictObject({ capacity: quantity.describe("The size of the disk.") })
      .optional()
      .describe("A blank disk that lives as long as the VMI."),
    persistentVolumeClaim: z
      .strictObject({ claimName: z.string(), readOnly: z.boolean().optional() })
      .optional()
      .describe("A disk on a PersistentVolumeClaim in the VMI's namespace."),
    ephemeral: z
      .strictObject({
        persistentVolumeClaim: z
          .strictObject({
            claimName: z.string(),
            readOnly: z.boolean().optional().describe("The claim is only ever read, whatever this says."),
          })
          .describe(
            "The claim, in the VMI's namespace, whose disk (disk.img, or the device of a " +
              "Block-mode claim) backs the overlay.",
          ),
      })
      .optional()
      .describe(
        "A claim's disk under a copy-on-write overlay: the guest's writes go to the overlay and are gone " +
          "when the VMI ends; the claim is only read, so many VMIs may share it.",
      ),
    dataVolume: z
      .strictObject({ name: z.string().describe("The DataVolume, in the VMI's namespace; its claim has its name.") })
      .optional()
      .describe("A disk on a DataVolume's claim: the VMI starts once the DataVolume has filled it."),
    configMap: z
      .strictObject({
        name: z.string().describe("The ConfigMap, in the VMI's namespace."),
        optional: z
          .boolean()
          .optional()
          .describe("When true, a missing ConfigMap gives an empty disk instead of a VMI that waits."),
        volumeLabel,
      })
      .optional()
      .describe("A ConfigMap's keys as files on a read-only ISO 9660 disk, as KubeVirt presents it."),
    secret: z
      .strictObject({
        secretName: z.string().describe("The Secret, in the VMI's namespace."),
        optional: z
          .boolean()
          .optional()
          .describe("When true, a missing Secret gives an empty disk instead of a VMI that waits."),
        volumeLabel,
      })
      .optional()
      .describe("A Secret's keys as files on a read-only ISO 9660 disk, as KubeVirt presents it."),
    serviceAccount: z
      .strictObject({
        serviceAccountName: z
          .string()
          .describe("The ServiceAccount, in the VMI's namespace, whose token the disk holds."),
      })
      .optional()
      .describe(
        "A ServiceAccount's token, the cluster's CA and the namespace on a read-only ISO 9660 " +
          "disk; the launcher pod runs as that ServiceAccount.",
      ),
    downwardAPI: z
      .strictObject({
        fields: z.array(downwardApiFile).optional().describe("The files and what each holds."),
        volumeLabel,
      })
      .optional()
      .describe(
        "Fields of the launcher pod (the VMI's labels, its namespace, …) and its " +
          "resources as files on a read-only ISO 9660 disk.",
      ),
  })
  .describe("A volume: the storage behind a disk.");

export const network = z.strictObject({
  name: z.string(),
  pod: z
    .strictObject({
      vmNetworkCIDR: z.string().optional().describe("The guest-side network of a masquerade interface."),
    })
    .optional()
    .describe("The pod's own network."),
});

export const toleration = z.strictObject({
  key: z.string().optional(),
  operator: z.enum(["Exists", "Equal"]).optional(),
  value: z.string().optional(),
  effect: z.enum(["NoSchedule", "PreferNoSchedule", "NoExecute"]).optional(),
  tolerationSeconds: z.number().int().optional(),
});

/** A port by number, or by the name the pod-network interface gives it in its ports. */
const portRef = z.union([z.number().int(), z.string()]).meta({ "x-kubernetes-int-or-string": true });

/**
 * A probe of the guest, as KubeVirt's: the kubelet runs it on the launcher's schedule (delay, period, thresholds),
 * and the launcher checks the guest, one way among four (see probes.ts).
 */
export const probe = z
  .strictObject({
    httpGet: z
      .strictObject({
        path: z.string().optional().describe("The path asked for; / unless set."),
        port: portRef.describe("The guest's port, by number or by the name the pod-network interface gives it."),
        host: z.string().optional().describe("Not supported: the probe reaches the guest itself."),
        scheme: z
          .enum(["HTTP", "HTTPS"])
          .optional()
          .describe("HTTP unless set; HTTPS does not check the guest's certificate, as the kubelet does not."),
        httpHeaders: z
          .array(z.strictObject({ name: z.string(), value: z.string() }))
          .optional()
          .describe("Headers sent with the request."),
      })
      .optional()
      .describe("Passes when the guest answers an HTTP GET with a status from 200 to 399."),
    tcpSocket: z
      .strictObject({
        port: portRef.describe("The guest's port, by number or by the name the pod-network interface gives it."),
        host: z.string().optional().describe("Not supported: the probe reaches the guest itself."),
      })
      .optional()
      .describe("Passes when the guest accepts a TCP connection on the port."),
    exec: z
      .strictObject({
        command: z.array(z.string()).describe("The command and its arguments, run in the guest by its QEMU agent."),
      })
      .optional()
      .describe("Passes when the command exits 0 in the guest; needs the QEMU guest agent."),
    guestAgentPing: z.strictObject({}).optional().describe("Passes when the guest's QEMU agent answers a ping."),
    initialDelaySeconds: z
      .number()
      .int()
      .optional()
      .describe("Seconds after the launcher starts before the first probe; 0 unless set."),
    timeoutSeconds: z.number().int().optional().describe("Seconds a probe may take; 1 unless set."),
    periodSeconds: z.number().int().optional().describe("Seconds between probes; 10 unless set."),
    successThreshold: z
      .number()
      .int()
      .optional()
      .describe("Passes in a row that count as passing after a failure; 1 unless set (and 1 for liveness)."),
    failureThreshold: z.number().int().optional().describe("Failures in a row that count as failing; 3 unless set."),
  })
  .describe("A probe of the guest.");

const credentialSource = z.strictObject({
  secret: z.strictObject({
    secretName: z
      .string()
      .describe("The Secret, in the VMI's namespace; each of its values holds public keys, one per line."),
  }),
});

/** KubeVirt's access credentials: SSH public keys (and passwords) from Secrets, given to the guest. */
export const accessCredential = z.strictObject({
  sshPublicKey: z
    .strictObject({
      source: credentialSource,
      propagationMethod: z.strictObject({
        noCloud: z
          .strictObject({})
          .optional()
          .describe("Through the VMI's cloudInitNoCloud disk, as its metadata's public-keys."),
        configDrive: z
          .strictObject({})
          .optional()
          .describe("Through the VMI's cloudInitConfigDrive disk, as its metadata's public_keys."),
        qemuGuestAgent: z
          .strictObject({
            users: z.array(z.string()).describe("The guest's users whose authorized_keys get the keys."),
          })
          .optional()
          .describe(
            "Through the QEMU guest agent of the running guest, into each user's " +
              "authorized_keys, again whenever the Secret changes.",
          ),
      }),
    })
    .optional()
    .describe(
      "SSH public keys for the guest: cloud-init gives them to its default user, " +
        "or the guest agent to the users named.",
    ),
  userPassword: z
    .strictObject({
      source: z.strictObject({
        secret: z.strictObject({
          secretName: z
            .string()
            .describe(
              "The Secret, in the VMI's namespace; each key is a user of the guest, its value that user's password.",
            ),
        }),
      }),
      propagationMethod: z.strictObject({ qemuGuestAgent: z.strictObject({}).optional() }),
    })
    .optional()
    .describe(
      "Passwords of the guest's users, set through the QEMU guest agent of the running " +
        "guest, again whenever the Secret changes.",
    ),
});

export const vmiSpec = z
  .strictObject({
    domain: domainSpec,
    volumes: z.array(volume).optional(),
    networks: z.array(network).optional(),
    nodeSelector: z.record(z.string(), z.string()).optional(),
    affinity: opaqueObject.optional().describe("Pod affinity rules, passed to the launcher pod as they are."),
    tolerations: z.array(toleration).optional(),
    terminationGracePeriodSeconds: z
      .number()
      .int()
      .optional()
      .describe(`Seconds the guest has to shut down; ${String(DEFAULT_GRACE_PERIOD_SECONDS)} unless set.`),
    hostname: z.string().optional(),
    subdomain: z.string().optional(),
    accessCredentials: z
      .array(accessCredential)
      .optional()
      .describe("SSH public keys from Secrets, given to the guest by cloud-init."),
    evictionStrategy: z
      .enum(EVICTION_STRATEGIES)
      .optional()
      .describe(
        "What an eviction of the launcher pod (a node drain) does: None stops the VMI; LiveMigrate migrates " +
          "it to another node (and refuses the eviction when it cannot be migrated); LiveMigrateIfPossible " +
          "migrates it when it can, else stops it; External marks it (status.evacuationNodeName) and a " +
          "PodDisruptionBudget refuses it. The chart's evictionStrategy unless set.",
      ),
    startStrategy: z
      .enum(["Paused"])
      .optional()
      .describe("Paused: the guest is created paused, to be unpaused (virtctl unpause) when wanted."),
    livenessProbe: probe.optional().describe("When it fails, the VMI stops (Failed), for its VM to start a new one."),
    readinessProbe: probe
      .optional()
      .describe("While it fails, the VMI is not Ready and its launcher pod leaves the endpoints of its Services."),
    architecture: z
      .string()
      .optional()
      .describe("The guest's CPU architecture; amd64, the only one run here, unless set."),
    priorityClassName: z.string().optional().describe("The PriorityClass of the launcher pod."),
    schedulerName: z
      .string()
      .optional()
      .describe("The scheduler that places the launcher pod; the default scheduler unless set."),
    dnsPolicy: z
      .enum(["ClusterFirst", "ClusterFirstWithHostNet", "Default", "None"])
      .optional()
      .describe("The launcher pod's DNS policy, whose servers and search path the guest gets by DHCP."),
    dnsConfig: z
      .strictObject({
        nameservers: z.array(z.string()).optional(),
        searches: z.array(z.string()).optional(),
        options: z.array(z.strictObject({ name: z.string(), value: z.string().optional() })).optional(),
      })
      .optional()
      .describe("The launcher pod's DNS settings, added to those of its policy."),
    topologySpreadConstraints: z
      .array(
        z.strictObject({
          maxSkew: z.number().int(),
          topologyKey: z.string(),
          whenUnsatisfiable: z.enum(["DoNotSchedule", "ScheduleAnyway"]),
          labelSelector: z
            .strictObject({
              matchLabels: z.record(z.string(), z.string()).optional(),
              matchExpressions: z
                .array(
                  z.strictObject({ key: z.string(), operator: z.string(), values: z.array(z.string()).optional() }),
                )
                .optional(),
            })
            .optional(),
          minDomains: z.number().int().optional(),
          matchLabelKeys: z.array(z.string()).optional(),
        }),
      )
      .optional()
      .describe("How launcher pods spread over nodes, as a pod's topologySpreadConstraints."),
  })
  .describe("The specification of a virtual machine instance.");

export const phaseTransitionTimestamp = z.object({
  phase: z.enum(VMI_PHASES),
  phaseTransitionTimestamp: z.string(),
});

export const vmiInterfaceStatus = z.object({
  name: z.string().optional(),
  ipAddress: z.string().optional(),
  ipAddresses: z.array(z.string()).optional(),
  mac: z.string().optional(),
  interfaceName: z.string().optional(),
  infoSource: z.string().optional(),
});

/** What the guest's QEMU agent says of its OS, in the names of KubeVirt's VMI status. */
export const guestOsInfo = z.object({
  id: z.string().optional(),
  name: z.string().optional(),
  prettyName: z.string().optional(),
  version: z.string().optional(),
  versionId: z.string().optional(),
  kernelRelease: z.string().optional(),
  kernelVersion: z.string().optional(),
  machine: z.string().optional(),
});

/** What a VMI's volume on a claim knows of the claim, in KubeVirt's names (quantities as strings). */
export const persistentVolumeClaimInfo = z.object({
  claimName: z.string().optional(),
  accessModes: z.array(z.string()).optional(),
  volumeMode: z.string().optional(),
  capacity: z.record(z.string(), z.string()).optional().describe("The claim's status.capacity."),
  requests: z.record(z.string(), z.string()).optional().describe("The claim's spec.resources.requests."),
  preallocated: z.boolean().optional(),
  filesystemOverhead: z
    .string()
    .optional()
    .describe("The share of a Filesystem-mode claim its disk image leaves free when it is grown."),
});

export const volumeStatus = z.object({
  name: z.string(),
  target: z.string().describe("The guest's device name (vda, sdb, ...), once the domain runs."),
  phase: z.string().optional(),
  reason: z.string().optional(),
  message: z.string().optional(),
  size: z.number().int().optional(),
  persistentVolumeClaimInfo: persistentVolumeClaimInfo.optional(),
});

export const vmiStatus = z.object({
  phase: z.enum(VMI_PHASES).optional(),
  reason: z.string().optional(),
  message: z.string().optional(),
  nodeName: z.string().optional(),
  conditions: z.array(condition).optional(),
  phaseTransitionTimestamps: z.array(phaseTransitionTimestamp).optional(),
  interfaces: z.array(vmiInterfaceStatus).optional(),
  guestOSInfo: guestOsInfo.optional(),
  fsFreezeStatus: z
    .string()
    .optional()
    .describe("frozen while the guest's file systems are frozen (the freeze subresource)."),
  launcherContainerImageVersion: z.string().optional(),
  runtimeUser: z.number().int().optional(),
  qosClass: z.string().optional(),
  activePods: z.record(z.string(), z.string()).optional().describe("Launcher pods by UID, with the node each runs on."),
  evacuationNodeName: z
    .string()
    .optional()
    .describe(
      "The node the VMI is to leave: set when its launcher pod's eviction was asked for and its " +
        "evictionStrategy moves it (LiveMigrate, LiveMigrateIfPossible when it can move, External).",
    ),
  volumeStatus: z
    .array(volumeStatus)
    .optional()
    .describe("Each volume: its device in the guest and, for a claim, what the claim holds."),
  migrationState: migrationState.optional(),
  migrationMethod: z
    .enum(["BlockMigration", "LiveMigration"])
    .optional()
    .describe(
      "How the VMI moves: LiveMigration when every disk is shared, BlockMigration when local disks are copied along.",
    ),
  migrationTransport: z.enum(["Unix"]).optional(),
});

export const virtualMachineInstance = z.object({
  apiVersion: z.literal("kubevirt.io/v1"),
  kind: z.literal("VirtualMachineInstance"),
  metadata: objectMeta,
  spec: vmiSpec,
  status: vmiStatus.optional(),
});

export type VmiSpec = z.infer<typeof vmiSpec>;
export type VmiStatus = z.infer<typeof vmiStatus>;
export type VolumeStatus = z.infer<typeof volumeStatus>;
export type GuestOsInfo = z.infer<typeof guestOsInfo>;
export type VirtualMachineInstance = z.infer<typeof virtualMachineInstance>;
export type Disk = z.infer<typeof disk>;
export type Volume = z.infer<typeof volume>;
export type NetworkInterface = z.infer<typeof networkInterface>;
export type Network = z.infer<typeof network>;
export type DomainSpec = z.infer<typeof domainSpec>;
export type Features = z.infer<typeof features>;
export type Clock = z.infer<typeof clock>;
export type Condition = z.infer<typeof condition>;
export type Probe = z.infer<typeof probe>;
