// Every leaf the CRDs accept, and what shows it is not accepted for nothing:
// a test that sees its effect, or a test that sees it refused. There is no
// third kind: a field whose effect no test shows is not done.
// field-effects.test.ts walks the schemas and keeps this list complete.
//
// Paths are a VirtualMachine's (spec.template.spec.X is also the VMI's
// spec.X), an instancetype's (instancetype:spec.X), a preference's
// (preference:spec.X), a migration's (migration:spec.X) or a migration
// policy's (migrationpolicy:spec.X); [] steps into an
// array's items.

/** A test in the repository: its file, and text of its title as written there. */
export interface TestRef {
  file: string;
  test: string;
}

export type FieldEffect = { effect: TestRef } | { refused: TestRef };

const CONVERTER = "services/launcher/src/domain/converter.test.ts";
const POD = "services/controller/src/vmi/pod.test.ts";
const POD_NETWORK = "packages/node-contract/src/pod-network.test.ts";
const DEFAULTS = "packages/kubevirt-api/src/defaults.test.ts";
const EXPAND = "packages/kubevirt-api/src/instancetype/expand.test.ts";
const INFER = "packages/kubevirt-api/src/instancetype/infer.test.ts";
const CLOUD_INIT = "services/launcher/src/storage/cloud-init.test.ts";
const CONTROLLER = "services/controller/test/controller.integration.test.ts";
const E2E_RUNNING = "e2e/cluster/vm-running.test.ts";
const E2E_DEBIAN = "e2e/cluster/vm-debian.test.ts";
// validation.test.ts runs this table, each invalid case titled "refuses <its name>".
const VALIDATION_CASES = "packages/kubevirt-api/test/validation-cases.ts";

const effect = (file: string, test: string): FieldEffect => ({ effect: { file, test } });
const refused = (file: string, test: string): FieldEffect => ({ refused: { file, test } });

const topology = effect(CONVERTER, "the topology asked for");
const nicModel = effect(CONVERTER, "an e1000e interface with its MAC address, booted from the network second");
const podHostAndToleration = effect(POD, "names the pod's host as the VMI asks, in its subdomain");
const podPassThrough = effect(POD, "passes priority, scheduler, DNS and topology spread through");
const namedPullPolicy = effect(POD, "pull each disk and kernel image with the pull policy its volume names");
// A feature's leaf is its enabled flag: listing the feature turns it on, which this case shows for each; it
// shows enabled: false too, for evmcs, pvspinlock, the HPET and kvmclock, through the same code as the others.
const windowsGuest = effect(CONVERTER, "a Windows-style guest: Hyper-V enlightenments");
const acpiApicSmmOff = effect(CONVERTER, "no ACPI or APIC when turned off, and SMM off when asked");
const kernelFiles = effect(POD, "copies a kernel boot's kernel and initrd out of their image");
const containerDiskCopy = effect(POD, "are copied by init containers running each image");
const declaredPorts = effect(POD, "carries the guest's declared ports, named");
const scheduling = effect(POD, "passes scheduling constraints through");
// An interface connects to the network of its name; the case shows a name that matches none refused.
const interfaceToNetwork = effect(VALIDATION_CASES, "an interface without a network");
const agentCredentials = effect(
  E2E_DEBIAN,
  "gives a user SSH keys through its guest agent, follows a change of the key's Secret",
);
const agentPassword = effect(
  E2E_DEBIAN,
  "gives a user the password of its access credentials' Secret through its guest agent",
);
const lun = refused(VALIDATION_CASES, "a claim as a LUN, not supported yet");
const claim = effect(POD, "are pod volumes of the same claims, read-only when the volume asks");
const preferenceFillsIn = effect(
  EXPAND,
  "fills in the disks' cache, what is attached by default, the grace period, architecture and subdomain",
);
const deprecatedFirmware = effect(
  EXPAND,
  "takes the deprecated preferredUseEfi and preferredUseSecureBoot, and preferredUseBios",
);
const vmState = effect(
  "e2e/cluster/vm-state.test.ts",
  "live on the VM's backend-storage claim, and are there after a stop and a start",
);
const sized = effect(CONTROLLER, "size the VMI from a ControllerRevision owned by the VM");
const LAUNCHER = "services/launcher/test/launcher.integration.test.ts";
const E2E_DATA_VOLUMES = "e2e/cluster/vm-datavolume.test.ts";
const E2E_UPLOAD = "e2e/cluster/vm-upload.test.ts";
const IMPORTER_POD = "services/controller/src/datavolume/importer-pod.test.ts";
const DATA_VOLUMES = "packages/vm-rules/src/data-volumes.test.ts";
const claimOfDataVolume = effect(IMPORTER_POD, "makes the claim CDI's way");
const pvcClaimOfDataVolume = effect(IMPORTER_POD, "takes a pvc request as the claim's size");
const httpSource = effect(IMPORTER_POD, "passes the http source's URL, headers and secret to the importer");
// An export's manifests name both (its certificate's ConfigMap, its token's header Secret): applied elsewhere, the VM
// comes back with its disk read from the export.
const exportedManifests = effect(
  "e2e/cluster/vm-export.test.ts",
  "serves a stopped VM's manifests, which bring it back elsewhere, and it takes its disks back",
);
const CONFIG_DISK = "services/launcher/test/config-disk.integration.test.ts";
const configDisks = effect(E2E_DEBIAN, "presents a ConfigMap and the downward API to its guest as labelled disks");
const configPodVolumes = effect(
  POD,
  "are the same kinds of pod volume, mounted read-only where the launcher makes their disks",
);
const configLabels = effect(
  "packages/node-contract/src/config-volumes.test.ts",
  "labels each disk with its volume's label",
);
const E2E_PROBES = "e2e/cluster/vm-probes.test.ts";
const probeSchedule = effect(POD, "runs the VMI's probes through the launcher, on the VMI's schedule");
const probeHost = (kind: string) =>
  refused(VALIDATION_CASES, kind === "httpGet" ? "a probe that reaches another host" : "a TCP probe's host");
