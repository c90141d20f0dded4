import { type KeyObject, createHash, generateKeyPairSync, randomBytes, sign } from "node:crypto";

// A serving certificate for a pod the controller makes (an export server): the
// controller hands this very certificate to the pod's clients as their only
// root, so it is its own CA (basicConstraints CA:TRUE), and it verifies itself
// in Go's crypto/x509 and in Node's tls. Built by hand in DER with node:crypto
// alone: an EC P-256 key, signed ecdsa-with-SHA256.

/** The most DNS names one certificate is made for. */
const MAX_DNS_NAMES = 16;
/** The longest DNS name (RFC 1035's 253 characters in text form). */
const MAX_DNS_NAME_LENGTH = 253;
/** How far notBefore lies before now, for clocks a little behind ours. */
const CLOCK_SKEW_MS = 5 * 60 * 1000;

// The few DER encodings a certificate needs (X.690).
function der(tag: number, ...content: Uint8Array[]): Buffer {
  const body = Buffer.concat(content);
  const n = body.length;
  const length =
    n < 0x80
      ? [n]
      : n < 0x100
        ? [0x81, n]
        : n < 0x10000
          ? [0x82, n >> 8, n & 0xff]
          : [0x83, n >> 16, (n >> 8) & 0xff, n & 0xff];
  return Buffer.concat([Buffer.from([tag, ...length]), body]);
}
const sequence = (...items: Uint8Array[]) => der(0x30, ...items);
const set = (...items: Uint8Array[]) => der(0x31, ...items);
/** A constructed context-specific tag, [n] EXPLICIT. */
const explicit = (n: number, ...items: Uint8Array[]) => der(0xa0 | n, ...items);
const octetString = (bytes: Uint8Array) => der(0x04, bytes);
/** A BIT STRING of whole bytes (no unused bits). */
const bitString = (bytes: Uint8Array) => der(0x03, Buffer.from([0]), bytes);
const booleanTrue = der(0x01, Buffer.from([0xff]));

/** A non-negative INTEGER from its big-endian bytes, in the fewest bytes DER allows. */
function integer(bytes: Uint8Array): Buffer {
  let start = 0;
  while (start < bytes.length - 1 && bytes[start] === 0 && ((bytes[start + 1] ?? 0) & 0x80) === 0) start++;
  const trimmed = bytes.subarray(start);
  return der(0x02, ((trimmed[0] ?? 0) & 0x80) !== 0 ? Buffer.from([0]) : Buffer.alloc(0), trimmed);
}

function oid(dotted: string): Buffer {
  const [first = 0, second = 0, ...rest] = dotted.split(".").map(Number);
  const bytes: number[] = [];
  for (const arc of [first * 40 + second, ...rest]) {
    const base128 = [arc & 0x7f];
    for (let v = Math.floor(arc / 128); v > 0; v = Math.floor(v / 128)) base128.unshift((v & 0x7f) | 0x80);
    bytes.push(...base128);
  }
  return der(0x06, Buffer.from(bytes));
}

/** RFC 5280 4.1.2.5: UTCTime through 2049, GeneralizedTime from 2050, both in whole seconds UTC. */
function time(date: Date): Buffer {
  const iso = date.toISOString(); // YYYY-MM-DDTHH:MM:SS.sssZ
  const digits = iso.slice(0, 19).replace(/[-T:]/g, "") + "Z"; // YYYYMMDDHHMMSSZ
  const year = date.getUTCFullYear();
  return year >= 1950 && year < 2050
    ? der(0x17, Buffer.from(digits.slice(2), "ascii"))
    : der(0x18, Buffer.from(digits, "ascii"));
}

function extension(id: string, critical: boolean, value: Uint8Array): Buffer {
  return sequence(oid(id), ...(critical ? [booleanTrue] : []), octetString(value));
}

const OID = {
  commonName: "2.5.4.3",
  ecdsaWithSha256: "1.2.840.10045.4.3.2",
  subjectKeyIdentifier: "2.5.29.14",
  keyUsage: "2.5.29.15",
  subjectAltName: "2.5.29.17",
  basicConstraints: "2.5.29.19",
  extKeyUsage: "2.5.29.37",
  serverAuth: "1.3.6.1.5.5.7.3.1",
};

