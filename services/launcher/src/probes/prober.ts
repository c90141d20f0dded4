import { request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";
import { type Socket, connect } from "node:net";
import {
  type ProbeCheck,
  type ProbeKind,
  type VirtualMachineInstance,
  probeCheck,
  probeOf,
  probeTiming,
} from "@kubevirt-ts/kubevirt-api";
import type { DomainStatus } from "@kubevirt-ts/launcher-protocol";
import type { Logger } from "@kubevirt-ts/runtime";

// The launcher's side of a VMI's probes (kubevirt-api's probes.ts): the
// kubelet asks on its schedule, and the prober checks the guest once per
// ask, within the probe's timeout, as KubeVirt's virt-probe does for exec
// and agent pings and the kubelet does for HTTP and TCP. Anyone who reaches
// the pod can ask too, so the guest is checked at most once per the probe's
// periodSeconds: an ask sooner gets the last check's answer.

/** What the prober needs of the domain and its guest. */
export interface GuestAccess {
  /** The VMI the domain runs, once the handler has sent it. */
  vmi(): VirtualMachineInstance | undefined;
  state(): Promise<DomainStatus>;
  /** The guest's address on the pod-network interface's bridge, which the launcher reaches directly. */
  guestAddress(): string;
  /** A command's `return` from the guest's QEMU agent; fails when the agent does not answer within the timeout. */
  agent(execute: string, args: Record<string, unknown> | undefined, timeoutSeconds: number): Promise<unknown>;
}

/**
 * How long past its timeout a check may take before it is taken for stalled (a libvirt or monitor call that does not
 * return).
 */
const STALLED_MS = 30_000;

/** How often an exec probe looks at its command while it waits. */
const POLL_MS = 50;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The share of a probe's period an ask may come early and still be checked: the kubelet's timer asks a few
 * milliseconds late one time and on time the next, and such an ask must not get the previous period's answer.
 */
const PERIOD_SLACK = 0.1;

/** The least time between two checks of the guest for a probe of that period. */
export function checkInterval(periodSeconds: number): number {
  return periodSeconds * 1000 * (1 - PERIOD_SLACK);
}

/** Why a check failed, as the kubelet's events and the VMI's reason show it. */
class ProbeFailure extends Error {}

export class Prober {
  private readonly guest: GuestAccess;
  private readonly log: Logger;
  /** Each kind's check under way: a second ask while one runs gets its answer. */
  private readonly running = new Map<ProbeKind, Promise<string | undefined>>();
  /** Each kind's last check: when it began and what it found, the answer to asks before the probe's next period. */
  private readonly last = new Map<ProbeKind, { startedAt: number; result: string | undefined }>();
  private readonly now: () => number;
  /**
   * The liveness probe's failures in a row, and the last one's reason: the kubelet stops the launcher at the threshold.
   */
  private livenessFailures = { count: 0, reason: "" };

  constructor(guest: GuestAccess, log: Logger, options: { now?: () => number } = {}) {
    this.guest = guest;
    this.log = log;
    this.now = options.now ?? Date.now;
  }

  /**
   * Why the liveness probe failed, once it has failed as many times in a row as its failureThreshold; else undefined.
   */
  livenessFailure(): string | undefined {
    const probe = this.guest.vmi()?.spec.livenessProbe;
    if (!probe || this.livenessFailures.count < probeTiming(probe).failureThreshold) return undefined;
    return this.livenessFailures.reason;
  }

  /**
   * Checks the guest for the VMI's probe of that kind: undefined when it passes, else why it fails. An ask while a
   * check runs gets its answer, and one within the probe's period of the last check's start gets the last answer.
   */
  check(kind: ProbeKind): Promise<string | undefined> {
    let run = this.running.get(kind);
    if (run) return run;
    const vmi = this.guest.vmi();
    const probe = vmi ? probeOf(vmi.spec, kind) : undefined;
    const last = this.last.get(kind);
    if (probe && last && this.now() - last.startedAt < checkInterval(probeTiming(probe).periodSeconds))
      return Promise.resolve(last.result);
    run = this.checkOnce(kind).finally(() => this.running.delete(kind));
    this.running.set(kind, run);
    return run;
  }

  private async checkOnce(kind: ProbeKind): Promise<string | undefined> {
    const startedAt = this.now();
    const { result, checkedGuest } = await this.judge(kind);
    // Only a check that reached the guest counts against the period: an answer about its state alone (not started,
    // paused, stopped) costs the guest nothing, and the next ask sees a change at once.
    if (checkedGuest) this.last.set(kind, { startedAt, result });
    else this.last.delete(kind);
    if (kind === "liveness") {
      if (result !== undefined && this.livenessFailures.count === 0)
        this.log.warn("the guest failed its liveness probe", { reason: result });
      this.livenessFailures =
        result === undefined ? { count: 0, reason: "" } : { count: this.livenessFailures.count + 1, reason: result };
    }
    return result;
  }

  /** Why the guest fails the probe (undefined: it passes), and whether the guest itself was checked to know. */
  private async judge(kind: ProbeKind): Promise<{ result: string | undefined; checkedGuest: boolean }> {
    const unchecked = (result: string | undefined) => ({ result, checkedGuest: false });
    const vmi = this.guest.vmi();
    const probe = vmi ? probeOf(vmi.spec, kind) : undefined;
    // Before the handler sent the VMI there is no guest to judge: not ready, and not dead either.
    if (!vmi || !probe) return unchecked(kind === "readiness" ? "the guest has not started yet" : undefined);
    const deadline = Date.now() + probeTiming(probe).timeoutSeconds * 1000;
    const { state } = await beforeDeadline(this.guest.state(), deadline);
    if (state === "NoDomain") return unchecked(kind === "readiness" ? "the guest has not started yet" : undefined);
    // A guest its user paused answers nothing, and is not dead for it.
    if (state === "Paused") return unchecked(kind === "readiness" ? "the guest is paused" : undefined);
    // A guest that has stopped is ending its launcher anyway: that is no liveness failure to report.
    if (state !== "Running" && state !== "Blocked")
      return unchecked(kind === "readiness" ? `the guest is ${state}` : undefined);
    const check = probeCheck(vmi.spec, probe);
    try {
      // Each check keeps its timeout itself (the kubelet gives up a second later); should libvirt or QEMU's monitor
      // stall, the check fails some time after, so that it is never shared by every later ask for ever.
      await beforeDeadline(this.run(check, deadline), deadline + STALLED_MS);
      return { result: undefined, checkedGuest: true };
    } catch (error) {
      return {
        result: `${describe(check)}: ${error instanceof Error ? error.message : String(error)}`,
        checkedGuest: true,
      };
    }
  }

  private run(check: ProbeCheck, deadline: number): Promise<void> {
    switch (check.kind) {
      case "tcp":
        return this.tcp(check.port, deadline);
      case "http":
        return this.http(check, deadline);
      case "exec":
        return this.exec(check.command, deadline);
      case "guestAgentPing":
        return this.guest.agent("guest-ping", undefined, secondsLeft(deadline)).then(() => undefined);
    }
  }

  /** A TCP probe, as the kubelet's: the guest accepts a connection to its port in time. */
  private async tcp(port: number, deadline: number): Promise<void> {
    const socket: Socket = connect({ host: this.guest.guestAddress(), port });
    try {
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(
          () => {
            reject(new ProbeFailure("the guest did not accept the connection in time"));
          },
          Math.max(1, deadline - Date.now()),
        );
        socket.once("connect", () => {
          clearTimeout(timer);
          resolve();
        });
        socket.once("error", (error: NodeJS.ErrnoException) => {
          clearTimeout(timer);
          reject(
            new ProbeFailure(
              error.code === "ECONNREFUSED" ? "the guest refused the connection" : `no connection (${error.message})`,
            ),
          );
        });
      });
    } finally {
      socket.destroy();
    }
  }

  /**
   * An HTTP probe, as the kubelet's: a GET whose status from 200 to 399 passes; HTTPS without checking the certificate.
   */
  private async http(check: Extract<ProbeCheck, { kind: "http" }>, deadline: number): Promise<void> {
    const host = this.guest.guestAddress();
    const request = check.scheme === "HTTPS" ? httpsRequest : httpRequest;
    const headers: Record<string, string> = { "user-agent": "kube-probe/kubevirt-ts", accept: "*/*" };
    for (const header of check.headers) headers[header.name.toLowerCase()] = header.value;
    const status = await new Promise<number>((resolve, reject) => {
      const req = request(
        {
          host,
          port: check.port,
          path: check.path,
          method: "GET",
          headers,
          rejectUnauthorized: false,
          signal: AbortSignal.timeout(Math.max(1, deadline - Date.now())),
        },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.on("error", (error) => {
        reject(
          new ProbeFailure(
            error.name === "AbortError" ? "the guest did not answer in time" : `no answer (${error.message})`,
          ),
        );
      });
      req.end();
    });
    if (status < 200 || status >= 400) throw new ProbeFailure(`HTTP ${String(status)}`);
  }

  /**
   * An exec probe, as KubeVirt's virt-probe: the guest's agent runs the command, which must exit 0 within the timeout.
   */
  private async exec(command: string[], deadline: number): Promise<void> {
    const [path = "", ...arg] = command;
    const started = await this.guest.agent("guest-exec", { path, arg, "capture-output": true }, secondsLeft(deadline));
    const pid = (started as { pid?: unknown } | undefined)?.pid;
    if (typeof pid !== "number") throw new ProbeFailure("the guest agent did not start the command");
    while (Date.now() < deadline) {
      const status = (await this.guest.agent("guest-exec-status", { pid }, secondsLeft(deadline))) as
        { exited?: boolean; exitcode?: number; "err-data"?: string } | undefined;
      if (status?.exited) {
        if (status.exitcode === 0) return;
        const stderr = status["err-data"]
          ? Buffer.from(status["err-data"], "base64").toString("utf8").trim().slice(0, 200)
          : "";
        throw new ProbeFailure(`exited ${String(status.exitcode ?? "abnormally")}${stderr ? `: ${stderr}` : ""}`);
      }
      await sleep(POLL_MS);
    }
    throw new ProbeFailure("the command did not finish in time");
  }
}

/** The promise's outcome, or a failure at the deadline if it has none by then. */
function beforeDeadline<T>(promise: Promise<T>, deadline: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => {
        reject(new ProbeFailure("no answer in time"));
      },
      Math.max(0, deadline - Date.now()),
    );
  });
  return Promise.race([promise, late]).finally(() => {
    clearTimeout(timer);
  });
}

/** Whole seconds until the deadline, at least one (the agent's timeout is in seconds). */
const secondsLeft = (deadline: number) => Math.max(1, Math.ceil((deadline - Date.now()) / 1000));

function describe(check: ProbeCheck): string {
  switch (check.kind) {
    case "tcp":
      return `tcp port ${String(check.port)}`;
    case "http":
      return `${check.scheme.toLowerCase()} GET port ${String(check.port)}${check.path}`;
    case "exec":
      return `exec ${JSON.stringify(check.command)}`;
    case "guestAgentPing":
      return "guest agent ping";
  }
}
