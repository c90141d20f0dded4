import { LauncherEnv } from "@kubevirt-ts/node-contract";
import type { VirtualMachineInstance } from "@kubevirt-ts/kubevirt-api";
import { describe, expect, it } from "vitest";
import type { Pod, PodSpec } from "@kubevirt-ts/kube";
import { defaultPullPolicy, launcherDeletionGrace, launcherPod, secretsWaitMessage, vmiIdLabelValue } from "./pod.ts";

const config = {
  launcherImage: "kubevirt-ts.local/virt-launcher:abc",
  imagePullPolicy: "IfNotPresent" as const,
  allowEmulation: true,
  evictionStrategy: "None" as const,
};

function vmi(mutate: (v: VirtualMachineInstance) => void = () => undefined): VirtualMachineInstance {
  const value: VirtualMachineInstance = {
    apiVersion: "kubevirt.io/v1",
    kind: "VirtualMachineInstance",
    metadata: {
      name: "testvm",
      namespace: "ns",
      uid: "vmi-uid",
      labels: { "vm.kubevirt.io/name": "testvm", app: "web" },
    },
    spec: { domain: { memory: { guest: "1Gi" }, cpu: { sockets: 1, cores: 2, threads: 1 }, devices: {} } },
  };
  mutate(value);
  return value;
}