/** A probe's leaves, under readinessProbe or livenessProbe, each shown by one test or another. */
function probeEffects(probe: "readinessProbe" | "livenessProbe"): Record<string, FieldEffect> {
  const httpGet = effect(LAUNCHER, "probes it as the kubelet asks");
  return {
    [`${probe}.httpGet.path`]: httpGet,
    [`${probe}.httpGet.port`]: httpGet,
    [`${probe}.httpGet.host`]: probeHost("httpGet"),
    [`${probe}.httpGet.scheme`]: effect(E2E_PROBES, "is Ready while the guest's port answers over TLS"),
    [`${probe}.httpGet.httpHeaders[].name`]: httpGet,
    [`${probe}.httpGet.httpHeaders[].value`]: httpGet,
    [`${probe}.tcpSocket.port`]:
      probe === "readinessProbe"
        ? effect(LAUNCHER, "probes it as the kubelet asks")
        : effect(E2E_PROBES, "has its VMI stopped by the kubelet, saying why"),
    [`${probe}.tcpSocket.host`]: probeHost("tcpSocket"),
    [`${probe}.exec.command[]`]: effect(E2E_DEBIAN, "is Ready while its exec readiness probe passes in the guest"),
    [`${probe}.guestAgentPing`]: effect(E2E_DEBIAN, "its agent answers the liveness probe"),
    [`${probe}.initialDelaySeconds`]: probeSchedule,
    [`${probe}.timeoutSeconds`]: probeSchedule,
    [`${probe}.periodSeconds`]: probeSchedule,
    [`${probe}.successThreshold`]:
      probe === "livenessProbe" ? refused(VALIDATION_CASES, "a liveness probe that must pass twice") : probeSchedule,
    [`${probe}.failureThreshold`]: probeSchedule,
  };
}

