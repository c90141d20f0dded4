import { X509Certificate } from "node:crypto";

// Whose client certificate a TLS request came over, checked by hand: the
// webhook listener asks every caller for a certificate (requestCert) but
// names no CA to TLS, since it serves two callers with certificates of two
// CAs (the API server's front proxy on the subresource API, and the API
// server's webhook client on the admission webhooks). A CA given to TLS
// would also be sent as the only acceptable one, and the API server's Go
// client then sends no certificate signed by another.

/**
 * A client certificate's trust: the CAs it must be issued by, the common names it may have (empty: any that CA signed).
 */
export interface ClientTrust {
  cas: X509Certificate[];
  allowedNames: string[];
}

/** How a refusal names the certificate, the CA and where the allowed names are set. */
export interface TrustNames {
  whose: string;
  ca: string;
  namesFrom: string;
}

/** The certificates of a PEM bundle, in order; none when it holds none. */
export function pemCertificates(pem: string): X509Certificate[] {
  return (pem.match(/-----BEGIN CERTIFICATE-----[^-]+-----END CERTIFICATE-----/g) ?? []).map(
    (block) => new X509Certificate(block),
  );
}

/** Why `peer` is not a certificate `trust` takes, or undefined when it is. */
export function clientCertRefusal(
  trust: ClientTrust,
  names: TrustNames,
  peer: X509Certificate | undefined,
  now = new Date(),
): string | undefined {
  if (!peer) return `request is not authenticated: no client certificate of ${names.whose}`;
  if (now < new Date(peer.validFrom) || now > new Date(peer.validTo))
    return "request is not authenticated: the client certificate is not valid now";
  if (!trust.cas.some((ca) => peer.checkIssued(ca) && peer.verify(ca.publicKey)))
    return `request is not authenticated: the client certificate is not signed by ${names.ca}`;
  const commonName = /(?:^|\n)CN=([^\n]*)/.exec(peer.subject)?.[1];
  if (trust.allowedNames.length > 0 && !trust.allowedNames.includes(commonName ?? ""))
    return `request is not authenticated: common name ${commonName ?? "(none)"} is not among ${names.namesFrom}`;
  return undefined;
}