describe("launcherPod", () => {
  const pod = launcherPod(vmi(), config);
  const { spec } = pod;
  const [compute] = spec.containers;
  if (!compute) throw new Error("the launcher pod has no container");

  it("is named after the VMI and owned by it", () => {
    expect(pod.metadata.generateName).toBe("virt-launcher-testvm-");
    expect(pod.metadata.ownerReferences).toEqual([
      {
        apiVersion: "kubevirt.io/v1",
        kind: "VirtualMachineInstance",
        name: "testvm",
        uid: "vmi-uid",
        controller: true,
        blockOwnerDeletion: true,
      },
    ]);
  });

  it("carries KubeVirt's labels and the VMI's own", () => {
    expect(pod.metadata.labels).toEqual({
      app: "web",
      "kubevirt.io": "virt-launcher",
      "kubevirt.io/created-by": "vmi-uid",
      "vm.kubevirt.io/name": "testvm",
      "vmi.kubevirt.io/id": "testvm",
    });
  });

  it("labels the pod with KubeVirt's VMI id for virtctl expose: the name, or cut and hashed when long", () => {
    expect(vmiIdLabelValue("a".repeat(63))).toBe("a".repeat(63));
    // The first 54 characters, a dash, then the first 8 hex digits of the SHA-1 of the whole name.
    const long = `${"b".repeat(60)}-vm-with-a-long-name`;
    expect(vmiIdLabelValue(long)).toBe(`${"b".repeat(54)}-6a19805d`);
    expect(vmiIdLabelValue(long)).toHaveLength(63);
  });

  it(
    "asks for the guest's memory plus the overhead: the launcher's measured one " +
      "under emulation, KubeVirt's with KVM",
    () => {
      // Emulation: 1 GiB guest + 2 MiB page tables + 180 MiB launcher + 128 MiB translation cache + 2 vCPUs × 8 MiB
      // + 8 MiB IO thread + 32 MiB video.
      expect(compute.resources?.requests?.memory).toBe("1390Mi");
      // KVM: KubeVirt's 220 MiB of processes in place of the launcher's share and the cache.
      expect(
        launcherPod(vmi(), { ...config, allowEmulation: false }).spec.containers[0]?.resources?.requests?.memory,
      ).toBe("1302Mi");
    },
  );

  it.each([
    ["memory limit", vmi((v) => (v.spec.domain.resources = { limits: { memory: "1Gi" } })), { memory: "1390Mi" }],
    ["cpu limit", vmi((v) => (v.spec.domain.resources = { limits: { cpu: "2" } })), { cpu: "2" }],
  ])("passes a %s on", (_name, given, limits) => {
    expect(launcherPod(given, config).spec.containers[0]?.resources?.limits).toEqual(limits);
  });

  it(
    "asks for devices.kubevirt.io/kvm in its limits when emulation is not " + "allowed, and for no device when it is",
    () => {
      expect(launcherPod(vmi(), { ...config, allowEmulation: false }).spec.containers[0]?.resources?.limits).toEqual({
        "devices.kubevirt.io/kvm": "1",
      });
      expect(
        launcherPod(
          vmi((v) => (v.spec.domain.resources = { limits: { cpu: "2" } })),
          { ...config, allowEmulation: false },
        ).spec.containers[0]?.resources?.limits,
      ).toEqual({ cpu: "2", "devices.kubevirt.io/kvm": "1" });
      expect(launcherPod(vmi(), config).spec.containers[0]?.resources?.limits).toBeUndefined();
    },
  );

  it(
    "asks for KubeVirt's share of a CPU per vCPU (cpuAllocationRatio) when the VMI asks " +
      "for none, and the VMI's request when it does",
    () => {
      expect(compute.resources?.requests?.cpu).toBe("200m");
      expect(
        launcherPod(vmi(), { ...config, cpuAllocationRatio: 4 }).spec.containers[0]?.resources?.requests?.cpu,
      ).toBe("500m");
      expect(
        launcherPod(
          vmi((v) => (v.spec.domain.resources = { requests: { cpu: "1500m" } })),
          { ...config, cpuAllocationRatio: 4 },
        ).spec.containers[0]?.resources?.requests?.cpu,
      ).toBe("1500m");
    },
  );

  it(
    "asks for a share of the guest's memory under the cluster's memoryOvercommit, plus the " +
      "whole overhead, unless the VMI asks for its memory",
    () => {
      // 1 GiB at 200 %: 512 MiB + the 366 MiB overhead.
      expect(
        launcherPod(vmi(), { ...config, memoryOvercommit: 200 }).spec.containers[0]?.resources?.requests?.memory,
      ).toBe("878Mi");
      // A VMI that asks for its memory itself gets what it asks for.
      expect(
        launcherPod(
          vmi((v) => (v.spec.domain.resources = { requests: { memory: "1Gi" } })),
          { ...config, memoryOvercommit: 200 },
        ).spec.containers[0]?.resources?.requests?.memory,
      ).toBe("1390Mi");
    },
  );

  it(
    "runs in the cluster's defaultRuntimeClass, and tells the launcher its log level from " +
      "the VMI's logVerbosity label or the cluster's",
    () => {
      expect(spec.runtimeClassName).toBeUndefined();
      expect(launcherPod(vmi(), { ...config, runtimeClassName: "kata" }).spec.runtimeClassName).toBe("kata");
      expect(compute.env).toContainEqual({ name: "LOG_LEVEL", value: "info" });
      expect(launcherPod(vmi(), { ...config, launcherVerbosity: 6 }).spec.containers[0]?.env).toContainEqual({
        name: "LOG_LEVEL",
        value: "debug",
      });
      expect(
        launcherPod(
          vmi((v) => (v.metadata.labels = { logVerbosity: "3" })),
          { ...config, launcherVerbosity: 6 },
        ).spec.containers[0]?.env,
      ).toContainEqual({ name: "LOG_LEVEL", value: "info" });
    },
  );

  it(
    "asks for the guest's memory alone when the VMI overcommits its overhead, and " +
      "still allows for the overhead in a limit",
    () => {
      const overcommitted = (limit: boolean) =>
        launcherPod(
          vmi(
            (v) =>
              (v.spec.domain.resources = {
                overcommitGuestOverhead: true,
                ...(limit ? { limits: { memory: "1Gi" } } : {}),
              }),
          ),
          config,
        ).spec.containers[0]?.resources;
      expect(overcommitted(false)?.requests?.memory).toBe("1024Mi");
      expect(overcommitted(true)).toMatchObject({ requests: { memory: "1024Mi" }, limits: { memory: "1390Mi" } });
    },
  );

  it("runs as the unprivileged qemu user", () => {
    expect(spec.securityContext).toMatchObject({ runAsUser: 107, runAsGroup: 107, runAsNonRoot: true });
    expect(compute.securityContext).toMatchObject({
      allowPrivilegeEscalation: false,
      capabilities: { drop: ["ALL"], add: ["NET_BIND_SERVICE"] },
    });
  });

  it("passes scheduling constraints through", () => {
    const given = vmi((v) => {
      v.spec.nodeSelector = { "kubernetes.io/hostname": "node-1" };
      v.spec.tolerations = [{ key: "dedicated", operator: "Equal", value: "vms", effect: "NoSchedule" }];
      v.spec.affinity = { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: {} } };
    });
    expect(launcherPod(given, config).spec).toMatchObject({
      nodeSelector: { "kubernetes.io/hostname": "node-1", "kubevirt.io/schedulable": "true" },
      tolerations: [{ key: "dedicated", operator: "Equal", value: "vms", effect: "NoSchedule" }],
      affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: {} } },
    });
  });

  it("selects a node whose handler beats, and one whose labeller found the VMI's named CPU model (KubeVirt's)", () => {
    expect(launcherPod(vmi(), config).spec.nodeSelector).toEqual({ "kubevirt.io/schedulable": "true" });
    // A VMI's own selector cannot lift KubeVirt's: onto a node whose handler stopped beating, say.
    const lifting = vmi((v) => {
      v.spec.nodeSelector = { "kubevirt.io/schedulable": "false", zone: "a" };
    });
    expect(launcherPod(lifting, config).spec.nodeSelector).toEqual({ "kubevirt.io/schedulable": "true", zone: "a" });
    const named = vmi((v) => {
      v.spec.domain.cpu = { model: "Westmere" };
    });
    expect(launcherPod(named, config).spec.nodeSelector).toEqual({
      "kubevirt.io/schedulable": "true",
      "cpu-model.node.kubevirt.io/Westmere": "true",
    });
    const host = vmi((v) => {
      v.spec.domain.cpu = { model: "host-model" };
    });
    expect(launcherPod(host, config).spec.nodeSelector).toEqual({ "kubevirt.io/schedulable": "true" });
  });

  it("names the pod's host as the VMI asks, in its subdomain, and keeps a toleration's seconds", () => {
    const given = vmi((v) => {
      v.spec.hostname = "web";
      v.spec.subdomain = "frontends";
      v.spec.tolerations = [
        { key: "node.kubernetes.io/unreachable", operator: "Exists", effect: "NoExecute", tolerationSeconds: 30 },
      ];
    });
    expect(launcherPod(given, config).spec).toMatchObject({
      hostname: "web",
      subdomain: "frontends",
      tolerations: [{ tolerationSeconds: 30 }],
    });
  });

  it("passes priority, scheduler, DNS and topology spread through", () => {
    const spread = {
      maxSkew: 1,
      topologyKey: "kubernetes.io/hostname",
      whenUnsatisfiable: "ScheduleAnyway" as const,
      labelSelector: { matchLabels: { app: "web" } },
    };
    const byExpression = {
      maxSkew: 2,
      minDomains: 2,
      topologyKey: "topology.kubernetes.io/zone",
      whenUnsatisfiable: "DoNotSchedule" as const,
      labelSelector: { matchExpressions: [{ key: "tier", operator: "In" as const, values: ["db", "cache"] }] },
      matchLabelKeys: ["kubevirt.io/vm"],
    };
    const given = vmi((v) => {
      v.spec.priorityClassName = "vms-high";
      v.spec.schedulerName = "my-scheduler";
      v.spec.dnsPolicy = "None";
      v.spec.dnsConfig = {
        nameservers: ["198.18.0.53"],
        searches: ["example.test"],
        options: [{ name: "ndots", value: "2" }],
      };
      v.spec.topologySpreadConstraints = [spread, byExpression];
    });
    expect(launcherPod(given, config).spec).toMatchObject({
      priorityClassName: "vms-high",
      schedulerName: "my-scheduler",
      dnsPolicy: "None",
      dnsConfig: { nameservers: ["198.18.0.53"], searches: ["example.test"], options: [{ name: "ndots", value: "2" }] },
      topologySpreadConstraints: [spread, byExpression],
    });
  });

  it("gives the guest its grace period and the launcher some more", () => {
    expect(
      launcherPod(
        vmi((v) => (v.spec.terminationGracePeriodSeconds = 60)),
        config,
      ).spec.terminationGracePeriodSeconds,
    ).toBe(75);
    expect(spec.terminationGracePeriodSeconds).toBe(45);
  });

  it("tells the launcher whether emulation is allowed and how long the guest has to shut down", () => {
    expect(compute.env).toEqual(
      expect.arrayContaining([
        { name: "ALLOW_EMULATION", value: "true" },
        { name: "GRACE_PERIOD_SECONDS", value: "30" },
      ]),
    );
  });

  it("sets only the environment the launcher reads (the layout's), and serves the ops port it listens on", () => {
    expect(compute.env?.map((e) => e.name).sort()).toEqual(Object.values(LauncherEnv).sort());
    expect(compute.ports).toEqual([{ name: "ops", containerPort: 9102 }]);
    expect(compute.env).toContainEqual({ name: "OPS_PORT", value: "9102" });
  });

  it("carries the guest's declared ports, named, and lets the launcher answer DHCP on port 67 (a sysctl)", () => {
    const withPorts = launcherPod(
      vmi((v) => {
        v.spec.domain.devices.interfaces = [
          {
            name: "default",
            masquerade: {},
            ports: [
              { name: "ssh", port: 22 },
              { port: 5353, protocol: "UDP" },
            ],
          },
        ];
        v.spec.networks = [{ name: "default", pod: {} }];
      }),
      config,
    );
    expect(withPorts.spec.containers[0]?.ports).toEqual([
      { name: "ops", containerPort: 9102 },
      { name: "ssh", containerPort: 22, protocol: "TCP" },
      { containerPort: 5353, protocol: "UDP" },
    ]);
    expect(withPorts.spec.securityContext?.sysctls).toEqual([
      { name: "net.ipv4.ip_unprivileged_port_start", value: "0" },
    ]);
    // No pod network, no DHCP to answer.
    expect(spec.securityContext?.sysctls).toBeUndefined();
  });

  it(
    "makes the guest's way onto the pod network first, as root with NET_ADMIN alone, and gives both containers " +
      "the tun device",
    () => {
      const pod = launcherPod(
        vmi((v) => {
          v.spec.domain.devices.interfaces = [{ name: "default", masquerade: {}, ports: [{ port: 22 }] }];
          v.spec.networks = [{ name: "default", pod: { vmNetworkCIDR: "198.18.77.0/26" } }];
          v.spec.volumes = [{ name: "root", containerDisk: { image: "kubevirt-ts.local/guest:1" } }];
        }),
        config,
      );
      const [setup] = pod.spec.initContainers ?? [];
      expect(pod.spec.initContainers?.map((c) => c.name)).toEqual([
        "network-setup",
        "container-disk-binary",
        "volume-root",
        "guest-console-log",
      ]);
      expect(setup).toMatchObject({
        image: config.launcherImage,
        command: ["/bin/sh", "-c", expect.stringContaining("ip address add 198.18.77.1/26 dev k6t-eth0") as string],
        env: [
          {
            name: "KUBEVIRT_TS_NETWORK_RULES",
            value: expect.stringContaining('iifname "eth0" tcp dport { 22 } dnat to 198.18.77.2') as string,
          },
        ],
        securityContext: {
          runAsUser: 0,
          runAsNonRoot: false,
          allowPrivilegeEscalation: false,
          readOnlyRootFilesystem: true,
          capabilities: { drop: ["ALL"], add: ["NET_ADMIN"] },
        },
      });
      expect(setup?.resources?.limits?.["devices.kubevirt.io/tun"]).toBe("1");
      expect(pod.spec.containers[0]?.resources?.limits?.["devices.kubevirt.io/tun"]).toBe("1");
      expect(pod.spec.containers[0]?.env).toContainEqual({ name: "GUEST_NETWORK", value: "198.18.77.0/26" });
      expect(launcherPod(vmi(), config).spec.initContainers?.map((c) => c.name)).toEqual(["guest-console-log"]);
    },
  );

  it(
    "under the bridge binding, has network-setup note the pod's interface in the launcher's state folder, and " +
      "probes through the probe client, since the pod's address is the guest's",
    () => {
      const pod = launcherPod(
        vmi((v) => {
          v.spec.domain.devices.interfaces = [{ name: "default", bridge: {} }];
          v.spec.networks = [{ name: "default", pod: {} }];
          v.spec.readinessProbe = { tcpSocket: { port: 22 }, periodSeconds: 3 };
        }),
        config,
      );
      const [setup] = pod.spec.initContainers ?? [];
      expect(setup?.name).toBe("network-setup");
      expect(setup?.command?.[2]).toContain("ip link set eth0 master k6t-eth0 up");
      expect(setup?.env).toContainEqual({ name: "KUBEVIRT_TS_NETWORK_NOTES", value: "/var/run/kubevirt-ts/launcher" });
      expect(setup?.volumeMounts).toEqual([{ name: "launcher-state", mountPath: "/var/run/kubevirt-ts/launcher" }]);
      expect(pod.spec.containers[0]?.readinessProbe).toEqual({
        exec: { command: ["/usr/local/bin/kubevirt-ts-probe", "9102", "/probes/readiness"] },
        initialDelaySeconds: 0,
        periodSeconds: 3,
        timeoutSeconds: 2,
        successThreshold: 1,
        failureThreshold: 3,
      });
      expect(pod.spec.securityContext?.sysctls).toEqual([{ name: "net.ipv4.ip_unprivileged_port_start", value: "0" }]);
    },
  );

  it("has no probe unless the VMI asks for one: handed over once the launcher runs, ready while it runs", () => {
    // Handed over once it runs (the handler waits for its socket), and ready while it runs, as KubeVirt's launcher.
    expect(compute.startupProbe).toBeUndefined();
    expect(compute.readinessProbe).toBeUndefined();
    expect(compute.livenessProbe).toBeUndefined();
  });

  it(
    "runs the VMI's probes through the launcher, on the VMI's schedule, with a " +
      "second more for the launcher's answer",
    () => {
      const probed = launcherPod(
        vmi((v) => {
          v.spec.readinessProbe = {
            exec: { command: ["true"] },
            initialDelaySeconds: 5,
            periodSeconds: 3,
            timeoutSeconds: 4,
            successThreshold: 2,
            failureThreshold: 6,
          };
          v.spec.livenessProbe = { guestAgentPing: {}, initialDelaySeconds: 120, failureThreshold: 10 };
        }),
        config,
      ).spec.containers[0];
      expect(probed?.readinessProbe).toEqual({
        httpGet: { path: "/probes/readiness", port: "ops" },
        initialDelaySeconds: 5,
        periodSeconds: 3,
        timeoutSeconds: 5,
        successThreshold: 2,
        failureThreshold: 6,
      });
      // Kubernetes' defaults where the VMI sets none.
      expect(probed?.livenessProbe).toEqual({
        httpGet: { path: "/probes/liveness", port: "ops" },
        initialDelaySeconds: 120,
        periodSeconds: 10,
        timeoutSeconds: 2,
        successThreshold: 1,
        failureThreshold: 10,
      });
    },
  );

  it("mounts the sockets folder the handler reaches", () => {
    expect(compute.volumeMounts).toEqual([
      { name: "sockets", mountPath: "/var/run/kubevirt-ts/sockets" },
      { name: "launcher-state", mountPath: "/var/run/kubevirt-ts/launcher" },
    ]);
  });
});