/** The VMI spec's leaves, as they appear in a VM's template. */
const vmiSpecEffects: Record<string, FieldEffect> = {
  "domain.resources.requests": effect(DEFAULTS, "guest memory comes from the memory request"),
  "domain.resources.limits": effect(POD, "passes a %s on"),
  "domain.resources.overcommitGuestOverhead": effect(
    POD,
    "asks for the guest's memory alone when the VMI overcommits its overhead",
  ),
  "domain.cpu.cores": topology,
  "domain.cpu.sockets": topology,
  "domain.cpu.threads": effect(CONVERTER, "three threads per core"),
  "domain.cpu.model": effect(CONVERTER, "a named CPU model as a custom CPU"),
  "domain.memory.guest": effect(CONVERTER, "gives the guest its memory in bytes"),
  "domain.machine.type": effect(CONVERTER, "another machine type"),
  "domain.firmware.uuid": effect(CONVERTER, "takes the domain's UUID from firmware.uuid"),
  "domain.firmware.serial": effect(CONVERTER, "the SMBIOS serial number"),
  "domain.firmware.bootloader.bios": effect(EXPAND, "keeps the template's own firmware choice over the preference's"),
  "domain.firmware.bootloader.efi.secureBoot": effect(CONVERTER, "an EFI firmware without secure boot"),
  "domain.firmware.bootloader.efi.persistent": vmState,
  "domain.firmware.kernelBoot.kernelArgs": effect(CONVERTER, "a kernel boot"),
  "domain.firmware.kernelBoot.container.image": effect(E2E_RUNNING, "runs: Running with software emulation"),
  "domain.firmware.kernelBoot.container.imagePullPolicy": namedPullPolicy,
  "domain.firmware.kernelBoot.container.kernelPath": kernelFiles,
  "domain.firmware.kernelBoot.container.initrdPath": kernelFiles,
  "domain.features.acpi.enabled": acpiApicSmmOff,
  "domain.features.apic.enabled": acpiApicSmmOff,
  "domain.features.apic.endOfInterrupt": windowsGuest,
  "domain.features.smm.enabled": acpiApicSmmOff,
  "domain.features.pvspinlock.enabled": windowsGuest,
  "domain.features.kvm.hidden": effect(CONVERTER, "KVM hidden from the guest"),
  "domain.features.hyperv.relaxed.enabled": windowsGuest,
  "domain.features.hyperv.vapic.enabled": windowsGuest,
  "domain.features.hyperv.spinlocks.enabled": windowsGuest,
  "domain.features.hyperv.spinlocks.spinlocks": windowsGuest,
  "domain.features.hyperv.vpindex.enabled": windowsGuest,
  "domain.features.hyperv.runtime.enabled": windowsGuest,
  "domain.features.hyperv.synic.enabled": windowsGuest,
  "domain.features.hyperv.synictimer.enabled": windowsGuest,
  "domain.features.hyperv.synictimer.direct.enabled": windowsGuest,
  "domain.features.hyperv.reset.enabled": windowsGuest,
  "domain.features.hyperv.vendorid.enabled": windowsGuest,
  "domain.features.hyperv.vendorid.vendorid": windowsGuest,
  "domain.features.hyperv.frequencies.enabled": windowsGuest,
  "domain.features.hyperv.reenlightenment.enabled": windowsGuest,
  "domain.features.hyperv.tlbflush.enabled": windowsGuest,
  "domain.features.hyperv.ipi.enabled": windowsGuest,
  "domain.features.hyperv.evmcs.enabled": windowsGuest,
  "domain.clock.utc.offsetSeconds": effect(CONVERTER, "a UTC clock running ahead"),
  "domain.clock.timezone": windowsGuest,
  "domain.clock.timer.hpet.present": windowsGuest,
  "domain.clock.timer.hpet.tickPolicy": effect(CONVERTER, "an HPET with its tick policy"),
  "domain.clock.timer.pit.present": windowsGuest,
  "domain.clock.timer.pit.tickPolicy": windowsGuest,
  "domain.clock.timer.rtc.present": windowsGuest,
  "domain.clock.timer.rtc.tickPolicy": windowsGuest,
  "domain.clock.timer.rtc.track": windowsGuest,
  "domain.clock.timer.kvm.present": windowsGuest,
  "domain.clock.timer.hyperv.present": windowsGuest,
  "domain.devices.disks[].name": effect(CONVERTER, "attaches the cloud-init disk as vdb, read-only"),
  "domain.devices.disks[].disk.bus": effect(
    CONVERTER,
    "sata and scsi disks named sda, sdb, with a virtio-scsi controller",
  ),
  "domain.devices.disks[].disk.readonly": effect(CONVERTER, "a read-only disk with writeback caching"),
  "domain.devices.disks[].cdrom.bus": effect(CONVERTER, "a writable CD-ROM on the SCSI bus"),
  "domain.devices.disks[].cdrom.readonly": effect(
    CONVERTER,
    "makes a CD-ROM writable only when it says readonly: false",
  ),
  "domain.devices.disks[].cdrom.tray": effect(CONVERTER, "a CD-ROM whose tray starts open"),
  "domain.devices.disks[].lun.bus": lun,
  "domain.devices.disks[].lun.readonly": lun,
  "domain.devices.disks[].bootOrder": effect(CONVERTER, "boots from the disk given boot order 1"),
  "domain.devices.disks[].serial": effect(CONVERTER, "escapes values, so a serial number cannot inject XML"),
  "domain.devices.disks[].cache": effect(CONVERTER, "a read-only disk with writeback caching"),
  "domain.devices.interfaces[].name": interfaceToNetwork,
  "domain.devices.interfaces[].masquerade": effect(
    CONVERTER,
    "puts a masquerade interface on the tap network-setup made",
  ),
  "domain.devices.interfaces[].bridge": effect(
    POD_NETWORK,
    "bridges the pod's interface, whose address the guest takes",
  ),
  "domain.devices.interfaces[].model": nicModel,
  "domain.devices.interfaces[].macAddress": nicModel,
  "domain.devices.interfaces[].ports[].name": declaredPorts,
  "domain.devices.interfaces[].ports[].protocol": declaredPorts,
  "domain.devices.interfaces[].ports[].port": declaredPorts,
  "domain.devices.interfaces[].bootOrder": nicModel,
  "domain.devices.autoattachSerialConsole": effect(CONVERTER, "leaves out the serial console when it is not wanted"),
  "domain.devices.autoattachGraphicsDevice": effect(
    CONVERTER,
    "leaves out VNC, video and the tablet when there is no graphics device",
  ),
  "domain.devices.autoattachPodInterface": effect(DEFAULTS, "but not when autoattachPodInterface is false"),
  "domain.devices.autoattachMemBalloon": effect(
    CONVERTER,
    "gives a virtio memory balloon that reports the guest's memory every 10 s, and " +
      "none when autoattachMemBalloon is false",
  ),
  "domain.devices.rng": effect(CONVERTER, "a virtio RNG"),
  "domain.devices.tpm.enabled": effect(CONVERTER, "leaves out a TPM that is turned off"),
  "domain.devices.tpm.persistent": vmState,
  "domain.devices.logSerialConsole": effect(CONVERTER, "keeps no serial log when logSerialConsole is false"),
  "domain.devices.watchdog.name": effect(CONVERTER, "a watchdog that powers the guest off"),
  "domain.devices.watchdog.i6300esb.action": effect(CONVERTER, "a watchdog that powers the guest off"),
  "domain.devices.inputs[].name": effect(CONVERTER, "a virtio tablet instead of the USB one"),
  "domain.devices.inputs[].type": effect(CONVERTER, "a virtio tablet instead of the USB one"),
  "domain.devices.inputs[].bus": effect(CONVERTER, "a virtio tablet instead of the USB one"),
  "volumes[].name": containerDiskCopy,
  "volumes[].containerDisk.image": containerDiskCopy,
  "volumes[].containerDisk.imagePullPolicy": namedPullPolicy,
  "volumes[].containerDisk.path": containerDiskCopy,
  "volumes[].cloudInitNoCloud.userData": effect(CLOUD_INIT, "takes inline user data as it is"),
  "volumes[].cloudInitNoCloud.userDataBase64": effect(CLOUD_INIT, "decodes inline base64 data as before"),
  "volumes[].cloudInitNoCloud.secretRef.name": effect(
    E2E_DEBIAN,
    "lets the cloud-init user log in on the serial console",
  ),
  "volumes[].cloudInitNoCloud.networkData": effect(
    CLOUD_INIT,
    "combines a Secret's user data with inline network data",
  ),
  "volumes[].cloudInitNoCloud.networkDataBase64": effect(CLOUD_INIT, "decodes inline base64 data as before"),
  "volumes[].cloudInitNoCloud.networkDataSecretRef.name": effect(
    POD,
    "reach the launcher as Secret volumes of the pod",
  ),
  // A config drive's data is read by the same code as NoCloud's (cloudInitSourceOf); its disk is OpenStack's.
  "volumes[].cloudInitConfigDrive.userData": effect(CONFIG_DISK, "is an OpenStack config drive"),
  "volumes[].cloudInitConfigDrive.userDataBase64": effect(CLOUD_INIT, "decodes a config drive's inline base64 data"),
  "volumes[].cloudInitConfigDrive.secretRef.name": effect(POD, "mounts a config drive's Secret as a NoCloud volume's"),
  "volumes[].cloudInitConfigDrive.networkData": effect(CONFIG_DISK, "is an OpenStack config drive"),
  "volumes[].cloudInitConfigDrive.networkDataBase64": effect(CLOUD_INIT, "decodes a config drive's inline base64 data"),
  "volumes[].cloudInitConfigDrive.networkDataSecretRef.name": effect(
    POD,
    "mounts a config drive's Secret as a NoCloud volume's",
  ),
  "volumes[].emptyDisk.capacity": effect(
    "services/launcher/src/storage/prepare.test.ts",
    "makes each emptyDisk a sparse qcow2 file of the capacity asked for",
  ),
  "volumes[].persistentVolumeClaim.claimName": claim,
  "volumes[].persistentVolumeClaim.readOnly": claim,
  "volumes[].ephemeral.persistentVolumeClaim.claimName": effect(
    LAUNCHER,
    "gives an ephemeral claim's disk under an overlay",
  ),
  "volumes[].ephemeral.persistentVolumeClaim.readOnly": effect(POD, "mounts an ephemeral volume's claim read-only"),
  "volumes[].dataVolume.name": effect(
    E2E_DATA_VOLUMES,
    "boots the tiny guest from the DataVolume its template fills from a containerDisk image",
  ),
  "networks[].name": interfaceToNetwork,
  "networks[].pod.vmNetworkCIDR": effect(
    POD_NETWORK,
    "takes the pod network's vmNetworkCIDR, as its network's address",
  ),
  nodeSelector: scheduling,
  affinity: scheduling,
  "tolerations[].key": scheduling,
  "tolerations[].operator": scheduling,
  "tolerations[].value": scheduling,
  "tolerations[].effect": scheduling,
  "tolerations[].tolerationSeconds": podHostAndToleration,
  terminationGracePeriodSeconds: effect(POD, "gives the guest its grace period and the launcher some more"),
  hostname: podHostAndToleration,
  subdomain: podHostAndToleration,
  architecture: refused(VALIDATION_CASES, "another architecture than amd64"),
  priorityClassName: podPassThrough,
  schedulerName: podPassThrough,
  dnsPolicy: podPassThrough,
  "dnsConfig.nameservers[]": podPassThrough,
  "dnsConfig.searches[]": podPassThrough,
  "dnsConfig.options[].name": podPassThrough,
  "dnsConfig.options[].value": podPassThrough,
  "topologySpreadConstraints[].maxSkew": podPassThrough,
  "topologySpreadConstraints[].topologyKey": podPassThrough,
  "topologySpreadConstraints[].whenUnsatisfiable": podPassThrough,
  "topologySpreadConstraints[].labelSelector.matchLabels": podPassThrough,
  "topologySpreadConstraints[].labelSelector.matchExpressions[].key": podPassThrough,
  "topologySpreadConstraints[].labelSelector.matchExpressions[].operator": podPassThrough,
  "topologySpreadConstraints[].labelSelector.matchExpressions[].values[]": podPassThrough,
  "topologySpreadConstraints[].minDomains": podPassThrough,
  "topologySpreadConstraints[].matchLabelKeys[]": podPassThrough,
  // SSH keys from a Secret, given by cloud-init: the Debian guest's default user logs in with one over SSH.
  "accessCredentials[].sshPublicKey.source.secret.secretName": effect(
    E2E_DEBIAN,
    "lets its default user in over SSH with the public key of its access credentials",
  ),
  "accessCredentials[].sshPublicKey.propagationMethod.noCloud": effect(
    E2E_DEBIAN,
    "lets its default user in over SSH with the public key of its access credentials",
  ),
  "accessCredentials[].sshPublicKey.propagationMethod.configDrive": effect(CONFIG_DISK, "is an OpenStack config drive"),
  "accessCredentials[].sshPublicKey.propagationMethod.qemuGuestAgent.users[]": agentCredentials,
  "accessCredentials[].userPassword.source.secret.secretName": agentPassword,
  "accessCredentials[].userPassword.propagationMethod.qemuGuestAgent": agentPassword,
  // Each strategy's answer to an eviction, through the webhook and the disruption budget, on the cluster.
  evictionStrategy: effect("e2e/cluster/vm-eviction.test.ts", "LiveMigrate: is refused with the reason"),
  startStrategy: effect("e2e/cluster/subresources.test.ts", "starts a VM paused as virtctl start --paused asks"),
  // The kubelet fills each; the launcher makes a disk of each the same way (config-disk.integration.test.ts).
  "volumes[].configMap.name": configDisks,
  "volumes[].configMap.optional": configPodVolumes,
  "volumes[].configMap.volumeLabel": configDisks,
  "volumes[].secret.secretName": configPodVolumes,
  "volumes[].secret.optional": configPodVolumes,
  "volumes[].secret.volumeLabel": configLabels,
  "volumes[].serviceAccount.serviceAccountName": effect(POD, "run the launcher pod as the ServiceAccount named"),
  "volumes[].downwardAPI.fields[].path": configDisks,
  "volumes[].downwardAPI.fields[].fieldRef.fieldPath": configDisks,
  "volumes[].downwardAPI.fields[].fieldRef.apiVersion": configPodVolumes,
  "volumes[].downwardAPI.fields[].resourceFieldRef.containerName": configPodVolumes,
  "volumes[].downwardAPI.fields[].resourceFieldRef.resource": configPodVolumes,
  "volumes[].downwardAPI.fields[].resourceFieldRef.divisor": configPodVolumes,
  "volumes[].downwardAPI.fields[].mode": configPodVolumes,
  "volumes[].downwardAPI.volumeLabel": configDisks,
  // A check (HTTP, TCP, exec, agent ping) is the launcher's same code for either kind of probe.
  ...probeEffects("readinessProbe"),
  ...probeEffects("livenessProbe"),
};

