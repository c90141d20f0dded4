import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";

// A small PKI made with the openssl command: one CA and the certificates the
// control plane needs. EC P-256 keys keep generation fast.

const run = promisify(execFile);

export interface KeyPair {
  cert: string;
  key: string;
}

export interface CertificateRequest {
  /** File name stem in the PKI folder. */
  name: string;
  commonName: string;
  organization?: string;
  /** DNS names and IP addresses the certificate is valid for (servers). */
  hosts?: string[];
  usage: "server" | "client" | "both";
}

const IP_PATTERN = /^\d{1,3}(\.\d{1,3}){3}$/;

async function openssl(args: string[]): Promise<void> {
  try {
    await run("openssl", args);
  } catch (error) {
    const stderr = (error as { stderr?: string }).stderr ?? "";
    throw new Error(`openssl ${args[0] ?? ""} failed: ${stderr.trim() || String(error)}`, { cause: error });
  }
}

export class Pki {
  readonly dir: string;
  readonly ca: KeyPair;

  constructor(dir: string) {
    this.dir = dir;
    this.ca = { cert: join(dir, "ca.crt"), key: join(dir, "ca.key") };
  }

  async createCa(commonName: string): Promise<void> {
    await openssl([
      "req",
      "-x509",
      "-new",
      "-nodes",
      "-newkey",
      "ec",
      "-pkeyopt",
      "ec_paramgen_curve:prime256v1",
      "-keyout",
      this.ca.key,
      "-out",
      this.ca.cert,
      "-days",
      "3650",
      "-subj",
      `/CN=${commonName}`,
      "-addext",
      "basicConstraints=critical,CA:TRUE",
      "-addext",
      "keyUsage=critical,keyCertSign,cRLSign",
    ]);
  }

  async issue(request: CertificateRequest): Promise<KeyPair> {
    const pair = { cert: join(this.dir, `${request.name}.crt`), key: join(this.dir, `${request.name}.key`) };
    const csr = join(this.dir, `${request.name}.csr`);
    const ext = join(this.dir, `${request.name}.ext`);
    const subject = `/CN=${request.commonName}${request.organization ? `/O=${request.organization}` : ""}`;
    const usages = { server: "serverAuth", client: "clientAuth", both: "serverAuth,clientAuth" }[request.usage];
    const lines = [
      "basicConstraints=critical,CA:FALSE",
      "keyUsage=critical,digitalSignature,keyEncipherment",
      `extendedKeyUsage=${usages}`,
    ];
    if (request.hosts && request.hosts.length > 0) {
      const names = request.hosts.map((h) => (IP_PATTERN.test(h) ? `IP:${h}` : `DNS:${h}`));
      lines.push(`subjectAltName=${names.join(",")}`);
    }
    await writeFile(ext, `${lines.join("\n")}\n`);
    await openssl([
      "req",
      "-new",
      "-nodes",
      "-newkey",
      "ec",
      "-pkeyopt",
      "ec_paramgen_curve:prime256v1",
      "-keyout",
      pair.key,
      "-out",
      csr,
      "-subj",
      subject,
    ]);
    await openssl([
      // A random serial per certificate: a shared serial file would race when certificates are issued in parallel.
      "x509",
      "-req",
      "-in",
      csr,
      "-CA",
      this.ca.cert,
      "-CAkey",
      this.ca.key,
      "-set_serial",
      `0x${randomBytes(16).toString("hex")}`,
      "-out",
      pair.cert,
      "-days",
      "3650",
      "-extfile",
      ext,
    ]);
    return pair;
  }

  /** A key pair for signing service account tokens. */
  async serviceAccountKeys(): Promise<{ privateKey: string; publicKey: string }> {
    const privateKey = join(this.dir, "service-account.key");
    const publicKey = join(this.dir, "service-account.pub");
    await openssl(["ecparam", "-genkey", "-name", "prime256v1", "-noout", "-out", privateKey]);
    await openssl(["ec", "-in", privateKey, "-pubout", "-out", publicKey]);
    return { privateKey, publicKey };
  }
}