describe("launcherDeletionGrace", () => {
  const made = launcherPod(
    vmi((v) => (v.spec.terminationGracePeriodSeconds = 30)),
    config,
  );
  const now = (seconds?: number) => vmi((v) => (v.spec.terminationGracePeriodSeconds = seconds));

  it("leaves the pod its own grace period while the VMI's is what the pod was made with, or longer", () => {
    expect(made.spec.terminationGracePeriodSeconds).toBe(45);
    expect(launcherDeletionGrace(now(30), made)).toBeUndefined();
    expect(launcherDeletionGrace(now(60), made)).toBeUndefined();
    expect(launcherDeletionGrace(now(undefined), made)).toBeUndefined();
  });

  it("deletes the pod within a grace period shortened since (a forced stop), never with 0", () => {
    expect(launcherDeletionGrace(now(5), made)).toBe(5);
    expect(launcherDeletionGrace(now(1), made)).toBe(1);
    expect(launcherDeletionGrace(now(0), made)).toBe(1);
  });

  it(
    "hurries a pod already being deleted with its own period when the VMI's is " +
      "shortened (a forced stop after a stop), once",
    () => {
      const going = {
        ...made,
        metadata: { ...made.metadata, deletionTimestamp: "2026-01-01T00:00:00Z", deletionGracePeriodSeconds: 45 },
      };
      expect(launcherDeletionGrace(now(30), going)).toBeUndefined();
      expect(launcherDeletionGrace(now(0), going)).toBe(1);
      const hurried = { ...going, metadata: { ...going.metadata, deletionGracePeriodSeconds: 1 } };
      expect(launcherDeletionGrace(now(0), hurried)).toBeUndefined();
    },
  );
});

