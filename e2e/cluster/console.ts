import { once } from "node:events";
import { request } from "node:https";
import type { ConnectionOptions } from "node:tls";
import { ConsoleServer, handlerPath } from "@kubevirt-ts/node-contract";
import type { ConsoleKind } from "@kubevirt-ts/kubevirt-api";
import { SHARED_CONSOLE_QUERY } from "@kubevirt-ts/vm-rules";
import { type ClientOptions, WebSocket } from "ws";
import { tokenOf } from "../tests/cluster-users.ts";
import { core, custom } from "./cluster.ts";
import { DASHBOARD_URL, dashboardTls } from "./dashboard.ts";

// Consoles as users reach them: KubeVirt's console and VNC websockets on
// the dashboard's address (the gateway passes them to virt-api, which checks
// the user's access and goes to the handler), with the user's token. The
// serial log has no user-facing endpoint yet, so the suite reads it from the
// handler with the API's client certificate, which the chart keeps in a Secret.

async function apiCredentials(): Promise<Pick<ConnectionOptions, "ca" | "cert" | "key" | "servername">> {
  const secret = await core.readNamespacedSecret({ name: "kubevirt-ts-api-console-tls", namespace: "kubevirt-ts" });
  const field = (key: string) => Buffer.from(secret.data?.[key] ?? "", "base64");
  return {
    ca: field("ca.crt"),
    cert: field("tls.crt"),
    key: field("tls.key"),
    servername: ConsoleServer.handlerIdentity,
  };
}

/** The address of the handler on the node the VMI runs on: each handler serves its own node's VMIs only. */
async function handlerAddress(namespace: string, name: string): Promise<string> {
  const vmi = (await custom.getNamespacedCustomObject({
    group: "kubevirt.io",
    version: "v1",
    namespace,
    plural: "virtualmachineinstances",
    name,
  })) as { status?: { nodeName?: string } };
  const nodeName = vmi.status?.nodeName;
  if (!nodeName) throw new Error(`VMI ${namespace}/${name} is on no node yet`);
  const pods = (
    await core.listNamespacedPod({
      namespace: "kubevirt-ts",
      labelSelector: "app.kubernetes.io/name=virt-handler",
      fieldSelector: `spec.nodeName=${nodeName}`,
    })
  ).items;
  const ready = pods.find(
    (p) =>
      !p.metadata?.deletionTimestamp && p.status?.conditions?.some((c) => c.type === "Ready" && c.status === "True"),
  );
  if (!ready?.status?.podIP) throw new Error(`no ready handler pod on ${nodeName}`);
  return `${ready.status.podIP}:${String(ConsoleServer.port)}`;
}

/** Who opens a console: one of the local cluster's two users, or the holder of a token (a namespace's editor). */
export type ConsoleUser = "admin" | "viewer" | { token: string };

/**
 * A console or VNC session with the VMI as the user, open once this resolves; collects what the VM sends (binary
 * frames: a shared session's sharing messages, text frames, are left out). `shared` asks to share it
 * (console-sharing.ts).
 */
export async function openConsole(
  namespace: string,
  name: string,
  kind: ConsoleKind,
  user: ConsoleUser = "admin",
  { shared = false } = {},
): Promise<{ ws: WebSocket; received: () => Buffer }> {
  const url = new URL(
    `/apis/subresources.kubevirt.io/v1/namespaces/${namespace}/virtualmachineinstances/${name}/${kind}`,
    DASHBOARD_URL,
  );
  url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
  if (shared) url.searchParams.set(SHARED_CONSOLE_QUERY, "true");
  const token = typeof user === "string" ? tokenOf(user) : user.token;
  const options: ClientOptions & ConnectionOptions = {
    ...(await dashboardTls()),
    headers: { authorization: `Bearer ${token}` },
  };
  const ws = new WebSocket(url, ["plain.kubevirt.io"], options);
  const chunks: Buffer[] = [];
  ws.on("message", (data: Buffer, binary: boolean) => {
    if (binary) chunks.push(data);
  });
  const closed = once(ws, "close").then(([code, reason]) => {
    throw new Error(`the ${kind} session was refused: ${String(code)} ${String(reason)}`);
  });
  await Promise.race([once(ws, "open"), closed]);
  return { ws, received: () => Buffer.concat(chunks) };
}

