import { connect } from "node:net";

/** Reads a unix socket's stream, optionally after writing to it, until it contains `text`. */
export function readUntil(path: string, text: string, send?: string, timeoutMs = 60_000): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(path);
    let output = "";
    const timer = setTimeout(() => {
      socket.destroy();
      reject(
        new Error(
          `no ${JSON.stringify(text)} within ${String(timeoutMs)} ms; got ${JSON.stringify(output.slice(-300))}`,
        ),
      );
    }, timeoutMs);
    socket.on("connect", () => {
      if (send !== undefined) socket.write(send);
    });
    socket.on("data", (chunk) => {
      output += chunk.toString("latin1");
      if (output.includes(text)) {
        clearTimeout(timer);
        socket.destroy();
        resolve(output);
      }
    });
    socket.on("error", (error) => {
      clearTimeout(timer);
      reject(error);
    });
  });
}

/** Whether the tiny guest on the serial console has an IPv4 address on eth0 yet (its DHCP is done). */
export async function guestNetworkUp(path: string): Promise<boolean> {
  const seen = await readUntil(
    path,
    "NET=",
    "ip -4 addr show eth0 | grep -q 'inet ' && echo NET''=up || echo NET''=down\n",
    5_000,
  );
  return seen.includes("NET=up");
}
