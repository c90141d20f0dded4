import { describe, expect, it } from "vitest";
import { UPLOAD_TOKEN_TTL_MS, UploadTokens } from "./token.ts";

const tokens = UploadTokens.fromServingKey(
  Buffer.from("-----BEGIN PRIVATE KEY-----\nreplica key\n-----END PRIVATE KEY-----\n"),
);
const target = { namespace: "team-a", pvcName: "debian-12" };

describe("upload tokens", () => {
  it("name their claim to any replica with the same serving key, for five minutes", () => {
    const now = Date.parse("2026-11-24T10:00:00Z");
    const token = tokens.sign(target, now);
    const otherReplica = UploadTokens.fromServingKey(
      Buffer.from("-----BEGIN PRIVATE KEY-----\nreplica key\n-----END PRIVATE KEY-----\n"),
    );
    expect(otherReplica.verify(token, now + 1000)).toEqual(target);
    expect(tokens.verify(token, now + UPLOAD_TOKEN_TTL_MS + 1)).toEqual({
      refused: expect.stringMatching(/has expired/) as string,
    });
  });

  it("are refused when changed, made with another key, or malformed", () => {
    const token = tokens.sign(target);
    const [body, signature] = token.split(".");
    const forged = Buffer.from(
      JSON.stringify({ namespace: "team-b", pvcName: "debian-12", exp: Date.now() + 60_000 }),
    ).toString("base64url");
    expect(tokens.verify(`${forged}.${signature ?? ""}`)).toEqual({
      refused: expect.stringMatching(/not made by this cluster/) as string,
    });
    expect(UploadTokens.fromServingKey(Buffer.from("another key")).verify(token)).toEqual({
      refused: expect.stringMatching(/not made by this cluster/) as string,
    });
    expect(tokens.verify(body ?? "")).toEqual({ refused: expect.stringMatching(/malformed/) as string });
    expect(() => UploadTokens.fromServingKey(Buffer.alloc(0))).toThrow(/empty/);
  });
});
