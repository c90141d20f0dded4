import { afterEach, describe, expect, it } from "vitest";
import { type Peer, greeting, onRequests, startPeer } from "../test/peer.ts";
import { ANSWER_BOUNDS, overBounds } from "./bounds.ts";
import { LauncherClient } from "./client.ts";
import { LauncherProtocolError } from "./errors.ts";
import { MAX_RESPONSE_LINE_BYTES } from "./protocol.ts";

// A launcher's answers within the line limit but past ANSWER_BOUNDS, over a real unix socket: the call fails with a
// violation that names the field and the bound, and the connection to that launcher is dropped; nothing is thrown
// out of the socket's handlers (vitest fails a test on an uncaught exception).

let peer: Peer | undefined;
let client: LauncherClient | undefined;
afterEach(async () => {
  client?.close();
  await peer?.close();
  peer = undefined;
  client = undefined;
});

/** A launcher that answers every request with `result`. */
async function answering(result: unknown): Promise<{ peer: Peer; client: LauncherClient }> {
  peer = await startPeer(
    greeting((socket) => {
      onRequests(socket, (request) => {
        socket.write(`${JSON.stringify({ id: request.id, result })}\n`);
      });
    }),
  );
  client = await LauncherClient.connect(peer.path);
  return { peer, client };
}

async function refusal(call: Promise<unknown>): Promise<LauncherProtocolError> {
  const error: unknown = await call.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(LauncherProtocolError);
  return error as LauncherProtocolError;
}

describe("ANSWER_BOUNDS", () => {
  it("refuses a guest OS name of 300 KiB, which would go into the VMI's status, and drops that launcher", async () => {
    const { peer: p, client: c } = await answering({ id: "debian", prettyName: "x".repeat(300 * 1024) });
    expect(JSON.stringify({ prettyName: "x".repeat(300 * 1024) }).length).toBeLessThan(MAX_RESPONSE_LINE_BYTES);
    const error = await refusal(c.call("guestOsInfo"));
    expect(error.violation).toBe("InvalidResult");
    expect(error.message).toMatch(/result\.prettyName: is 307200 characters long, over the 256 a launcher may answer/);
    await expect.poll(() => p.connections[0]?.destroyed).toBe(true);
    expect((await refusal(c.call("state"))).violation).toBe("InvalidResult");
  });

  it("refuses domain stats with more interfaces than a VMI can have, each a Prometheus label set", async () => {
    const iface = (i: number) => ({
      name: `eth${String(i)}`,
      rxBytes: 0,
      rxPackets: 0,
      rxErrors: 0,
      rxDrops: 0,
      txBytes: 0,
      txPackets: 0,
      txErrors: 0,
      txDrops: 0,
    });
    const { client: c } = await answering({
      cpu: { timeNs: 1 },
      vcpus: [],
      memory: {},
      interfaces: Array.from({ length: ANSWER_BOUNDS.items + 1 }, (_, i) => iface(i)),
      disks: [],
    });
    expect((await refusal(c.call("domainStats"))).message).toMatch(
      /result\.interfaces: has 513 items, over the 512 a launcher may answer/,
    );
  });

  it(
    "refuses a long access credentials' message and a guest user's name, and " + "takes answers within the bounds",
    async () => {
      const { client: c } = await answering({
        state: "Running",
        accessCredentials: { synchronized: false, message: "m".repeat(1025) },
      });
      expect((await refusal(c.call("state"))).message).toMatch(
        /result\.accessCredentials\.message: is 1025 characters long, over the 1024/,
      );
      await peer?.close();
      const fine = {
        guestAgentVersion: "9.0",
        hostname: "h".repeat(256),
        userList: [{ userName: "root" }],
        fsInfo: { disks: [{ diskName: "vda1", mountPoint: `/${"m".repeat(4000)}`, fileSystemType: "ext4" }] },
      };
      const { client: ok } = await answering(fine);
      expect(await ok.call("guestAgentInfo")).toEqual(fine);
    },
  );

  it("names every place past a bound, at most five", () => {
    expect(overBounds({ a: ["x".repeat(257)], failureReason: "y".repeat(2049), list: new Array(513).fill(0) })).toEqual(
      [
        { path: ["a", 0], message: "is 257 characters long, over the 256 a launcher may answer" },
        { path: ["failureReason"], message: "is 2049 characters long, over the 2048 a launcher may answer" },
        { path: ["list"], message: "has 513 items, over the 512 a launcher may answer" },
      ],
    );
    expect(overBounds(Array.from({ length: 20 }, () => "z".repeat(300)))).toHaveLength(5);
  });
});