/** The pod's init containers that run to completion (not its sidecars). */
const copies = (spec: PodSpec) => (spec.initContainers ?? []).filter((c) => c.restartPolicy !== "Always");

describe("the guest-console-log sidecar, as KubeVirt's container of that name", () => {
  it(
    "prints the serial log from its start, following rotation, read-only, after the " +
      "disks are copied and before the launcher",
    () => {
      const { spec } = launcherPod(
        vmi((v) => (v.spec.volumes = [{ name: "root", containerDisk: { image: "kubevirt-ts.local/guest:1" } }])),
        config,
      );
      expect(spec.initContainers?.map((c) => c.name)).toEqual([
        "container-disk-binary",
        "volume-root",
        "guest-console-log",
      ]);
      const sidecar = spec.initContainers?.at(-1);
      expect(sidecar).toMatchObject({
        image: config.launcherImage,
        restartPolicy: "Always",
        // tini as PID 1 passes SIGTERM to tail, which as PID 1 would ignore it.
        command: [
          "/usr/bin/tini",
          "--",
          "/bin/sh",
          "-c",
          "until [ -e /var/run/kubevirt-ts/sockets/serial0.log ]; do sleep 1; done; exec tail -n +1 -F " +
            "/var/run/kubevirt-ts/sockets/serial0.log 2>/dev/null",
        ],
        resources: { requests: { cpu: "5m", memory: "35M" }, limits: { cpu: "15m", memory: "60M" } },
        securityContext: {
          allowPrivilegeEscalation: false,
          runAsNonRoot: true,
          readOnlyRootFilesystem: true,
          capabilities: { drop: ["ALL"] },
        },
        volumeMounts: [{ name: "sockets", mountPath: "/var/run/kubevirt-ts/sockets", readOnly: true }],
      });
    },
  );

  it("is left out when the VMI keeps no serial log, or has no serial console", () => {
    expect(
      launcherPod(
        vmi((v) => (v.spec.domain.devices.logSerialConsole = false)),
        config,
      ).spec.initContainers,
    ).toBeUndefined();
    expect(
      launcherPod(
        vmi((v) => (v.spec.domain.devices.autoattachSerialConsole = false)),
        config,
      ).spec.initContainers,
    ).toBeUndefined();
    expect(launcherPod(vmi(), config).spec.initContainers?.map((c) => c.name)).toEqual(["guest-console-log"]);
  });
});