/** What the handler kept of the VMI's serial output. */
export async function serialLog(namespace: string, name: string): Promise<string> {
  const [host = "", port] = (await handlerAddress(namespace, name)).split(":");
  const options = await apiCredentials();
  return new Promise((resolve, reject) => {
    const req = request(
      { ...options, host, port: Number(port), path: handlerPath("serialLog", { namespace, name }) },
      (res) => {
        let text = "";
        res
          .setEncoding("utf8")
          .on("data", (c: string) => (text += c))
          .on("end", () => {
            if (res.statusCode === 200) resolve(text);
            else reject(new Error(`serial-log answered ${String(res.statusCode)}: ${text}`));
          });
      },
    );
    req.on("error", reject).end();
  });
}

/**
 * Reads until the value passes, every interval, for at most the timeout; else fails with what was last read. (Not
 * vitest's expect.poll: the benchmark, outside vitest, types into guests with these too.)
 */
async function readUntil(
  read: () => string,
  passes: (value: string) => boolean,
  poll: { timeout: number; interval: number },
  what: string,
): Promise<string> {
  const deadline = Date.now() + poll.timeout;
  for (;;) {
    const value = read();
    if (passes(value)) return value;
    if (Date.now() >= deadline)
      throw new Error(`${what} within ${String(poll.timeout / 1000)} s; the console printed:\n${value.slice(-2000)}`);
    await new Promise((resolve) => setTimeout(resolve, poll.interval));
  }
}

/** Types a command on the VM's serial console (a shell's, as the tiny guest's) and waits for what it prints. */
export async function inGuest(
  namespace: string,
  vm: string,
  command: string,
  expected: string,
  poll = { timeout: 240_000, interval: 1_000 },
  user: ConsoleUser = "admin",
): Promise<string> {
  const { ws, received } = await openConsole(namespace, vm, "console", user);
  try {
    // The shell may still be starting: Enter until its prompt shows (busybox's sh follows it with a cursor query).
    await readUntil(
      () => {
        ws.send(Buffer.from("\n"));
        return received().toString();
      },
      (seen) => /[#$] /.test(seen),
      poll,
      "no shell prompt on the serial console",
    );
    ws.send(Buffer.from(`${command}\n`));
    return await readUntil(
      () => received().toString(),
      (seen) => seen.includes(expected),
      poll,
      `no ${JSON.stringify(expected)} after ${JSON.stringify(command)}`,
    );
  } finally {
    ws.close();
  }
}

/** A login shell on a VM's serial console (a getty's, as the Debian guest's). */
export interface SerialShell {
  /** Types the command and waits until what follows it matches; what followed. */
  run(command: string, expected: string | RegExp): Promise<string>;
  close(): void;
}

/**
 * Logs in on the VM's serial console as the user. The kernel and cloud-init may print at any moment, so each step
 * waits for its prompt in what came after the previous step, wherever it is.
 */
export async function serialLogin(
  namespace: string,
  vm: string,
  user: string,
  password: string,
  poll = { timeout: 600_000, interval: 2_000 },
): Promise<SerialShell> {
  const { ws, received } = await openConsole(namespace, vm, "console");
  const text = () => received().toString("utf8");
  const type = (line: string) => {
    ws.send(Buffer.from(`${line}\r`));
  };
  const step = async (line: string, expected: string | RegExp): Promise<string> => {
    const mark = text().length;
    type(line);
    const after = () => text().slice(mark);
    const pattern =
      typeof expected === "string" ? new RegExp(expected.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")) : expected;
    // (The line is left out of the failure: it may be the password.)
    return readUntil(
      after,
      (seen) => pattern.test(seen),
      poll,
      `no ${String(pattern)} on the serial console after the line typed`,
    );
  };
  const prompt = new RegExp(`${user}@\\S+:~\\$ `);
  // A console an earlier session left logged in answers with the user's prompt rather than login:.
  const first = await step("", new RegExp(`login: |${prompt.source}`));
  if (!prompt.test(first)) {
    await step(user, /Password: /);
    await step(password, prompt);
  }
  return {
    run: step,
    close: () => {
      ws.close();
    },
  };
}
