// The web image's entry point: Next.js's standalone server on a loopback
// port, and the gateway in front of it.
import { env, pointNextAt } from "./env.ts";
import { startGateway } from "./gateway.ts";

pointNextAt(env.nextPort);
// @ts-expect-error -- Next's generated standalone server has no types.
await import("../server.js");
const gateway = startGateway({ port: env.port, host: env.host, next: new URL(`http://127.0.0.1:${String(env.nextPort)}`), api: env.api });
process.stdout.write(`${JSON.stringify({ level: "info", component: "web", msg: "gateway listening", port: env.port, api: env.api.href })}\n`);
process.on("SIGTERM", () => {
  gateway.close();
});