describe("containerDisks", () => {
  const withDisks = vmi((v) => {
    v.spec.volumes = [
      { name: "root", containerDisk: { image: "kubevirt-ts.local/guest:1" } },
      { name: "data", containerDisk: { image: "registry.example/disk", path: "/disk/data.qcow2" } },
      { name: "cloudinit", cloudInitNoCloud: { userData: "#cloud-config" } },
    ];
  });
  const { spec } = launcherPod(withDisks, config);

  it("are copied by init containers running each image, with the launcher's static copier", () => {
    expect(copies(spec).map((c) => [c.name, c.image, c.command])).toEqual([
      [
        "container-disk-binary",
        "kubevirt-ts.local/virt-launcher:abc",
        ["cp", "/usr/local/bin/kubevirt-ts-disk-copy", "/var/run/kubevirt-ts/tools/kubevirt-ts-disk-copy"],
      ],
      [
        "volume-root",
        "kubevirt-ts.local/guest:1",
        ["/var/run/kubevirt-ts/tools/kubevirt-ts-disk-copy", "/disk", "/var/run/kubevirt-ts/container-disks/root"],
      ],
      [
        "volume-data",
        "registry.example/disk",
        [
          "/var/run/kubevirt-ts/tools/kubevirt-ts-disk-copy",
          "/disk/data.qcow2",
          "/var/run/kubevirt-ts/container-disks/data",
        ],
      ],
    ]);
  });

  it("are read-only to the launcher", () => {
    expect(spec.containers[0]?.volumeMounts).toContainEqual({
      name: "container-disks",
      mountPath: "/var/run/kubevirt-ts/container-disks",
      readOnly: true,
    });
  });

  it("copies a kernel boot's kernel and initrd out of their image the same way", () => {
    const kernelBoot = launcherPod(
      vmi(
        (v) =>
          (v.spec.domain.firmware = {
            kernelBoot: {
              container: {
                image: "kubevirt-ts.local/tiny-guest:1",
                kernelPath: "/boot/vmlinuz",
                initrdPath: "/boot/initrd.gz",
              },
            },
          }),
      ),
      config,
    ).spec;
    expect(copies(kernelBoot).map((c) => [c.name, c.command?.slice(1)])).toEqual([
      [
        "container-disk-binary",
        ["/usr/local/bin/kubevirt-ts-disk-copy", "/var/run/kubevirt-ts/tools/kubevirt-ts-disk-copy"],
      ],
      ["kernel-boot-0", ["/boot/vmlinuz", "/var/run/kubevirt-ts/kernel-boot"]],
      ["kernel-boot-1", ["/boot/initrd.gz", "/var/run/kubevirt-ts/kernel-boot"]],
    ]);
  });

  it("mounts the VM's backend-storage claim when it keeps EFI variables or TPM state, and not otherwise", () => {
    const persistent = launcherPod(
      vmi((v) => (v.spec.domain.devices.tpm = { persistent: true })),
      config,
    ).spec;
    expect(persistent.volumes).toContainEqual({
      name: "vm-state",
      persistentVolumeClaim: { claimName: "persistent-state-for-testvm" },
    });
    expect(persistent.containers[0]?.volumeMounts).toContainEqual({
      name: "vm-state",
      mountPath: "/var/run/kubevirt-ts/vm-state",
    });
    const efi = launcherPod(
      vmi((v) => (v.spec.domain.firmware = { bootloader: { efi: { persistent: true } } })),
      config,
    ).spec;
    expect(efi.volumes?.map((v) => v.name)).toContain("vm-state");
    const transient = launcherPod(
      vmi((v) => (v.spec.domain.devices.tpm = {})),
      config,
    ).spec;
    expect(transient.volumes?.map((v) => v.name)).not.toContain("vm-state");
  });

  it("pull each disk and kernel image with the pull policy its volume names", () => {
    const named = launcherPod(
      vmi((v) => {
        v.spec.volumes = [
          { name: "root", containerDisk: { image: "kubevirt-ts.local/guest:1", imagePullPolicy: "Always" } },
        ];
        v.spec.domain.firmware = {
          kernelBoot: {
            container: { image: "registry:5000/kernel", kernelPath: "/boot/vmlinuz", imagePullPolicy: "Never" },
          },
        };
      }),
      config,
    ).spec;
    expect(copies(named).map((c) => [c.name, c.imagePullPolicy])).toEqual([
      ["container-disk-binary", config.imagePullPolicy],
      ["volume-root", "Always"],
      ["kernel-boot-0", "Never"],
    ]);
  });

  it.each([
    ["kubevirt-ts.local/guest:1", "IfNotPresent"],
    ["quay.io/containerdisks/fedora:latest", "Always"],
    ["quay.io/containerdisks/fedora", "Always"],
    ["registry:5000/disk", "Always"],
    ["registry:5000/disk:v2", "IfNotPresent"],
    ["quay.io/disk@sha256:abcd", "IfNotPresent"],
  ])("pull %s with %s unless the volume says otherwise", (image, policy) => {
    expect(defaultPullPolicy(image)).toBe(policy);
  });
});

