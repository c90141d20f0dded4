// Name formats of Kubernetes (RFC 1123) used by validation.

const dnsLabel = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const dnsSubdomain = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** Why a value is not an RFC 1123 DNS label, or undefined when it is one. */
export function dnsLabelProblem(value: string): string | undefined {
  if (value === "") return "must not be empty";
  if (value.length > 63) return `must be at most 63 characters long, it has ${value.length}`;
  if (!dnsLabel.test(value)) {
    return (
      "must be a DNS label: lower-case letters, digits and '-', starting and ending with a " +
      `letter or digit (got ${JSON.stringify(value)})`
    );
  }
  return undefined;
}

export function dnsSubdomainProblem(value: string): string | undefined {
  if (value === "") return "must not be empty";
  if (value.length > 253) return `must be at most 253 characters long, it has ${value.length}`;
  if (!dnsSubdomain.test(value)) {
    return `must be a DNS subdomain: lower-case letters, digits, '-' and '.' (got ${JSON.stringify(value)})`;
  }
  return undefined;
}