/** Where a VMI's spec sits in a VM. */
export const VM_TEMPLATE_SPEC = "spec.template.spec";

const vmEffects: Record<string, FieldEffect> = {
  "spec.runStrategy": effect(CONTROLLER, "stopping an Always VM (runStrategy Halted) removes its VMI and pod"),
  "spec.running": effect(CONTROLLER, "the deprecated running: true runs the VM like Always"),
  // That test names a namespaced instancetype and a preference in lower case: only the kinds find them.
  "spec.instancetype.name": sized,
  "spec.instancetype.kind": sized,
  "spec.instancetype.revisionName": effect(CONTROLLER, "and which another VM can name"),
  "spec.preference.name": sized,
  "spec.preference.kind": sized,
  "spec.preference.revisionName": effect(CONTROLLER, "and which another VM can name"),
  "spec.instancetype.inferFromVolume": effect(
    INFER,
    "names the instancetype and preference from the labels of a volume's claim, and drops inferFromVolume",
  ),
  "spec.instancetype.inferFromVolumeFailurePolicy": effect(
    INFER,
    "with Ignore, drops a matcher its volume does not name, and the memory when an instancetype is inferred",
  ),
  "spec.preference.inferFromVolume": effect(
    INFER,
    "names the instancetype and preference from the labels of a volume's claim, and drops inferFromVolume",
  ),
  "spec.preference.inferFromVolumeFailurePolicy": effect(
    INFER,
    "refuses, naming the field and what to do: no label under Reject, and a " +
      "missing volume or claim whatever the policy",
  ),
  "spec.dataVolumeTemplates[].apiVersion": refused(VALIDATION_CASES, "a DataVolume template of another API group"),
  "spec.dataVolumeTemplates[].kind": refused(VALIDATION_CASES, "a DataVolume template of another kind"),
  "spec.dataVolumeTemplates[].metadata.name": effect(
    E2E_DATA_VOLUMES,
    "boots the tiny guest from the DataVolume its template fills from a containerDisk image",
  ),
  "spec.dataVolumeTemplates[].metadata.namespace": refused(
    VALIDATION_CASES,
    "a DataVolume template in another namespace",
  ),
  "spec.dataVolumeTemplates[].metadata.labels": effect(
    DATA_VOLUMES,
    "names the DataVolume as the template, in the VM's namespace",
  ),
  "spec.dataVolumeTemplates[].metadata.annotations": effect(
    DATA_VOLUMES,
    "names the DataVolume as the template, in the VM's namespace",
  ),
  "spec.dataVolumeTemplates[].spec.source.http.url": effect(E2E_DATA_VOLUMES, "fills a DataVolume over HTTP"),
  "spec.dataVolumeTemplates[].spec.source.http.secretRef": httpSource,
  "spec.dataVolumeTemplates[].spec.source.http.extraHeaders[]": httpSource,
  "spec.dataVolumeTemplates[].spec.source.http.secretExtraHeaders[]": exportedManifests,
  "spec.dataVolumeTemplates[].spec.source.http.certConfigMap": exportedManifests,
  "spec.dataVolumeTemplates[].spec.source.registry.url": effect(
    E2E_DATA_VOLUMES,
    "boots the tiny guest from the DataVolume its template fills from a containerDisk image",
  ),
  "spec.dataVolumeTemplates[].spec.source.registry.pullMethod": effect(
    IMPORTER_POD,
    "pulls a registry source's image in the importer pod",
  ),
  "spec.dataVolumeTemplates[].spec.source.pvc.namespace": refused(
    VALIDATION_CASES,
    "a DataVolume template that clones a claim of another namespace, not supported",
  ),
  "spec.dataVolumeTemplates[].spec.source.pvc.name": effect(
    E2E_DATA_VOLUMES,
    "clones a claim with what the guest wrote on it",
  ),
  "spec.dataVolumeTemplates[].spec.source.blank": effect(IMPORTER_POD, "makes a blank disk"),
  "spec.dataVolumeTemplates[].spec.source.upload": effect(E2E_UPLOAD, "takes a qcow2 image through the upload proxy"),
  "spec.dataVolumeTemplates[].spec.pvc.accessModes[]": pvcClaimOfDataVolume,
  "spec.dataVolumeTemplates[].spec.pvc.volumeMode": pvcClaimOfDataVolume,
  "spec.dataVolumeTemplates[].spec.pvc.storageClassName": pvcClaimOfDataVolume,
  "spec.dataVolumeTemplates[].spec.pvc.resources.requests.storage": pvcClaimOfDataVolume,
  "spec.dataVolumeTemplates[].spec.storage.accessModes[]": claimOfDataVolume,
  "spec.dataVolumeTemplates[].spec.storage.volumeMode": claimOfDataVolume,
  "spec.dataVolumeTemplates[].spec.storage.storageClassName": claimOfDataVolume,
  "spec.dataVolumeTemplates[].spec.storage.resources.requests.storage": claimOfDataVolume,
  "spec.dataVolumeTemplates[].spec.contentType": refused(VALIDATION_CASES, "a DataVolume template of archive content"),
  "spec.template.metadata.labels": effect(
    "services/controller/src/vm/controller.test.ts",
    "gives the VMI the template's labels",
  ),
  "spec.template.metadata.annotations": effect(
    EXPAND,
    "gives the VMI the template's annotations over the instancetype's over the preference's",
  ),
  ...Object.fromEntries(Object.entries(vmiSpecEffects).map(([path, entry]) => [`${VM_TEMPLATE_SPEC}.${path}`, entry])),
};