describe("cloud-init Secrets", () => {
  const withSecrets = launcherPod(
    vmi((v) => {
      v.spec.volumes = [
        { name: "root", containerDisk: { image: "kubevirt-ts.local/guest:1" } },
        {
          name: "cloudinitdisk",
          cloudInitNoCloud: { secretRef: { name: "testvm-user" }, networkDataSecretRef: { name: "testvm-net" } },
        },
      ];
    }),
    config,
  ).spec;

  it("reach the launcher as Secret volumes of the pod, read-only and readable by its group alone", () => {
    expect(withSecrets.volumes).toContainEqual({
      name: "cloud-init-1-userdata",
      secret: { secretName: "testvm-user", defaultMode: 0o440 },
    });
    expect(withSecrets.volumes).toContainEqual({
      name: "cloud-init-1-networkdata",
      secret: { secretName: "testvm-net", defaultMode: 0o440 },
    });
    expect(withSecrets.containers[0]?.volumeMounts).toContainEqual({
      name: "cloud-init-1-userdata",
      mountPath: "/var/run/kubevirt-ts/cloud-init-secrets/cloudinitdisk/userdata",
      readOnly: true,
    });
    expect(withSecrets.containers[0]?.volumeMounts).toContainEqual({
      name: "cloud-init-1-networkdata",
      mountPath: "/var/run/kubevirt-ts/cloud-init-secrets/cloudinitdisk/networkdata",
      readOnly: true,
    });
  });

  it("are only in the pod of a VMI that references them", () => {
    expect(launcherPod(vmi(), config).spec.volumes?.filter((v) => v.secret)).toEqual([]);
  });

  it("mounts the Secret of an access credential's SSH keys for the launcher's group alone", () => {
    const withKeys = launcherPod(
      vmi((v) => {
        v.spec.volumes = [{ name: "cloudinit", cloudInitNoCloud: { userData: "#cloud-config\n" } }];
        v.spec.accessCredentials = [
          { sshPublicKey: { source: { secret: { secretName: "my-keys" } }, propagationMethod: { noCloud: {} } } },
        ];
      }),
      config,
    ).spec;
    expect(withKeys.volumes).toContainEqual({
      name: "access-credential-0",
      secret: { secretName: "my-keys", defaultMode: 0o440 },
    });
    expect(withKeys.containers[0]?.volumeMounts).toContainEqual({
      name: "access-credential-0",
      mountPath: "/var/run/kubevirt-ts/access-credentials/0",
      readOnly: true,
    });
  });

  it("mounts a config drive's Secret as a NoCloud volume's", () => {
    const drive = launcherPod(
      vmi((v) => {
        v.spec.volumes = [
          {
            name: "drive",
            cloudInitConfigDrive: { secretRef: { name: "vm-user" }, networkDataSecretRef: { name: "vm-net" } },
          },
        ];
      }),
      config,
    ).spec;
    expect(drive.volumes).toContainEqual({
      name: "cloud-init-0-userdata",
      secret: { secretName: "vm-user", defaultMode: 0o440 },
    });
    expect(drive.volumes).toContainEqual({
      name: "cloud-init-0-networkdata",
      secret: { secretName: "vm-net", defaultMode: 0o440 },
    });
  });
});

