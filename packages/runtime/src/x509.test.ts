import { execFileSync } from "node:child_process";
import { X509Certificate, createPrivateKey } from "node:crypto";
import { once } from "node:events";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer, request } from "node:https";
import { type AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { selfSignedServingCertificate } from "./x509.ts";

const now = new Date("2030-03-04T05:06:07.000Z");
const dnsNames = ["export-server.vms.svc", "export-server.vms.svc.cluster.local"];
const made = selfSignedServingCertificate({ commonName: "export-server", dnsNames, validForMs: 86_400_000, now });

describe("selfSignedServingCertificate", () => {
  it("makes a certificate Node parses, for the names and the time asked, that signs itself and fits its key", () => {
    const cert = new X509Certificate(made.certPem);
    expect(cert.subject).toContain("CN=export-server");
    expect(cert.issuer).toBe(cert.subject);
    expect(cert.subjectAltName).toBe("DNS:export-server.vms.svc, DNS:export-server.vms.svc.cluster.local");
    expect(cert.ca).toBe(true);
    expect(cert.validFromDate.toISOString()).toBe("2030-03-04T05:01:07.000Z");
    expect(cert.validToDate.toISOString()).toBe("2030-03-05T05:06:07.000Z");
    expect(cert.checkPrivateKey(createPrivateKey(made.keyPem))).toBe(true);
    expect(cert.verify(cert.publicKey)).toBe(true);
    expect(cert.publicKey.asymmetricKeyDetails?.namedCurve).toBe("prime256v1");
    expect(cert.serialNumber).toMatch(/^[0-7][0-9A-F]{31}$/);
    expect(made.keyPem).toMatch(/^-----BEGIN PRIVATE KEY-----\n/);
    const lines = made.certPem.trimEnd().split("\n");
    expect(lines[0]).toBe("-----BEGIN CERTIFICATE-----");
    expect(lines.at(-1)).toBe("-----END CERTIFICATE-----");
    expect(lines.slice(1, -2).every((line) => line.length === 64)).toBe(true);
  });

  it("gives a new key and serial each time", () => {
    const other = selfSignedServingCertificate({ commonName: "export-server", dnsNames, validForMs: 1000, now });
    expect(other.keyPem).not.toBe(made.keyPem);
    expect(new X509Certificate(other.certPem).serialNumber).not.toBe(new X509Certificate(made.certPem).serialNumber);
  });

  it("writes a GeneralizedTime from 2050 on, as RFC 5280 wants (a UTCTime would read as 19xx)", () => {
    const validForMs = 100 * 365 * 86_400_000;
    const late = selfSignedServingCertificate({ commonName: "late", dnsNames: ["late.example"], validForMs, now });
    const cert = new X509Certificate(late.certPem);
    expect(cert.validToDate.getTime()).toBe(now.getTime() + validForMs);
    expect(cert.validToDate.getUTCFullYear()).toBe(2130);
    expect(cert.validFromDate.toISOString()).toBe("2030-03-04T05:01:07.000Z");
  });

  it("is read by openssl as a CA for TLS servers, and openssl verifies it against itself", async () => {
    // Made now rather than in 2030: openssl verify checks the validity against its own clock.
    const current = selfSignedServingCertificate({ commonName: "export-server", dnsNames, validForMs: 3_600_000 });
    const dir = await mkdtemp(join(tmpdir(), "x509-"));
    try {
      const file = join(dir, "cert.pem");
      await writeFile(file, current.certPem);
      const text = execFileSync("openssl", ["x509", "-noout", "-text", "-in", file], { encoding: "utf8" });
      expect(text).toContain("CA:TRUE");
      expect(text).toContain("TLS Web Server Authentication");
      expect(text).toContain("Digital Signature, Certificate Sign");
      expect(text).toContain("Subject Key Identifier");
      expect(text).toContain("ecdsa-with-SHA256");
      const verified = execFileSync("openssl", ["verify", "-CAfile", file, file], { encoding: "utf8" });
      expect(verified.trim()).toBe(`${file}: OK`);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("serves TLS that a client trusting only it accepts for its DNS name and refuses for another", async () => {
    const live = selfSignedServingCertificate({ commonName: "export-server", dnsNames, validForMs: 3_600_000 });
    const server = createServer({ cert: live.certPem, key: live.keyPem }, (_req, res) => {
      res.end("hello");
    });
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    const { port } = server.address() as AddressInfo;
    const get = (servername: string) =>
      new Promise<string>((resolve, reject) => {
        const req = request(
          { host: "127.0.0.1", port, path: "/", ca: live.certPem, servername, agent: false },
          (res) => {
            let body = "";
            res.setEncoding("utf8");
            res.on("data", (chunk: string) => (body += chunk));
            res.on("end", () => {
              resolve(body);
            });
          },
        );
        req.on("error", reject);
        req.end();
      });
    try {
      expect(await get(dnsNames[0] ?? "")).toBe("hello");
      await expect(get("other.example")).rejects.toMatchObject({
        code: "ERR_TLS_CERT_ALTNAME_INVALID",
        message: expect.stringContaining("other.example") as unknown,
      });
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });

  it("refuses an empty commonName, too many or malformed dnsNames, and a validForMs not above zero, by name", () => {
    const base = { commonName: "cn", dnsNames: ["a.example"], validForMs: 1000 };
    expect(() => selfSignedServingCertificate({ ...base, commonName: "" })).toThrow(/commonName/);
    const seventeen = Array.from({ length: 17 }, (_, i) => `n${i}.example`);
    expect(() => selfSignedServingCertificate({ ...base, dnsNames: seventeen })).toThrow(/dnsNames/);
    expect(() => selfSignedServingCertificate({ ...base, dnsNames: seventeen.slice(1) })).not.toThrow();
    const long = `${"a".repeat(63)}.${"b".repeat(63)}.${"c".repeat(63)}.${"d".repeat(62)}`;
    expect(long.length).toBe(254);
    expect(() => selfSignedServingCertificate({ ...base, dnsNames: [long] })).toThrow(/dnsNames.*254/);
    expect(() => selfSignedServingCertificate({ ...base, dnsNames: [long.slice(1)] })).not.toThrow();
    for (const bad of ["Upper.example", "*.example", "a_b.example", "a b", "é.example", ""])
      expect(() => selfSignedServingCertificate({ ...base, dnsNames: [bad] })).toThrow(/dnsNames/);
    for (const bad of [0, -1, Number.NaN, Number.POSITIVE_INFINITY])
      expect(() => selfSignedServingCertificate({ ...base, validForMs: bad })).toThrow(/validForMs/);
  });
});