const sizedByInstancetype = effect(EXPAND, "gives the instancetype's vCPUs and memory");
const instancetypeEffects: Record<string, FieldEffect> = {
  "instancetype:spec.cpu.guest": sizedByInstancetype,
  "instancetype:spec.cpu.model": sizedByInstancetype,
  "instancetype:spec.memory.guest": sizedByInstancetype,
  "instancetype:spec.memory.overcommitPercent": sizedByInstancetype,
  "instancetype:spec.nodeSelector": effect(EXPAND, "gives the VMI the instancetype's nodeSelector"),
  "instancetype:spec.annotations": effect(EXPAND, "gives the VMI the template's annotations over the instancetype's"),
};

const filledIn = effect(EXPAND, "fills in what the template leaves unset from the preference");
const requirements = effect(EXPAND, "checks the preference's requirements against the instancetype");
const spread = effect(EXPAND, "spreads by the ratio and refuses a count the ratio does not divide");
/**
 * A preference's TPM, features and clock: copied into the VMI where its template sets none (the expansion test shows
 * it for each kind); what each copied leaf then does is its VMI field's effect, proven under spec.template.spec.
 */
const PREFERENCE_COPIES = [
  "devices.preferredTPM.enabled",
  "devices.preferredTPM.persistent",
  "features.preferredAcpi.enabled",
  "features.preferredApic.enabled",
  "features.preferredApic.endOfInterrupt",
  "features.preferredHyperv.relaxed.enabled",
  "features.preferredHyperv.vapic.enabled",
  "features.preferredHyperv.spinlocks.enabled",
  "features.preferredHyperv.spinlocks.spinlocks",
  "features.preferredHyperv.vpindex.enabled",
  "features.preferredHyperv.runtime.enabled",
  "features.preferredHyperv.synic.enabled",
  "features.preferredHyperv.synictimer.enabled",
  "features.preferredHyperv.synictimer.direct.enabled",
  "features.preferredHyperv.reset.enabled",
  "features.preferredHyperv.vendorid.enabled",
  "features.preferredHyperv.vendorid.vendorid",
  "features.preferredHyperv.frequencies.enabled",
  "features.preferredHyperv.reenlightenment.enabled",
  "features.preferredHyperv.tlbflush.enabled",
  "features.preferredHyperv.ipi.enabled",
  "features.preferredHyperv.evmcs.enabled",
  "features.preferredKvm.hidden",
  "features.preferredPvspinlock.enabled",
  "features.preferredSmm.enabled",
  "clock.preferredClockOffset.utc.offsetSeconds",
  "clock.preferredClockOffset.timezone",
  "clock.preferredTimer.hpet.present",
  "clock.preferredTimer.hpet.tickPolicy",
  "clock.preferredTimer.pit.present",
  "clock.preferredTimer.pit.tickPolicy",
  "clock.preferredTimer.rtc.present",
  "clock.preferredTimer.rtc.tickPolicy",
  "clock.preferredTimer.rtc.track",
  "clock.preferredTimer.kvm.present",
  "clock.preferredTimer.hyperv.present",
];
const preferenceCopy = effect(
  EXPAND,
  "gives a Windows preference's persistent TPM and EFI, features and clock where the template sets none",
);