function check(options: { commonName: string; dnsNames: string[]; validForMs: number }): void {
  if (options.commonName === "") throw new Error("commonName is empty: name the certificate's subject");
  if (options.dnsNames.length > MAX_DNS_NAMES)
    throw new Error(`dnsNames has ${options.dnsNames.length} names, more than ${MAX_DNS_NAMES}`);
  for (const name of options.dnsNames) {
    if (name.length > MAX_DNS_NAME_LENGTH)
      throw new Error(`dnsNames holds a name of ${name.length} characters, more than ${MAX_DNS_NAME_LENGTH}`);
    if (!/^[a-z0-9.-]+$/.test(name))
      throw new Error(`dnsNames holds ${JSON.stringify(name)}, which is not made of only a-z, 0-9, "." and "-"`);
  }
  if (!(options.validForMs > 0) || !Number.isFinite(options.validForMs))
    throw new Error(`validForMs is ${options.validForMs}: give a positive number of milliseconds`);
}

/**
 * A self-signed serving certificate, CN=commonName and a dNSName for each of dnsNames, valid from 5 minutes before
 * `now` to `now` + validForMs, that is its own CA; with its EC P-256 private key in PKCS#8 PEM.
 */
export function selfSignedServingCertificate(options: {
  commonName: string;
  dnsNames: string[];
  validForMs: number;
  now?: Date;
}): { certPem: string; keyPem: string } {
  check(options);
  const now = options.now ?? new Date();
  const notBefore = new Date(now.getTime() - CLOCK_SKEW_MS);
  const notAfter = new Date(now.getTime() + options.validForMs);
  if (Number.isNaN(notAfter.getTime()) || notAfter.getUTCFullYear() > 9999)
    throw new Error(`validForMs is ${options.validForMs}: it ends the certificate after the year 9999`);

  const { publicKey, privateKey } = generateKeyPairSync("ec", { namedCurve: "prime256v1" });
  const spki = publicKey.export({ type: "spki", format: "der" });

  const serial = randomBytes(16);
  serial[0] = Math.max((serial[0] ?? 0) & 0x7f, 1); // positive, and 16 bytes long in DER
  const name = sequence(set(sequence(oid(OID.commonName), der(0x0c, Buffer.from(options.commonName, "utf8")))));
  const signatureAlgorithm = sequence(oid(OID.ecdsaWithSha256));

  const extensions = [
    extension(OID.basicConstraints, true, sequence(booleanTrue)),
    // digitalSignature (bit 0) and keyCertSign (bit 5): 0b1000_0100, its 2 last bits unused.
    extension(OID.keyUsage, true, der(0x03, Buffer.from([2, 0x84]))),
    extension(OID.extKeyUsage, false, sequence(oid(OID.serverAuth))),
    ...(options.dnsNames.length > 0
      ? [
          extension(
            OID.subjectAltName,
            false,
            sequence(...options.dnsNames.map((n) => der(0x82, Buffer.from(n, "ascii")))),
          ),
        ]
      : []),
    extension(OID.subjectKeyIdentifier, false, octetString(keyIdentifier(publicKey))),
  ];

  const tbs = sequence(
    explicit(0, integer(Buffer.from([2]))), // v3
    integer(serial),
    signatureAlgorithm,
    name,
    sequence(time(notBefore), time(notAfter)),
    name,
    spki,
    explicit(3, sequence(...extensions)),
  );
  const certificate = sequence(tbs, signatureAlgorithm, bitString(sign("sha256", tbs, privateKey)));

  const base64 = certificate.toString("base64").replace(/.{64}/g, "$&\n").replace(/\n$/, "");
  return {
    certPem: `-----BEGIN CERTIFICATE-----\n${base64}\n-----END CERTIFICATE-----\n`,
    keyPem: privateKey.export({ type: "pkcs8", format: "pem" }).toString(),
  };
}

/** RFC 5280 4.2.1.2 method 1: the SHA-1 of the subjectPublicKey's bits, here the uncompressed point 04 || x || y. */
function keyIdentifier(publicKey: KeyObject): Buffer {
  const jwk = publicKey.export({ format: "jwk" });
  const point = Buffer.concat([
    Buffer.from([4]),
    Buffer.from(jwk.x ?? "", "base64url"),
    Buffer.from(jwk.y ?? "", "base64url"),
  ]);
  return createHash("sha1").update(point).digest();
}
