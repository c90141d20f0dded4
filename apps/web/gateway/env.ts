// The gateway's settings, from its container's environment. It has no
// dependencies (it runs beside Next.js's standalone server), so no zod here.

function port(name: string, fallback: number): number {
  const value = Number(process.env[name] ?? String(fallback));
  if (!Number.isInteger(value) || value < 1 || value > 65535)
    throw new Error(`${name} must be a port number (1-65535), got ${process.env[name] ?? ""}`);
  return value;
}

const service = process.env.VIRT_API_SERVICE_HOST;

export const env = {
  /** Where the browser connects. */
  port: port("PORT", 3000),
  host: process.env.HOSTNAME ?? "0.0.0.0",
  /** Where Next.js listens, on loopback. */
  nextPort: port("NEXT_PORT", 3001),
  /** tls.crt and tls.key of the dashboard's certificate (the chart mounts its Secret); plain HTTP when unset. */
  tlsDir: process.env.TLS_DIR,
  /** virt-api: KUBEVIRT_TS_API_URL, else its Service's address as Kubernetes gives it to every pod. */
  api: new URL(
    process.env.KUBEVIRT_TS_API_URL ??
      (service ? `http://${service}:${process.env.VIRT_API_SERVICE_PORT_HTTP ?? "80"}` : "http://127.0.0.1:8080"),
  ),
  /** virt-api's upload proxy: KUBEVIRT_TS_UPLOAD_URL, else its port of the same Service. */
  upload: new URL(
    process.env.KUBEVIRT_TS_UPLOAD_URL ??
      (service ? `http://${service}:${process.env.VIRT_API_SERVICE_PORT_UPLOAD ?? "8082"}` : "http://127.0.0.1:8082"),
  ),
};

/** Next.js's standalone server reads where to listen from these. */
export function pointNextAt(nextPort: number): void {
  process.env.PORT = String(nextPort);
  process.env.HOSTNAME = "127.0.0.1";
}