const preferenceEffects: Record<string, FieldEffect> = {
  ...Object.fromEntries(PREFERENCE_COPIES.map((path) => [`preference:spec.${path}`, preferenceCopy])),
  "preference:spec.cpu.preferredCPUTopology": effect(
    EXPAND,
    "lays vCPUs out as sockets unless the preference says otherwise",
  ),
  "preference:spec.cpu.spreadOptions.across": spread,
  "preference:spec.cpu.spreadOptions.ratio": spread,
  "preference:spec.devices.preferredDiskBus": filledIn,
  "preference:spec.devices.preferredCdromBus": filledIn,
  "preference:spec.devices.preferredLunBus": effect(EXPAND, "gives a LUN without a bus the preference's LUN bus"),
  "preference:spec.devices.preferredDiskCache": preferenceFillsIn,
  "preference:spec.devices.preferredInterfaceModel": filledIn,
  "preference:spec.devices.preferredRng": filledIn,
  "preference:spec.devices.preferredAutoattachSerialConsole": preferenceFillsIn,
  "preference:spec.devices.preferredAutoattachGraphicsDevice": preferenceFillsIn,
  "preference:spec.devices.preferredAutoattachPodInterface": preferenceFillsIn,
  "preference:spec.devices.preferredAutoattachMemBalloon": preferenceFillsIn,
  "preference:spec.firmware.preferredUseBios": deprecatedFirmware,
  "preference:spec.firmware.preferredEfi.secureBoot": filledIn,
  "preference:spec.firmware.preferredEfi.persistent": effect(
    EXPAND,
    "gives a Windows preference's persistent TPM and EFI",
  ),
  "preference:spec.firmware.preferredUseEfi": deprecatedFirmware,
  "preference:spec.firmware.preferredUseSecureBoot": deprecatedFirmware,
  "preference:spec.machine.preferredMachineType": filledIn,
  "preference:spec.requirements.cpu.guest": requirements,
  "preference:spec.requirements.memory.guest": requirements,
  "preference:spec.preferredTerminationGracePeriodSeconds": preferenceFillsIn,
  "preference:spec.preferredArchitecture": preferenceFillsIn,
  "preference:spec.preferredSubdomain": preferenceFillsIn,
  "preference:spec.annotations": effect(
    EXPAND,
    "gives the VMI the template's annotations over the instancetype's over the preference's",
  ),
};

