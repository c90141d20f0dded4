import { request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";
import type { ConnectionOptions } from "node:tls";
import { NAMESPACE } from "@kubevirt-ts/local-cluster";
import { tokenOf } from "../tests/cluster-users.ts";
import { core } from "./cluster.ts";
import { DASHBOARD_URL } from "./env.ts";

export { DASHBOARD_URL };

// The dashboard's address, as users reach it (`make up` prints it): pages,
// the tRPC API and KubeVirt's console websockets on one origin.

/** The Secret holding the dashboard's serving certificate and the CA that signed it. */
const DASHBOARD_TLS_SECRET = "kubevirt-ts-web-tls";

/** Trust for the dashboard's certificate: the CA the chart made it with, and the name it was made for. */
export async function dashboardTls(): Promise<Pick<ConnectionOptions, "ca">> {
  if (!DASHBOARD_URL.startsWith("https:")) return {};
  const secret = await core.readNamespacedSecret({ name: DASHBOARD_TLS_SECRET, namespace: NAMESPACE });
  return { ca: Buffer.from(secret.data?.["ca.crt"] ?? "", "base64") };
}

/** Calls a tRPC mutation as the user, the way the dashboard does; throws with the API's message when refused. */
export async function mutate(user: "admin" | "viewer", procedure: string, input: unknown): Promise<unknown> {
  const request = DASHBOARD_URL.startsWith("https:") ? httpsRequest : httpRequest;
  const tls = await dashboardTls();
  const body = JSON.stringify(input);
  return new Promise((resolve, reject) => {
    const req = request(
      new URL(`/trpc/${procedure}`, DASHBOARD_URL),
      {
        method: "POST",
        ...tls,
        headers: { "content-type": "application/json", authorization: `Bearer ${tokenOf(user)}` },
      },
      (res) => {
        let text = "";
        res
          .setEncoding("utf8")
          .on("data", (c: string) => (text += c))
          .on("end", () => {
            if (res.statusCode === 200) resolve((JSON.parse(text) as { result?: { data?: unknown } }).result?.data);
            else reject(new Error(`${procedure} answered ${String(res.statusCode)}: ${text}`));
          });
      },
    );
    req.on("error", reject).end(body);
  });
}