describe("configMap, secret, serviceAccount and downwardAPI volumes", () => {
  const pod = launcherPod(
    vmi((v) => {
      v.spec.volumes = [
        { name: "app-config", configMap: { name: "app", optional: false, volumeLabel: "app-config" } },
        { name: "creds", secret: { secretName: "db", optional: true } },
        { name: "sa", serviceAccount: { serviceAccountName: "reporter" } },
        {
          name: "meta",
          downwardAPI: {
            fields: [
              { path: "labels", fieldRef: { fieldPath: "metadata.labels" } },
              { path: "mem", resourceFieldRef: { resource: "requests.memory", divisor: "1Mi" }, mode: 0o400 },
            ],
          },
        },
      ];
    }),
    config,
  );

  it(
    "are the same kinds of pod volume, mounted read-only where the launcher makes " +
      "their disks, the Secret for its group alone",
    () => {
      expect(pod.spec.volumes).toEqual(
        expect.arrayContaining([
          { name: "config-0-configmap", configMap: { name: "app", optional: false } },
          { name: "config-1-secret", secret: { secretName: "db", defaultMode: 0o440, optional: true } },
          {
            name: "config-3-downwardapi",
            downwardAPI: {
              items: [
                { path: "labels", fieldRef: { apiVersion: "v1", fieldPath: "metadata.labels" } },
                {
                  path: "mem",
                  resourceFieldRef: { containerName: "compute", resource: "requests.memory", divisor: "1Mi" },
                  mode: 0o400,
                },
              ],
            },
          },
        ]),
      );
      expect(pod.spec.containers[0]?.volumeMounts).toEqual(
        expect.arrayContaining([
          { name: "config-0-configmap", mountPath: "/var/run/kubevirt-ts/config-volumes/app-config", readOnly: true },
          { name: "config-1-secret", mountPath: "/var/run/kubevirt-ts/config-volumes/creds", readOnly: true },
          { name: "config-2-serviceaccount", mountPath: "/var/run/kubevirt-ts/config-volumes/sa", readOnly: true },
          { name: "config-3-downwardapi", mountPath: "/var/run/kubevirt-ts/config-volumes/meta", readOnly: true },
        ]),
      );
    },
  );

  it(
    "run the launcher pod as the ServiceAccount named, whose token, CA and " + "namespace go to the guest's disk alone",
    () => {
      expect(pod.spec.serviceAccountName).toBe("reporter");
      expect(pod.spec.automountServiceAccountToken).toBe(false);
      const projected = pod.spec.volumes?.find((v) => v.name === "config-2-serviceaccount")?.projected;
      expect(projected?.sources?.map((s) => Object.keys(s)[0])).toEqual([
        "serviceAccountToken",
        "configMap",
        "downwardAPI",
      ]);
      expect(launcherPod(vmi(), config).spec.serviceAccountName).toBeUndefined();
    },
  );
});