const MIGRATION = "services/controller/test/migration.integration.test.ts";
const migrationEffects: Record<string, FieldEffect> = {
  "migration:spec.vmiName": effect(MIGRATION, "moves a VMI to the target pod's node"),
  "migration:spec.addedNodeSelector": effect(MIGRATION, "moves a VMI to the target pod's node"),
};

// A policy's selectors choose the configuration the controller hands a migration over with; each of its settings
// becomes the source launcher's option (the handler's test), which becomes virsh's (the launcher's migrateArgs test).
// Matched as KubeVirt does (the unit test); handed over by the controller (its integration test, "moves a VMI to the
// target pod's node").
const POLICY_MATCH = "packages/vm-rules/src/migration-policy.test.ts";
const POLICY_OPTIONS = effect(
  "services/handler/src/migration/decide.test.ts",
  "take each field of the MigrationPolicy's configuration",
);
const migrationPolicyEffects: Record<string, FieldEffect> = {
  "migrationpolicy:spec.selectors.namespaceSelector": effect(
    POLICY_MATCH,
    "applies a policy only when the VMI and its namespace have every label of its selectors",
  ),
  "migrationpolicy:spec.selectors.virtualMachineInstanceSelector": effect(
    POLICY_MATCH,
    "applies a policy only when the VMI and its namespace have every label of its selectors",
  ),
  "migrationpolicy:spec.allowAutoConverge": POLICY_OPTIONS,
  "migrationpolicy:spec.allowPostCopy": POLICY_OPTIONS,
  "migrationpolicy:spec.allowWorkloadDisruption": POLICY_OPTIONS,
  "migrationpolicy:spec.completionTimeoutPerGiB": POLICY_OPTIONS,
  // A real migration held to the policy's 1 MiB/s, slow enough to be cancelled under way.
  "migrationpolicy:spec.bandwidthPerMigration": effect(
    "e2e/cluster/vm-migration.test.ts",
    "is cancelled by deleting its migration",
  ),
};

