import { describe, expect, it } from "vitest";
import {
  LiveClusterConfig,
  clusterConfig,
  defaultClusterConfig,
  featureGateWarnings,
  followLogVerbosity,
  launcherCpuRequest,
  overcommittedGuestBytes,
} from "./cluster-config.ts";
import type { KubeVirt } from "./schema/kubevirt.ts";

const kv = (
  configuration: KubeVirt["spec"]["configuration"],
  rest: Partial<KubeVirt["spec"]> = {},
): Pick<KubeVirt, "spec"> => ({ spec: { configuration, ...rest } });

describe("the cluster configuration", () => {
  const base = defaultClusterConfig({
    useEmulation: true,
    evictionStrategy: "LiveMigrate",
    vmStateStorageClass: "fast",
  });

  it("is the chart's values where there is no CR, or the CR names nothing", () => {
    expect(clusterConfig(base, undefined)).toEqual(base);
    expect(clusterConfig(base, kv({}))).toEqual(base);
  });

  it("takes each field the CR sets over the chart's value, and only those", () => {
    const config = clusterConfig(
      base,
      kv(
        {
          developerConfiguration: { useEmulation: false, cpuAllocationRatio: 20, logVerbosity: { virtHandler: 5 } },
          migrations: { parallelMigrationsPerCluster: 1 },
          architectureConfiguration: { amd64: { machineType: "pc-q35-8.2" } },
          machineType: "ignored-for-the-architecture's",
          cpuModel: "Haswell",
        },
        { imagePullPolicy: "Always" },
      ),
    );
    expect(config).toMatchObject({
      useEmulation: false,
      cpuAllocationRatio: 20,
      memoryOvercommit: 100,
      evictionStrategy: "LiveMigrate",
      vmStateStorageClass: "fast",
      logVerbosity: { virtHandler: 5 },
      machineType: "pc-q35-8.2",
      cpuModel: "Haswell",
      imagePullPolicy: "Always",
    });
    expect(config.migrations).toEqual({ ...base.migrations, parallelMigrationsPerCluster: 1 });
  });

  it("prefers configuration.imagePullPolicy to the operator's spec.imagePullPolicy", () => {
    expect(clusterConfig(base, kv({ imagePullPolicy: "Never" }, { imagePullPolicy: "Always" })).imagePullPolicy).toBe(
      "Never",
    );
  });

  it(
    "tells listeners of a change that makes a difference, once, and goes back to " +
      "the chart's values when the CR goes",
    () => {
      const live = new LiveClusterConfig(base);
      const seen: number[] = [];
      live.onChange((c) => seen.push(c.cpuAllocationRatio));
      live.observe(kv({ developerConfiguration: { cpuAllocationRatio: 4 } }));
      live.observe(kv({ developerConfiguration: { cpuAllocationRatio: 4 } }));
      live.informerHandler().delete();
      expect(seen).toEqual([4, 10]);
      expect(live.get()).toEqual(base);
    },
  );

  it("sets a component's log level from its verbosity, and back to its own level when it is unset", () => {
    const live = new LiveClusterConfig(base);
    const levels: string[] = [];
    followLogVerbosity(live, "virtController", { setLevel: (l) => levels.push(l), info: () => undefined }, "warn");
    live.observe(kv({ developerConfiguration: { logVerbosity: { virtController: 5 } } }));
    live.observe(kv({ developerConfiguration: { logVerbosity: { virtController: 5, virtAPI: 1 } } }));
    live.observe(kv({ developerConfiguration: { logVerbosity: { virtController: 2 } } }));
    live.observe(kv({}));
    expect(levels).toEqual(["warn", "debug", "info", "warn"]);
  });
});

describe("KubeVirt's resource rules", () => {
  it("requests vCPUs / cpuAllocationRatio of a CPU, at least 1m", () => {
    expect(launcherCpuRequest(1, 10)).toBe("100m");
    expect(launcherCpuRequest(4, 10)).toBe("400m");
    expect(launcherCpuRequest(1, 100)).toBe("10m");
    expect(launcherCpuRequest(1, 1000)).toBe("1m");
    expect(launcherCpuRequest(2, 2)).toBe("1");
  });

  it("requests the guest's memory scaled by memoryOvercommit", () => {
    expect(overcommittedGuestBytes(1024, 100)).toBe(1024);
    expect(overcommittedGuestBytes(1500, 150)).toBe(1000);
  });
});

describe("feature gates", () => {
  it("warns of each gate kubevirt-ts ignores, with why and where", () => {
    expect(featureGateWarnings(["Snapshot", "VMExport", "Snapshott"])).toEqual([
      "spec.configuration.developerConfiguration.featureGates[0] (Snapshot): kubevirt-ts " +
        "has this feature always on; the gate changes nothing",
      "spec.configuration.developerConfiguration.featureGates[1] (VMExport): kubevirt-ts does " +
        "not have this feature yet; the gate is ignored",
      "spec.configuration.developerConfiguration.featureGates[2] (Snapshott): not a KubeVirt feature " +
        "gate kubevirt-ts knows; it is ignored (check its spelling)",
    ]);
  });
});
