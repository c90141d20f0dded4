import { type VirtualMachineInstance, type VmiSpec, defaultVmiSpec } from "@kubevirt-ts/kubevirt-api";
import { describe, expect, it } from "vitest";
import {
  type DomainContext,
  type KvmProbe,
  chooseDomainType,
  domainName,
  domainXml,
  firmwareUuid,
  kvmUnusableReason,
} from "./converter.ts";

function vmi(mutate: (spec: VmiSpec) => void = () => undefined): VirtualMachineInstance {
  const spec: VmiSpec = {
    domain: {
      memory: { guest: "256Mi" },
      devices: {
        disks: [
          { name: "root", disk: { bus: "virtio" }, bootOrder: 1 },
          { name: "cloudinit", disk: { bus: "virtio" } },
        ],
        interfaces: [{ name: "default", masquerade: {} }],
      },
    },
    networks: [{ name: "default", pod: {} }],
    volumes: [
      { name: "root", containerDisk: { image: "guest:1" } },
      { name: "cloudinit", cloudInitNoCloud: { userData: "#cloud-config" } },
    ],
  };
  mutate(spec);
  return {
    apiVersion: "kubevirt.io/v1",
    kind: "VirtualMachineInstance",
    metadata: { name: "testvm", namespace: "ns", uid: "u" },
    spec: defaultVmiSpec(spec),
  };
}

const ctx: DomainContext = {
  domainType: "qemu",
  uuid: "5d9e3a1c-0000-4000-8000-000000000001",
  disks: {
    root: { path: "/var/run/kubevirt-ts/disks/root.qcow2", format: "qcow2" },
    cloudinit: { path: "/var/run/kubevirt-ts/disks/cloudinit.iso", format: "raw", readonly: "unlessSata" },
    scratch: { path: "/var/run/kubevirt-ts/disks/scratch.qcow2", format: "qcow2" },
    cd: { path: "/var/run/kubevirt-ts/disks/cd.iso", format: "raw" },
  },
  serialSocket: "/var/run/kubevirt-ts/sockets/virt-serial0",
  serialLog: "/var/run/kubevirt-ts/logs/serial0.log",
  vncSocket: "/var/run/kubevirt-ts/sockets/virt-vnc",
  guestAgentSocket: "/var/run/kubevirt-ts/sockets/guest-agent.sock",
};

