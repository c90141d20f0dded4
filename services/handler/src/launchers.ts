import { type FSWatcher, watch } from "node:fs";
import { lstat } from "node:fs/promises";
import type { Logger } from "@kubevirt-ts/runtime";
import { LauncherClient, LauncherUnreachableError } from "@kubevirt-ts/launcher-protocol";
import { SocketName, openPodSocket, podVolumePath, verifyPodVolumePath } from "./pod-volume.ts";

// Connections to the launchers of this node, one per launcher pod, opened on
// first use after the socket's path has been checked, and dropped when the
// pod goes or the connection breaks (a launcher that breaks the protocol has
// its connection dropped by the client). Every failure is a LauncherError.
// A launcher that has not opened its socket yet (it is starting libvirt) is
// LauncherNotListeningError; whenSocketAppears tells when it does, so that a
// VMI is handed over as soon as its launcher's container runs and acted on
// the moment its socket is there, with no polling interval in between.

/** The launcher's socket is not there (yet): its container has not opened it. */
export class LauncherNotListeningError extends LauncherUnreachableError {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "LauncherNotListeningError";
  }
}

const isMissing = (error: unknown) => (error as NodeJS.ErrnoException | undefined)?.code === "ENOENT";

export class Launchers {
  private readonly podsDir: string;
  private readonly log: Logger;
  private readonly clients = new Map<string, Promise<LauncherClient>>();
  private readonly watchers = new Map<string, FSWatcher>();

  constructor(podsDir: string, log: Logger) {
    this.podsDir = podsDir;
    this.log = log;
  }

  get(podUid: string): Promise<LauncherClient> {
    let client = this.clients.get(podUid);
    if (!client) {
      client = (async () => {
        const socket = await openPodSocket(this.podsDir, podUid, SocketName.Launcher).catch((error: unknown) => {
          if (isMissing(error))
            throw new LauncherNotListeningError(
              `the launcher has not opened its socket yet: ${error instanceof Error ? error.message : String(error)}`,
              { cause: error },
            );
          throw new LauncherUnreachableError(
            `the launcher's socket cannot be used: ${error instanceof Error ? error.message : String(error)}`,
            { cause: error },
          );
        });
        let connected: LauncherClient;
        try {
          connected = await LauncherClient.connect(socket.path);
        } finally {
          await socket.close();
        }
        connected.onClose(() => this.clients.delete(podUid));
        this.log.info("connected to a launcher", { pod: podUid, protocolVersion: connected.version });
        return connected;
      })();
      client.catch(() => this.clients.delete(podUid));
      this.clients.set(podUid, client);
    }
    return client;
  }

  /**
   * Calls `appeared` once something is created in the pod's sockets volume (the launcher's socket, normally), by
   * inotify on that folder; a second call for the same pod while it waits does nothing. The folder is checked as any
   * path into a pod is (no symlink on the way); nothing in it is opened here. Ends with forget, or the first event.
   */
  async whenSocketAppears(podUid: string, appeared: () => void): Promise<void> {
    if (this.watchers.has(podUid)) return;
    const dir = podVolumePath(this.podsDir, podUid, "");
    await verifyPodVolumePath(this.podsDir, dir, "directory");
    if (this.watchers.has(podUid)) return;
    const watcher = watch(dir, { persistent: false }, (_, name) => {
      if (name !== SocketName.Launcher) return;
      this.stopWatching(podUid);
      appeared();
    });
    watcher.on("error", (error) => {
      this.log.warn("could not watch a launcher's sockets folder", { pod: podUid, error });
      this.stopWatching(podUid);
    });
    this.watchers.set(podUid, watcher);
    this.log.info("waiting for the launcher to open its socket", { pod: podUid });
    // The socket may have come between the caller's attempt and the watch.
    if (
      await lstat(podVolumePath(this.podsDir, podUid, SocketName.Launcher)).then(
        () => true,
        () => false,
      )
    ) {
      this.stopWatching(podUid);
      appeared();
    }
  }

  private stopWatching(podUid: string): void {
    this.watchers.get(podUid)?.close();
    this.watchers.delete(podUid);
  }

  forget(podUid: string): void {
    this.stopWatching(podUid);
    void this.clients.get(podUid)?.then((c) => {
      c.close();
    });
    this.clients.delete(podUid);
  }

  closeAll(): void {
    for (const uid of new Set([...this.clients.keys(), ...this.watchers.keys()])) this.forget(uid);
  }
}
