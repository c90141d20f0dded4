import { describe, expect, it } from "vitest";
import { configVolumes, launcherServiceAccount } from "./config-volumes.ts";

describe("configVolumes", () => {
  const spec = {
    volumes: [
      { name: "root", containerDisk: { image: "example/disk:1" } },
      { name: "app", configMap: { name: "app", volumeLabel: "cfg" } },
      { name: "creds", secret: { secretName: "db", volumeLabel: "secrets" } },
      { name: "sa", serviceAccount: { serviceAccountName: "reporter" } },
      { name: "meta", downwardAPI: { volumeLabel: "meta", fields: [] } },
    ],
  };

  it("labels each disk with its volume's label, and names a pod volume for each, in order", () => {
    expect(configVolumes(spec)).toEqual([
      { volume: "app", kind: "configMap", podVolume: "config-1-configmap", relativeDir: "app", label: "cfg" },
      { volume: "creds", kind: "secret", podVolume: "config-2-secret", relativeDir: "creds", label: "secrets" },
      {
        volume: "sa",
        kind: "serviceAccount",
        podVolume: "config-3-serviceaccount",
        relativeDir: "sa",
        label: undefined,
      },
      { volume: "meta", kind: "downwardAPI", podVolume: "config-4-downwardapi", relativeDir: "meta", label: "meta" },
    ]);
  });

  it("names the ServiceAccount the launcher pod runs as, if a volume names one", () => {
    expect(launcherServiceAccount(spec)).toBe("reporter");
    expect(launcherServiceAccount({ volumes: [] })).toBeUndefined();
  });
});