describe("claims", () => {
  const claim = (name: string, volumeMode: string) => ({
    metadata: { name },
    spec: { volumeMode, accessModes: ["ReadWriteOnce"] },
    status: { phase: "Bound" },
  });
  const pod = launcherPod(
    vmi((v) => {
      v.spec.volumes = [
        { name: "root", persistentVolumeClaim: { claimName: "root-disk" } },
        { name: "iso", persistentVolumeClaim: { claimName: "installer", readOnly: true } },
        { name: "raw", persistentVolumeClaim: { claimName: "fast" } },
        { name: "scratch", ephemeral: { persistentVolumeClaim: { claimName: "golden" } } },
      ];
    }),
    config,
    new Map([
      ["root-disk", claim("root-disk", "Filesystem")],
      ["installer", claim("installer", "Filesystem")],
      ["fast", claim("fast", "Block")],
      ["golden", claim("golden", "Filesystem")],
    ]),
  );

  it("are pod volumes of the same claims, read-only when the volume asks", () => {
    expect(pod.spec.volumes).toEqual(
      expect.arrayContaining([
        { name: "claim-0", persistentVolumeClaim: { claimName: "root-disk" } },
        { name: "claim-1", persistentVolumeClaim: { claimName: "installer", readOnly: true } },
        { name: "claim-2", persistentVolumeClaim: { claimName: "fast" } },
      ]),
    );
  });

  it("mounts an ephemeral volume's claim read-only: the launcher writes to an overlay over it", () => {
    expect(pod.spec.volumes).toEqual(
      expect.arrayContaining([{ name: "claim-3", persistentVolumeClaim: { claimName: "golden", readOnly: true } }]),
    );
    expect(pod.spec.containers[0]?.volumeMounts).toEqual(
      expect.arrayContaining([
        { name: "claim-3", mountPath: "/var/run/kubevirt-ts/vmi-disks/scratch", readOnly: true },
      ]),
    );
  });

  it("mount a Filesystem-mode claim at its volume's folder, and give a Block-mode claim as a device", () => {
    const [compute] = pod.spec.containers;
    expect(compute?.volumeMounts).toEqual(
      expect.arrayContaining([
        { name: "claim-0", mountPath: "/var/run/kubevirt-ts/vmi-disks/root" },
        { name: "claim-1", mountPath: "/var/run/kubevirt-ts/vmi-disks/iso", readOnly: true },
      ]),
    );
    expect(compute?.volumeMounts?.some((m) => m.name === "claim-2")).toBe(false);
    expect(compute?.volumeDevices).toEqual([{ name: "claim-2", devicePath: "/dev/vmi-disks/raw" }]);
  });

  it("are absent from the pod of a VMI without them", () => {
    expect(launcherPod(vmi(), config).spec.containers[0]?.volumeDevices).toBeUndefined();
  });
});

describe("secretsWaitMessage", () => {
  const launcher = (
    status: NonNullable<Pod["status"]>,
    volumes: NonNullable<Pod["spec"]>["volumes"] = [
      { name: "cloud-init-1-userdata", secret: { secretName: "testvm-user" } },
    ],
  ): Pod => ({
    apiVersion: "v1",
    kind: "Pod",
    metadata: { name: "virt-launcher-testvm-abcde", namespace: "ns" },
    spec: { nodeName: "node-1", containers: [], volumes },
    status,
  });
  const started = { ready: false, image: "", imageID: "", restartCount: 0, state: {} };
  const waiting = { ...started, name: "compute", state: { waiting: { reason: "ContainerCreating" } } };

  it("names the Secrets a pod that started nothing waits for, and where to see why", () => {
    expect(secretsWaitMessage(launcher({ phase: "Pending", containerStatuses: [waiting] }))).toBe(
      "The launcher pod virt-launcher-testvm-abcde has not started yet; it mounts the cloud-init Secret " +
        "testvm-user, which must exist in namespace ns. If it stays so, create it; kubectl describe pod " +
        "virt-launcher-testvm-abcde -n ns shows the kubelet's reason.",
    );
  });

  it("says nothing once a container runs, or for a pod without Secrets", () => {
    expect(
      secretsWaitMessage(
        launcher({
          phase: "Pending",
          initContainerStatuses: [{ ...started, name: "volume-root" }],
          containerStatuses: [waiting],
        }),
      ),
    ).toBeUndefined();
    expect(
      secretsWaitMessage(launcher({ phase: "Running", containerStatuses: [{ ...waiting, state: {} }] })),
    ).toBeUndefined();
    expect(
      secretsWaitMessage(
        launcher({ phase: "Pending", containerStatuses: [waiting] }, [{ name: "sockets", emptyDir: {} }]),
      ),
    ).toBeUndefined();
  });
});
