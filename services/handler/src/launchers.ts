import type { Logger } from "@kubevirt-ts/runtime";
import { LauncherClient, LauncherUnreachableError } from "@kubevirt-ts/launcher-protocol";
import { SocketName, openPodSocket } from "./pod-volume.ts";

// Connections to the launchers of this node, one per launcher pod, opened on
// first use after the socket's path has been checked, and dropped when the
// pod goes or the connection breaks (a launcher that breaks the protocol has
// its connection dropped by the client). Every failure is a LauncherError.

export class Launchers {
  private readonly podsDir: string;
  private readonly log: Logger;
  private readonly clients = new Map<string, Promise<LauncherClient>>();

  constructor(podsDir: string, log: Logger) {
    this.podsDir = podsDir;
    this.log = log;
  }

  get(podUid: string): Promise<LauncherClient> {
    let client = this.clients.get(podUid);
    if (!client) {
      client = (async () => {
        const socket = await openPodSocket(this.podsDir, podUid, SocketName.Launcher).catch((error: unknown) => {
          throw new LauncherUnreachableError(`the launcher's socket cannot be used: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
        });
        let connected: LauncherClient;
        try {
          connected = await LauncherClient.connect(socket.path);
        } finally {
          await socket.close();
        }
        connected.onClose(() => this.clients.delete(podUid));
        this.log.info("connected to a launcher", { pod: podUid });
        return connected;
      })();
      client.catch(() => this.clients.delete(podUid));
      this.clients.set(podUid, client);
    }
    return client;
  }

  forget(podUid: string): void {
    void this.clients.get(podUid)?.then((c) => {
      c.close();
    });
    this.clients.delete(podUid);
  }

  closeAll(): void {
    for (const uid of [...this.clients.keys()]) this.forget(uid);
  }
}
