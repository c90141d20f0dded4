import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { deriveUploadKey, readUploadMasterKey } from "./upload-key.ts";

// The vectors were computed apart from this code, with OpenSSL:
//   printf 'upload/<uid>' | openssl dgst -sha256 -hmac '<master>' -binary | base64 | tr '+/' '-_' | tr -d '='
//   (-mac HMAC -macopt hexkey:<hex> for the binary master)

describe("deriveUploadKey", () => {
  it("is HMAC-SHA256(master, upload/<uid>) in base64url, for a text master", () => {
    expect(
      deriveUploadKey(Buffer.from("0123456789abcdef0123456789abcdef"), "0b7d5f1e-8a43-4c55-9e0a-2c8f4d7e1a10"),
    ).toBe("dwXEzJqPS13gN5Qo2rzwVfiPgnaVSpll5_7YGnxfpcA");
  });

  it("is HMAC-SHA256(master, upload/<uid>) in base64url, for a binary master", () => {
    const master = Buffer.from("00ff10ef20df30cf40bf50af609f708f807f906fa05fb04fc03fd02fe01ff00f", "hex");
    expect(deriveUploadKey(master, "6f1c2a9e-0d3b-4e7a-9c51-7b2e8f4a3d60")).toBe(
      "xEhCczkMehnzXPXfQJ53P4zfGTf8mBmUcADv3zuEaKg",
    );
  });

  it("differs per DataVolume and per master", () => {
    const master = Buffer.alloc(32, 7);
    const a = deriveUploadKey(master, "uid-a");
    expect(deriveUploadKey(master, "uid-b")).not.toBe(a);
    expect(deriveUploadKey(Buffer.alloc(32, 8), "uid-a")).not.toBe(a);
  });

  it("refuses a short master and a DataVolume without a uid, saying what to do", () => {
    expect(() => deriveUploadKey(Buffer.alloc(31), "uid")).toThrow(
      /31 bytes, fewer than 32: give it at least 32 random bytes/,
    );
    expect(() => deriveUploadKey(Buffer.alloc(32), "")).toThrow(/metadata\.uid/);
  });
});

describe("readUploadMasterKey", () => {
  it("reads the file's bytes, and names the variable when it cannot", async () => {
    const dir = await mkdtemp(join(tmpdir(), "upload-master-"));
    const good = join(dir, "key");
    await writeFile(good, Buffer.alloc(32, 3));
    expect(await readUploadMasterKey(good, "UPLOAD_MASTER_KEY_FILE")).toEqual(Buffer.alloc(32, 3));

    const short = join(dir, "short");
    await writeFile(short, "too short");
    await expect(readUploadMasterKey(short, "UPLOAD_MASTER_KEY_FILE")).rejects.toThrow(
      `UPLOAD_MASTER_KEY_FILE ${short} holds 9 bytes, fewer than 32`,
    );
    await expect(readUploadMasterKey(join(dir, "absent"), "UPLOAD_MASTER_KEY_FILE")).rejects.toThrow(
      /UPLOAD_MASTER_KEY_FILE .*absent cannot be read .*kubevirt-ts-upload-master-key/,
    );
  });
});
