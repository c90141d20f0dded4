import { describe, expect, it } from "vitest";
import { cdiConfigStatus } from "./cdi-config.ts";

describe("cdiConfigStatus", () => {
  it("reports the override when set, as CDI does, else the dashboard's address, else none", () => {
    const url = "https://198.18.255.1:30080";
    expect(cdiConfigStatus({ spec: { uploadProxyURLOverride: "https://uploads.example.com" } }, url)).toEqual({
      uploadProxyURL: "https://uploads.example.com",
    });
    expect(cdiConfigStatus({ spec: {} }, url)).toEqual({ uploadProxyURL: url });
    expect(cdiConfigStatus({ spec: {} }, undefined)).toEqual({});
  });
});
