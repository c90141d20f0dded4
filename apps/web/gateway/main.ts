// The web image's entry point: Next.js's standalone server on a loopback
// port, and the gateway in front of it (HTTPS when given a certificate).
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { env, pointNextAt } from "./env.ts";
import { startGateway } from "./gateway.ts";

async function readTls(dir: string): Promise<{ cert: Buffer; key: Buffer }> {
  const read = (name: string) =>
    readFile(join(dir, name)).catch((error: unknown) => {
      throw new Error(
        `${name} of the dashboard's certificate is missing from TLS_DIR (${dir}); the chart mounts it from ` +
          "the Secret web.tls.secretName names, or from one it makes",
        { cause: error },
      );
    });
  return { cert: await read("tls.crt"), key: await read("tls.key") };
}

const tls = env.tlsDir ? await readTls(env.tlsDir) : undefined;
pointNextAt(env.nextPort);
// @ts-expect-error -- Next's generated standalone server has no types.
await import("../server.js");
const gateway = startGateway({
  port: env.port,
  host: env.host,
  next: new URL(`http://127.0.0.1:${String(env.nextPort)}`),
  api: env.api,
  upload: env.upload,
  tls,
});
const listening = {
  level: "info",
  component: "web",
  msg: "gateway listening",
  port: env.port,
  https: tls !== undefined,
  api: env.api.href,
};
process.stdout.write(`${JSON.stringify(listening)}\n`);
process.on("SIGTERM", () => {
  gateway.stop();
});
