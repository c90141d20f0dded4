import { once } from "node:events";
import { request } from "node:https";
import type { ConnectionOptions } from "node:tls";
import { ConsoleServer, type ConsoleKind, consoleServerPath } from "@kubevirt-ts/kubevirt-api";
import { type ClientOptions, WebSocket } from "ws";
import { core } from "./cluster.ts";

// The handler's console server as the API reaches it: the handler pod on
// the node, over mutual TLS with the API's client certificate, which the
// chart keeps in a Secret.

async function apiCredentials(): Promise<Pick<ConnectionOptions, "ca" | "cert" | "key" | "servername">> {
  const secret = await core.readNamespacedSecret({ name: "kubevirt-ts-api-console-tls", namespace: "kubevirt-ts" });
  const field = (key: string) => Buffer.from(secret.data?.[key] ?? "", "base64");
  return { ca: field("ca.crt"), cert: field("tls.crt"), key: field("tls.key"), servername: ConsoleServer.handlerIdentity };
}

async function handlerAddress(): Promise<string> {
  const pods = (await core.listNamespacedPod({ namespace: "kubevirt-ts", labelSelector: "app.kubernetes.io/name=virt-handler" })).items;
  const ready = pods.find((p) => !p.metadata?.deletionTimestamp && p.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True"));
  if (!ready?.status?.podIP) throw new Error("no ready handler pod");
  return `${ready.status.podIP}:${String(ConsoleServer.port)}`;
}

/** A console or VNC session with the VMI, open once this resolves; collects what the VM sends. */
export async function openConsole(namespace: string, name: string, kind: ConsoleKind): Promise<{ ws: WebSocket; received: () => Buffer }> {
  const options: ClientOptions & ConnectionOptions = await apiCredentials();
  const ws = new WebSocket(`wss://${await handlerAddress()}${consoleServerPath(namespace, name, kind)}`, options);
  const chunks: Buffer[] = [];
  ws.on("message", (data: Buffer) => chunks.push(data));
  await once(ws, "open");
  return { ws, received: () => Buffer.concat(chunks) };
}

/** What the handler kept of the VMI's serial output. */
export async function serialLog(namespace: string, name: string): Promise<string> {
  const [host = "", port] = (await handlerAddress()).split(":");
  const options = await apiCredentials();
  return new Promise((resolve, reject) => {
    const req = request({ ...options, host, port: Number(port), path: consoleServerPath(namespace, name, "serial-log") }, (res) => {
      let text = "";
      res.setEncoding("utf8").on("data", (c: string) => (text += c)).on("end", () => {
        if (res.statusCode === 200) resolve(text);
        else reject(new Error(`serial-log answered ${String(res.statusCode)}: ${text}`));
      });
    });
    req.on("error", reject).end();
  });
}