describe("domainXml", () => {
  const base = domainXml(vmi(), ctx);

  it.each([
    ["names the domain namespace_name", "<name>ns_testvm</name>"],
    ["uses emulation when asked", '<domain type="qemu">'],
    ["gives the guest its memory in bytes", '<memory unit="b">268435456</memory>'],
    ["counts vCPUs from the topology", '<vcpu placement="static">1</vcpu>'],
    ["offers everything QEMU emulates as the CPU", '<cpu mode="maximum" migratable="off">'],
    ["uses the q35 machine", '<type arch="x86_64" machine="q35">hvm</type>'],
    ["attaches the root disk on virtio as vda, first to boot", '<target dev="vda" bus="virtio"/>'],
    ["boots from the disk given boot order 1", '<boot order="1"/>'],
    [
      "attaches the cloud-init disk as vdb, read-only",
      '<source file="/var/run/kubevirt-ts/disks/cloudinit.iso"/>\n      <target ' +
        'dev="vdb" bus="virtio"/>\n      <readonly/>',
    ],
    [
      "binds the serial console to a unix socket",
      '<serial type="unix">\n      <source mode="bind" path="/var/run/kubevirt-ts/sockets/virt-serial0"/>',
    ],
    ["keeps a log of the serial console", '<log file="/var/run/kubevirt-ts/logs/serial0.log" append="on"/>'],
    ["serves VNC on a unix socket", '<listen type="socket" socket="/var/run/kubevirt-ts/sockets/virt-vnc"/>'],
    [
      "puts a masquerade interface on the tap network-setup made, which libvirt leaves as it is",
      '<interface type="ethernet">\n      <target dev="tap0" managed="no"/>\n      <model type="virtio"/>',
    ],
    ["sets the SMBIOS UUID", '<entry name="uuid">5d9e3a1c-0000-4000-8000-000000000001</entry>'],
  ])("%s", (_name, fragment) => {
    expect(base).toContain(fragment);
  });

  it("attaches a Block-mode claim as its device and a Filesystem-mode claim's image as a file, both raw", () => {
    const xml = domainXml(
      vmi((s) => {
        s.domain.devices.disks?.push(
          { name: "fast", disk: { bus: "virtio" } },
          { name: "data", disk: { bus: "virtio" } },
        );
        s.volumes?.push(
          { name: "fast", persistentVolumeClaim: { claimName: "fast" } },
          { name: "data", persistentVolumeClaim: { claimName: "data" } },
        );
      }),
      {
        ...ctx,
        disks: {
          ...ctx.disks,
          fast: { path: "/dev/vmi-disks/fast", format: "raw", type: "block" },
          data: { path: "/var/run/kubevirt-ts/vmi-disks/data/disk.img", format: "raw", type: "file" },
        },
      },
    );
    expect(xml).toContain(
      '<disk type="block" device="disk">\n      <driver name="qemu" type="raw" ' +
        'cache="none"/>\n      <source dev="/dev/vmi-disks/fast"/>',
    );
    expect(xml).toContain(
      '<disk type="file" device="disk">\n      <driver name="qemu" type="raw" cache="none"/>\n      ' +
        '<source file="/var/run/kubevirt-ts/vmi-disks/data/disk.img"/>',
    );
  });

  it.each([
    [
      "KVM with the host's CPU model when KVM works",
      () => domainXml(vmi(), { ...ctx, domainType: "kvm" }),
      ['<domain type="kvm">', '<cpu mode="host-model">'],
    ],
    [
      "three threads per core",
      () =>
        domainXml(
          vmi((s) => (s.domain.cpu = { sockets: 1, cores: 1, threads: 3 })),
          ctx,
        ),
      ['<vcpu placement="static">3</vcpu>', '<topology sockets="1" cores="1" threads="3"/>'],
    ],
    [
      "another machine type",
      () =>
        domainXml(
          vmi((s) => (s.domain.machine = { type: "pc-q35-7.2" })),
          ctx,
        ),
      ['machine="pc-q35-7.2"'],
    ],
    [
      "the SMBIOS serial number",
      () =>
        domainXml(
          vmi((s) => (s.domain.firmware = { serial: "sn-42" })),
          ctx,
        ),
      ['<entry name="serial">sn-42</entry>'],
    ],
    [
      "a read-only disk with writeback caching",
      () =>
        domainXml(
          vmi(
            (s) =>
              (s.domain.devices.disks = [
                { name: "root", disk: { bus: "virtio", readonly: true }, cache: "writeback" },
              ]),
          ),
          ctx,
        ),
      ['cache="writeback"', '<target dev="vda" bus="virtio"/>\n      <readonly/>'],
    ],
    [
      "a writable CD-ROM on the SCSI bus",
      () =>
        domainXml(
          vmi((s) => {
            s.domain.devices.disks = [{ name: "cd", cdrom: { bus: "scsi", readonly: false } }];
            s.volumes = [{ name: "cd", containerDisk: { image: "iso:1" } }];
          }),
          ctx,
        ),
      ['<target dev="sda" bus="scsi" tray="closed"/>'],
    ],
    [
      "an e1000e interface with its MAC address, booted from the network second",
      () =>
        domainXml(
          vmi(
            (s) =>
              (s.domain.devices.interfaces = [
                { name: "default", masquerade: {}, model: "e1000e", macAddress: "02:00:00:00:00:2a", bootOrder: 2 },
              ]),
          ),
          ctx,
        ),
      ['<mac address="02:00:00:00:00:2a"/>', '<model type="e1000e"/>', '<boot order="2"/>'],
    ],
    [
      "a MAC address written with hyphens, as KubeVirt takes it, given to libvirt with colons",
      () =>
        domainXml(
          vmi(
            (s) =>
              (s.domain.devices.interfaces = [{ name: "default", masquerade: {}, macAddress: "02-00-00-00-00-2A" }]),
          ),
          ctx,
        ),
      ['<mac address="02:00:00:00:00:2a"/>'],
    ],
    [
      "a named CPU model as a custom CPU",
      () =>
        domainXml(
          vmi((s) => (s.domain.cpu = { model: "Skylake-Client" })),
          ctx,
        ),
      ['<cpu mode="custom" match="exact" check="none">\n    <model fallback="allow">Skylake-Client</model>'],
    ],
    [
      "the host's CPU as it is, when KVM works and it is asked for",
      () =>
        domainXml(
          vmi((s) => (s.domain.cpu = { model: "host-passthrough" })),
          { ...ctx, domainType: "kvm" },
        ),
      ['<cpu mode="host-passthrough">'],
    ],
    [
      "the topology asked for",
      () =>
        domainXml(
          vmi((s) => (s.domain.cpu = { sockets: 2, cores: 2, threads: 1 })),
          ctx,
        ),
      ['<vcpu placement="static">4</vcpu>', '<topology sockets="2" cores="2" threads="1"/>'],
    ],
    [
      "sata and scsi disks named sda, sdb, with a virtio-scsi controller",
      () =>
        domainXml(
          vmi((s) => {
            s.domain.devices.disks = [
              { name: "root", disk: { bus: "sata" } },
              { name: "scratch", disk: { bus: "scsi" } },
            ];
            s.volumes = [
              { name: "root", containerDisk: { image: "g:1" } },
              { name: "scratch", emptyDisk: { capacity: "1Gi" } },
            ];
          }),
          ctx,
        ),
      [
        '<target dev="sda" bus="sata"/>',
        '<target dev="sdb" bus="scsi"/>',
        '<controller type="scsi" index="0" model="virtio-scsi"/>',
      ],
    ],
    [
      "a CD-ROM, read-only without host caching",
      () =>
        domainXml(
          vmi((s) => {
            s.domain.devices.disks = [{ name: "cd", cdrom: { bus: "sata" } }];
            s.volumes = [{ name: "cd", containerDisk: { image: "iso:1" } }];
          }),
          ctx,
        ),
      ['<disk type="file" device="cdrom">', '<driver name="qemu" type="raw"/>', "<readonly/>"],
    ],
    [
      "a CD-ROM whose tray starts open",
      () =>
        domainXml(
          vmi((s) => {
            s.domain.devices.disks = [{ name: "cd", cdrom: { bus: "sata", tray: "open" } }];
            s.volumes = [{ name: "cd", containerDisk: { image: "iso:1" } }];
          }),
          ctx,
        ),
      ['<target dev="sda" bus="sata" tray="open"/>'],
    ],
    [
      "a kernel boot",
      () =>
        domainXml(
          vmi(
            (s) =>
              (s.domain.firmware = {
                kernelBoot: { kernelArgs: "console=ttyS0", container: { image: "k:1", kernelPath: "/boot/vmlinuz" } },
              }),
          ),
          { ...ctx, kernelBoot: { kernel: "/var/run/kubevirt-ts/kernel/vmlinuz" } },
        ),
      ["<kernel>/var/run/kubevirt-ts/kernel/vmlinuz</kernel>", "<cmdline>console=ttyS0</cmdline>"],
    ],
    [
      "a watchdog that powers the guest off",
      () =>
        domainXml(
          vmi((s) => (s.domain.devices.watchdog = { name: "wd", i6300esb: { action: "poweroff" } })),
          ctx,
        ),
      ['<watchdog model="i6300esb" action="poweroff"/>'],
    ],
    [
      "a virtio tablet instead of the USB one",
      () =>
        domainXml(
          vmi((s) => (s.domain.devices.inputs = [{ name: "tablet", type: "tablet", bus: "virtio" }])),
          ctx,
        ),
      ['<input type="tablet" bus="virtio"/>'],
    ],
    [
      "an emulated TPM 2.0",
      () =>
        domainXml(
          vmi((s) => (s.domain.devices.tpm = {})),
          ctx,
        ),
      ['<tpm model="tpm-tis">\n      <backend type="emulator" version="2.0"/>\n    </tpm>'],
    ],
    [
      "a persistent TPM on CRB whose state libvirt keeps, and EFI variables in the file on the VM's state claim",
      () =>
        domainXml(
          vmi((s) => {
            s.domain.devices.tpm = { persistent: true };
            s.domain.firmware = { bootloader: { efi: { secureBoot: false, persistent: true } } };
          }),
          { ...ctx, nvram: "/var/run/kubevirt-ts/vm-state/nvram/ns_testvm_VARS.fd" },
        ),
      [
        '<tpm model="tpm-crb">\n      <backend type="emulator" version="2.0" persistent_state="yes"/>\n    </tpm>',
        "<nvram>/var/run/kubevirt-ts/vm-state/nvram/ns_testvm_VARS.fd</nvram>",
      ],
    ],
    [
      "a virtio RNG",
      () =>
        domainXml(
          vmi((s) => (s.domain.devices.rng = {})),
          ctx,
        ),
      ['<rng model="virtio">', '<backend model="random">/dev/urandom</backend>'],
    ],
    [
      "an EFI firmware with secure boot, and SMM for it",
      () =>
        domainXml(
          vmi((s) => (s.domain.firmware = { bootloader: { efi: { secureBoot: true } } })),
          ctx,
        ),
      [
        '<os firmware="efi">',
        '<feature enabled="yes" name="enrolled-keys"/>',
        '<feature enabled="yes" name="secure-boot"/>',
        '<smm state="on"/>',
      ],
    ],
    [
      "an EFI firmware without secure boot",
      () =>
        domainXml(
          vmi((s) => (s.domain.firmware = { bootloader: { efi: { secureBoot: false } } })),
          ctx,
        ),
      [
        '<os firmware="efi">',
        '<feature enabled="no" name="enrolled-keys"/>',
        '<feature enabled="no" name="secure-boot"/>',
        "<features>\n    <acpi/>\n    <apic/>\n    <tcg>\n      <tb-cache " +
          'unit="MiB">64</tb-cache>\n    </tcg>\n  </features>',
      ],
    ],
    [
      "a Windows-style guest: Hyper-V enlightenments, SMM, local time with its timers, EFI with secure boot",
      () =>
        domainXml(
          vmi((s) => {
            s.domain.firmware = { bootloader: { efi: { secureBoot: true } } };
            s.domain.features = {
              acpi: {},
              apic: { endOfInterrupt: true },
              smm: {},
              pvspinlock: { enabled: false },
              hyperv: {
                relaxed: {},
                vapic: {},
                vpindex: {},
                runtime: {},
                synic: {},
                reset: {},
                frequencies: {},
                reenlightenment: {},
                tlbflush: {},
                ipi: {},
                evmcs: { enabled: false },
                spinlocks: { spinlocks: 8191 },
                synictimer: { direct: {} },
                vendorid: { vendorid: "kubevirt-ts" },
              },
            };
            s.domain.clock = {
              timezone: "Europe/Paris",
              timer: {
                hpet: { present: false },
                pit: { tickPolicy: "delay" },
                rtc: { tickPolicy: "catchup", track: "guest" },
                hyperv: {},
                kvm: { present: false },
              },
            };
          }),
          ctx,
        ),
      [
        '<apic eoi="on"/>',
        '<hyperv mode="custom">\n      <relaxed state="on"/>\n      <vapic state="on"/>\n      <vpindex ' +
          'state="on"/>\n      <runtime state="on"/>\n      <synic state="on"/>\n      <reset state="on"/>\n   ' +
          '   <frequencies state="on"/>\n      <reenlightenment state="on"/>\n      <tlbflush state="on"/>\n   ' +
          '   <ipi state="on"/>\n      <evmcs state="off"/>\n      <spinlocks state="on" retries="8191"/>\n    ' +
          '  <stimer state="on">\n        <direct state="on"/>\n      </stimer>\n      <vendor_id state="on" ' +
          'value="kubevirt-ts"/>\n    </hyperv>',
        '<pvspinlock state="off"/>',
        '<smm state="on"/>',
        '<clock offset="timezone" timezone="Europe/Paris">\n    <timer name="rtc" present="yes" ' +
          'tickpolicy="catchup" track="guest"/>\n    <timer name="pit" present="yes" tickpolicy="delay"/>\n    ' +
          '<timer name="hpet" present="no"/>\n    <timer name="kvmclock" present="no"/>\n    <timer ' +
          'name="hypervclock" present="yes"/>\n  </clock>',
      ],
    ],
    [
      "an HPET with its tick policy",
      () =>
        domainXml(
          vmi((s) => (s.domain.clock = { utc: {}, timer: { hpet: { tickPolicy: "catchup" } } })),
          ctx,
        ),
      ['<timer name="hpet" present="yes" tickpolicy="catchup"/>'],
    ],
    [
      "KVM hidden from the guest",
      () =>
        domainXml(
          vmi((s) => (s.domain.features = { kvm: { hidden: true } })),
          ctx,
        ),
      ['<kvm>\n      <hidden state="on"/>\n    </kvm>'],
    ],
    [
      "a UTC clock running ahead",
      () =>
        domainXml(
          vmi((s) => (s.domain.clock = { utc: { offsetSeconds: 3600 } })),
          ctx,
        ),
      ['<clock offset="utc" adjustment="3600"/>'],
    ],
    [
      "no ACPI or APIC when turned off, and SMM off when asked without secure boot",
      () =>
        domainXml(
          vmi(
            (s) =>
              (s.domain.features = { acpi: { enabled: false }, apic: { enabled: false }, smm: { enabled: false } }),
          ),
          ctx,
        ),
      [
        '<features>\n    <smm state="off"/>\n    <tcg>\n      <tb-cache ' +
          'unit="MiB">64</tb-cache>\n    </tcg>\n  </features>',
      ],
    ],
  ])("renders %s", (_name, render, fragments) => {
    const xml = render();
    for (const fragment of fragments) expect(xml).toContain(fragment);
  });

  it.each([
    ["256Mi", 64],
    ["1Gi", 128],
    ["2Gi", 256],
    ["8Gi", 256],
  ])(
    "gives an emulated guest of %s a translation cache of %i MiB, not QEMU's 1 GiB, and a KVM domain none",
    (memory, mib) => {
      const guest = vmi((s) => (s.domain.memory = { guest: memory }));
      expect(domainXml(guest, ctx)).toContain(
        `<tcg>\n      <tb-cache unit="MiB">${String(mib)}</tb-cache>\n    </tcg>`,
      );
      expect(domainXml(guest, { ...ctx, domainType: "kvm" })).not.toContain("<tcg>");
    },
  );

  it("leaves out VNC, video and the tablet when there is no graphics device", () => {
    const xml = domainXml(
      vmi((s) => (s.domain.devices.autoattachGraphicsDevice = false)),
      ctx,
    );
    expect(xml).not.toMatch(/<graphics|<video|<input/);
  });

  it(
    "gives a virtio memory balloon that reports the guest's memory every 10 s, and " +
      "none when autoattachMemBalloon is false",
    () => {
      expect(domainXml(vmi(), ctx)).toContain(
        '<memballoon model="virtio">\n      <stats period="10"/>\n    </memballoon>',
      );
      const without = domainXml(
        vmi((s) => (s.domain.devices.autoattachMemBalloon = false)),
        ctx,
      );
      expect(without).toContain('<memballoon model="none"/>');
      expect(without).not.toContain("<stats");
    },
  );

  it("keeps no serial log when logSerialConsole is false, and lists only the inputs asked for", () => {
    const xml = domainXml(
      vmi((s) => {
        s.domain.devices.logSerialConsole = false;
        s.domain.devices.inputs = [{ name: "tablet", type: "tablet", bus: "virtio" }];
      }),
      ctx,
    );
    expect(xml).toContain('<serial type="unix">');
    expect(xml).not.toContain("<log ");
    expect(xml).not.toContain('bus="usb"');
  });

  it("leaves out a TPM that is turned off, and has none unless asked", () => {
    expect(
      domainXml(
        vmi((s) => (s.domain.devices.tpm = { enabled: false })),
        ctx,
      ),
    ).not.toContain("<tpm");
    expect(domainXml(vmi(), ctx)).not.toContain("<tpm");
  });

  it("leaves a cloud-init disk on SATA writable, which libvirt cannot make read-only (KubeVirt's default bus)", () => {
    const xml = domainXml(
      vmi(
        (s) =>
          (s.domain.devices.disks = [
            { name: "root", disk: { bus: "sata" } },
            { name: "cloudinit", disk: { bus: "sata" } },
          ]),
      ),
      ctx,
    );
    expect(xml).toContain('<target dev="sdb" bus="sata"/>');
    expect(xml).not.toContain("<readonly/>");
  });

  it("keeps a read-only claim read-only on SATA too, where libvirt then says why it cannot", () => {
    const xml = domainXml(
      vmi((s) => (s.domain.devices.disks = [{ name: "root", disk: { bus: "sata" } }])),
      {
        ...ctx,
        disks: {
          ...ctx.disks,
          root: { path: "/var/run/kubevirt-ts/vmi-disks/root/disk.img", format: "raw", readonly: true },
        },
      },
    );
    expect(xml).toContain("<readonly/>");
  });

  it("makes a CD-ROM writable only when it says readonly: false", () => {
    const cdrom = (readonly?: boolean) =>
      domainXml(
        vmi((s) => {
          s.domain.devices.disks = [
            { name: "cd", cdrom: readonly === undefined ? { bus: "sata" } : { bus: "sata", readonly } },
          ];
          s.volumes = [{ name: "cd", containerDisk: { image: "iso:1" } }];
        }),
        { ...ctx, disks: { cd: { path: "/var/run/kubevirt-ts/disks/cd.iso", format: "raw" } } },
      );
    expect(cdrom(false)).not.toContain("<readonly/>");
    expect(cdrom()).toContain("<readonly/>");
    expect(cdrom(true)).toContain("<readonly/>");
  });

  it("leaves out the serial console when it is not wanted", () => {
    expect(
      domainXml(
        vmi((s) => (s.domain.devices.autoattachSerialConsole = false)),
        ctx,
      ),
    ).not.toMatch(/<serial|<console/);
  });

  it("escapes values, so a serial number cannot inject XML", () => {
    const xml = domainXml(
      vmi((s) => {
        const root = s.domain.devices.disks?.[0];
        if (root) root.serial = "a</serial><evil/>";
      }),
      ctx,
    );
    expect(xml).toContain("<serial>a&lt;/serial&gt;&lt;evil/&gt;</serial>");
    expect(xml).not.toContain("<evil/>");
  });

  it("refuses a disk whose volume the launcher did not prepare", () => {
    expect(() => domainXml(vmi(), { ...ctx, disks: {} })).toThrow("disk root has no prepared volume");
  });

  it("puts a bridge interface on the same tap, with the pod interface's MAC unless it names its own", () => {
    const bridged = (mac?: string) =>
      vmi(
        (s) => (s.domain.devices.interfaces = [{ name: "default", bridge: {}, ...(mac ? { macAddress: mac } : {}) }]),
      );
    const pod = { ...ctx, podInterface: { mtu: 1500, mac: "0a:58:c6:12:01:05" } };
    expect(domainXml(bridged(), pod)).toMatch(
      /<interface type="ethernet">\s*<mac address="0a:58:c6:12:01:05"\/>\s*<target dev="tap0" managed="no"\/>/,
    );
    expect(domainXml(bridged("02:00:00:00:00:07"), pod)).toContain('<mac address="02:00:00:00:00:07"/>');
    // A masquerade interface never takes the pod's MAC: it is the pod interface's own, behind the masquerade.
    expect(domainXml(vmi(), pod)).not.toContain("0a:58:c6:12:01:05");
  });

  it("gives the guest's interface the pod interface's MTU", () => {
    expect(domainXml(vmi(), { ...ctx, podInterface: { mtu: 1450 } })).toMatch(
      /<interface type="ethernet">[^]*<mtu size="1450"\/>[^]*<\/interface>/,
    );
    expect(domainXml(vmi(), ctx)).not.toContain("<mtu");
  });

  it("gives the guest agent its virtio port, as KubeVirt does", () => {
    const channel = new RegExp(
      `<channel type="unix">\\s*<source mode="bind" path="${ctx.guestAgentSocket}"/>\\s*` +
        '<target type="virtio" name="org\\.qemu\\.guest_agent\\.0"/>\\s*</channel>',
    );
    expect(domainXml(vmi(), ctx)).toMatch(channel);
  });
});

