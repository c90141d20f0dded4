import { KubeConfig } from "@kubernetes/client-node";
import { test } from "@kubevirt-ts/control-plane/testing";
import { describe, expect } from "vitest";
import { kubevirtApiCheck } from "../src/index.ts";

describe("kubevirtApiCheck", () => {
  test("passes against an API server that serves the CRDs", async ({ kubeConfig }) => {
    expect(await kubevirtApiCheck(kubeConfig)()).toBeUndefined();
  });

  test("says what it cannot reach", async () => {
    const unreachable = new KubeConfig();
    unreachable.loadFromClusterAndUser({ name: "nowhere", server: "https://127.0.0.1:1", skipTLSVerify: true }, { name: "nobody" });
    expect(await kubevirtApiCheck(unreachable)()).toMatch(/^cannot list virtualmachineinstances.kubevirt.io at https:\/\/127.0.0.1:1: /);
  });
});
