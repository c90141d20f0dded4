import { type ChildProcess, spawn } from "node:child_process";
import { LineReader } from "@kubevirt-ts/launcher-protocol";
import type { Logger } from "@kubevirt-ts/runtime";

// libvirt's domain events, as KubeVirt's launcher takes them from libvirt to
// push its domain's changes to its handler. The binding has no event API:
// one long-lived `virsh event --all --loop` per launcher prints each event
// as a line, which is read bounded; it is started again if it ends, and
// ends with the launcher. Between events, nothing runs.

/** The longest event line read: virsh's are about a hundred bytes; a longer one ends the child, which starts again. */
export const MAX_EVENT_LINE_BYTES = 4096;
/** How long to wait before starting virsh again after it ended. */
const RESTART_MS = 1_000;

/** The events that change what the launcher reports of its domain. */
const STATUS_EVENTS = new Set(["lifecycle", "reboot", "agent-lifecycle", "control-error", "job-completed"]);

export interface DomainEvent {
  /** libvirt's event type as virsh names it: lifecycle, reboot, agent-lifecycle, … */
  type: string;
  domain: string;
  /** What follows, as virsh prints it: "Stopped Shutdown", "state: 'connected' reason: 'channel event'". */
  detail: string;
}

/** One line of `virsh event`: `event 'lifecycle' for domain 'ns_name': Stopped Shutdown`; undefined for any other. */
export function parseEventLine(line: string): DomainEvent | undefined {
  // A job-completed line ends in a colon: its parameters follow on lines of their own.
  const match = /^event '([a-z0-9-]+)' for domain '(.*?)'(?::\s*(.*))?$/.exec(line.trim());
  if (!match) return undefined;
  return { type: match[1] ?? "", domain: match[2] ?? "", detail: match[3] ?? "" };
}

/** Whether an event may change the domain's status as the launcher reports it. */
export function changesStatus(event: DomainEvent): boolean {
  return STATUS_EVENTS.has(event.type);
}

export class DomainEvents {
  private readonly o: { uri: string; onEvent: (event: DomainEvent) => void; log: Logger };
  private child: ChildProcess | undefined;
  private restart: NodeJS.Timeout | undefined;
  private closed = false;
  private readonly killOnExit = () => {
    this.child?.kill("SIGKILL");
  };

  constructor(options: { uri: string; onEvent: (event: DomainEvent) => void; log: Logger }) {
    this.o = options;
    process.once("exit", this.killOnExit);
    this.start();
  }

  /** Whether virsh runs now (the events are followed). */
  get following(): boolean {
    return this.child !== undefined;
  }

  private start(): void {
    if (this.closed) return;
    const child = spawn("virsh", ["-c", this.o.uri, "event", "--all", "--loop"], { stdio: ["ignore", "pipe", "pipe"] });
    this.child = child;
    const lines = new LineReader(MAX_EVENT_LINE_BYTES);
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => {
      let received: string[];
      try {
        received = lines.push(chunk);
      } catch (error) {
        this.o.log.warn("libvirt's event stream is not followable; starting virsh again", { error });
        child.kill("SIGKILL");
        return;
      }
      for (const line of received) {
        const event = parseEventLine(line);
        if (event) this.o.onEvent(event);
      }
    });
    // What virsh says when it fails, for the log: its last 1 KiB.
    child.stderr.setEncoding("utf8").on("data", (text: string) => {
      stderr = (stderr + text).slice(-1024);
    });
    child.on("error", (error) => {
      this.o.log.warn("could not run virsh to follow libvirt's events", { error });
    });
    child.on("close", (code, signal) => {
      if (this.child === child) this.child = undefined;
      if (this.closed) return;
      this.o.log.warn("virsh stopped following libvirt's events; starting it again", {
        code,
        signal,
        stderr: stderr.trim(),
      });
      this.restart = setTimeout(() => {
        this.start();
      }, RESTART_MS);
    });
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.restart);
    process.off("exit", this.killOnExit);
    this.child?.kill("SIGKILL");
    this.child = undefined;
  }
}