describe("chooseDomainType", () => {
  const usable = { state: "usable" } as const;
  const missing = { state: "missing" } as const;
  const denied = { state: "denied", code: "EACCES", mode: 0o20600, uid: 0, gid: 0 } as const;
  const choose = (kvm: KvmProbe, allowEmulation: boolean) =>
    chooseDomainType({ kvm, allowEmulation, path: "/dev/kvm", uid: 107 });

  it.each([
    [usable, false, "kvm"],
    [usable, true, "kvm"],
    [missing, true, "qemu"],
    [denied, true, "qemu"],
  ] as const)("%j with emulation allowed: %s gives %s", (kvm, allowEmulation, type) => {
    expect(choose(kvm, allowEmulation)).toBe(type);
  });

  it("fails clearly without KVM when emulation is not allowed", () => {
    const refusal = new RegExp(
      "^KVM is unusable and software emulation is not allowed \\(useEmulation is off\\): /dev/kvm is not in the " +
        "launcher's container: .*devices\\.kubevirt\\.io/kvm.*; or enable useEmulation in the KubeVirt CR",
    );
    expect(() => choose(missing, false)).toThrow(refusal);
  });

  it("says when /dev/kvm is there but the launcher's user may not open it, and what fixes it", () => {
    const denial = new RegExp(
      "/dev/kvm is in the launcher's container but its user 107 cannot open it read-write \\(EACCES, " +
        "the device being mode 0600 and owned by 0:0\\): .*mode 0666 .*device_ownership_from_security_context = true",
    );
    expect(() => choose(denied, false)).toThrow(denial);
    expect(kvmUnusableReason({ state: "denied", code: "EPERM" }, "/dev/kvm", 107)).toMatch(
      /cannot open it read-write \(EPERM\)/,
    );
  });
});

describe("names", () => {
  it("names the domain after namespace and name", () => {
    expect(domainName(vmi())).toBe("ns_testvm");
  });

  it("takes the domain's UUID from firmware.uuid, or else derives a stable one from namespace and name", () => {
    const uuid = "0a8f3d52-1111-4222-8333-444455556666";
    const own = vmi((s) => (s.domain.firmware = { uuid }));
    expect(firmwareUuid(own)).toBe(uuid);
    expect(domainXml(own, { ...ctx, uuid: firmwareUuid(own) })).toMatch(
      new RegExp(`<uuid>${uuid}</uuid>[\\s\\S]*<entry name="uuid">${uuid}</entry>`),
    );
    const derived = firmwareUuid(vmi());
    expect(derived).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(firmwareUuid(vmi())).toBe(derived);
    const other = vmi();
    other.metadata.name = "othervm";
    expect(firmwareUuid(other)).not.toBe(derived);
  });
});