// The KubeVirt CR (kubevirt:spec.X): the cluster's configuration over the chart's values (cluster-config.ts).
const CLUSTER_CONFIG = "packages/kubevirt-api/src/cluster-config.test.ts";
const E2E_KUBEVIRT = "e2e/cluster/kubevirt-cr.test.ts";
const KV_WEBHOOK = "apps/api/src/webhooks.test.ts";
const WORKLOAD_UPDATE = "services/controller/src/workload-update/decide.test.ts";
const crOverChart = effect(CLUSTER_CONFIG, "takes each field the CR sets over the chart's value, and only those");
const verbosity = effect(E2E_KUBEVIRT, "takes virtctl adm log-verbosity --all=5 and --reset");
const crMigrations = effect(CLUSTER_CONFIG, "takes each field the CR sets over the chart's value, and only those");
const kubevirtEffects: Record<string, FieldEffect> = {
  "kubevirt:spec.configuration.developerConfiguration.featureGates[]": effect(
    E2E_KUBEVIRT,
    "warns of a feature gate it ignores",
  ),
  "kubevirt:spec.configuration.developerConfiguration.useEmulation": effect(
    POD,
    "asks for devices.kubevirt.io/kvm in its limits when emulation is not allowed",
  ),
  "kubevirt:spec.configuration.developerConfiguration.memoryOvercommit": effect(
    POD,
    "asks for a share of the guest's memory under the cluster's memoryOvercommit",
  ),
  "kubevirt:spec.configuration.developerConfiguration.cpuAllocationRatio": effect(
    E2E_KUBEVIRT,
    "gives the next launcher pod the CPU request of a changed cpuAllocationRatio",
  ),
  "kubevirt:spec.configuration.developerConfiguration.logVerbosity.virtAPI": verbosity,
  "kubevirt:spec.configuration.developerConfiguration.logVerbosity.virtController": verbosity,
  "kubevirt:spec.configuration.developerConfiguration.logVerbosity.virtHandler": verbosity,
  "kubevirt:spec.configuration.developerConfiguration.logVerbosity.virtLauncher": effect(
    POD,
    "tells the launcher its log level from the VMI's logVerbosity label or the cluster's",
  ),
  // No operator runs in kubevirt-ts: virtctl sets it with the others, and it is kept for virtctl to show.
  "kubevirt:spec.configuration.developerConfiguration.logVerbosity.virtOperator": verbosity,
  "kubevirt:spec.configuration.evictionStrategy": crOverChart,
  "kubevirt:spec.configuration.migrations.parallelMigrationsPerCluster": crMigrations,
  "kubevirt:spec.configuration.migrations.parallelOutboundMigrationsPerNode": crMigrations,
  "kubevirt:spec.configuration.migrations.allowAutoConverge": crMigrations,
  "kubevirt:spec.configuration.migrations.allowPostCopy": crMigrations,
  "kubevirt:spec.configuration.migrations.bandwidthPerMigration": crMigrations,
  "kubevirt:spec.configuration.migrations.completionTimeoutPerGiB": crMigrations,
  "kubevirt:spec.configuration.migrations.progressTimeout": crMigrations,
  "kubevirt:spec.configuration.machineType": effect(
    DEFAULTS,
    "takes the cluster's machine type and CPU model where the VMI names none",
  ),
  "kubevirt:spec.configuration.architectureConfiguration.defaultArchitecture": refused(
    KV_WEBHOOK,
    "refuses a field kubevirt-ts does not act on by its path",
  ),
  "kubevirt:spec.configuration.architectureConfiguration.amd64.machineType": effect(
    DEFAULTS,
    "takes the cluster's machine type and CPU model where the VMI names none",
  ),
  "kubevirt:spec.configuration.cpuModel": effect(
    DEFAULTS,
    "takes the cluster's machine type and CPU model where the VMI names none",
  ),
  "kubevirt:spec.configuration.defaultRuntimeClass": effect(POD, "runs in the cluster's defaultRuntimeClass"),
  "kubevirt:spec.configuration.vmRolloutStrategy": refused(
    KV_WEBHOOK,
    "refuses a field kubevirt-ts does not act on by its path",
  ),
  "kubevirt:spec.configuration.imagePullPolicy": effect(
    CLUSTER_CONFIG,
    "prefers configuration.imagePullPolicy to the operator's spec.imagePullPolicy",
  ),
  "kubevirt:spec.configuration.vmStateStorageClass": crOverChart,
  "kubevirt:spec.imagePullPolicy": effect(
    CLUSTER_CONFIG,
    "prefers configuration.imagePullPolicy to the operator's spec.imagePullPolicy",
  ),
  "kubevirt:spec.certificateRotateStrategy": refused(
    KV_WEBHOOK,
    "refuses a field kubevirt-ts does not act on by its path",
  ),
  "kubevirt:spec.customizeComponents": refused(KV_WEBHOOK, "refuses a field kubevirt-ts does not act on by its path"),
  "kubevirt:spec.workloadUpdateStrategy.workloadUpdateMethods[]": effect(
    WORKLOAD_UPDATE,
    "migrates the outdated VMIs that can move and evicts the others, as the methods say",
  ),
  "kubevirt:spec.workloadUpdateStrategy.batchEvictionSize": effect(
    WORKLOAD_UPDATE,
    "evicts at most batchEvictionSize per batchEvictionInterval",
  ),
  "kubevirt:spec.workloadUpdateStrategy.batchEvictionInterval": effect(
    WORKLOAD_UPDATE,
    "evicts at most batchEvictionSize per batchEvictionInterval",
  ),
};

export const FIELD_EFFECTS: Readonly<Record<string, FieldEffect>> = {
  ...vmEffects,
  ...instancetypeEffects,
  ...preferenceEffects,
  ...migrationEffects,
  ...migrationPolicyEffects,
  ...kubevirtEffects,
};
