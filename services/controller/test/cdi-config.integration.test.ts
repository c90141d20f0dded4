import { ControllerManager, isNotFound } from "@kubevirt-ts/kube";
import { type CdiConfig, kubevirtResources } from "@kubevirt-ts/kubevirt-api";
import { test } from "@kubevirt-ts/control-plane/testing";
import { createLogger } from "@kubevirt-ts/runtime";
import { Registry } from "prom-client";
import { describe, expect } from "vitest";
import { registerCdiConfig } from "../src/datavolume/cdi-config.ts";
import { testClient } from "./harness.ts";

// CDIConfig on the real API server, with the chart's CRD (files/crds): the controller makes the one named config and
// keeps its status.uploadProxyURL at the dashboard's address, or at spec.uploadProxyURLOverride when an admin sets one
// (what virtctl image-upload reads when not given --uploadproxy-url).

const poll = { timeout: 20_000, interval: 200 };
const DASHBOARD = "https://198.18.255.1:30080";

describe("CDIConfig, where kubevirt-ts serves DataVolumes", () => {
  test("is made as config, reports the dashboard's address or the override, and comes back when deleted", async () => {
    const client = await testClient();
    const config = () => client.find<CdiConfig>(kubevirtResources.cdiConfigs, undefined, "config");
    const remove = async () => {
      await client.delete(kubevirtResources.cdiConfigs, undefined, "config").catch((error: unknown) => {
        if (!isNotFound(error)) throw error;
      });
      await expect.poll(config, poll).toBeUndefined();
    };
    await remove();
    const manager = new ControllerManager({
      log: createLogger({ component: "cdi-config-test", level: "warn" }),
      registry: new Registry(),
    });
    registerCdiConfig(manager, { client, uploadProxyUrl: DASHBOARD });
    const abort = new AbortController();
    const running = manager.run(abort.signal);
    try {
      await expect.poll(async () => (await config())?.status, poll).toEqual({ uploadProxyURL: DASHBOARD });
      expect((await config())?.spec).toEqual({});

      await client.patch(
        kubevirtResources.cdiConfigs,
        undefined,
        "config",
        { spec: { uploadProxyURLOverride: "https://uploads.example.com" } },
        "merge",
      );
      await expect.poll(async () => (await config())?.status?.uploadProxyURL, poll).toBe("https://uploads.example.com");
      await client.patch(
        kubevirtResources.cdiConfigs,
        undefined,
        "config",
        { spec: { uploadProxyURLOverride: null } },
        "merge",
      );
      await expect.poll(async () => (await config())?.status?.uploadProxyURL, poll).toBe(DASHBOARD);

      const before = (await config())?.metadata.uid;
      await client.delete(kubevirtResources.cdiConfigs, undefined, "config");
      await expect
        .poll(async () => {
          const now = await config();
          return now?.metadata.uid !== before && now?.status?.uploadProxyURL === DASHBOARD;
        }, poll)
        .toBe(true);
    } finally {
      abort.abort();
      await running;
      await remove();
    }
  });
});
