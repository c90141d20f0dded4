import { setTimeout as sleep } from "node:timers/promises";
import type { Logger } from "@kubevirt-ts/runtime";
import { aborted } from "../abort.ts";
import { isConflict, isNotFound } from "../client/errors.ts";
import { resources } from "../client/resources.ts";
import type { KubeClient } from "../client/rest.ts";
import type { KubeObject } from "../client/types.ts";

// Leader election on a coordination.k8s.io Lease, as client-go's: one replica
// holds the lease and renews it; the others take it over once it has not been
// renewed for leaseDuration. Every write carries the resourceVersion it read,
// so two candidates never both win.

interface Lease extends KubeObject {
  spec: {
    holderIdentity?: string | null;
    leaseDurationSeconds?: number;
    acquireTime?: string | null;
    renewTime?: string | null;
    leaseTransitions?: number;
  };
}

export interface LeaderElectionOptions {
  client: KubeClient;
  log: Logger;
  namespace: string;
  name: string;
  identity: string;
  leaseDurationMs?: number;
  renewDeadlineMs?: number;
  retryPeriodMs?: number;
  now?: () => Date;
}

export interface LeaderCallbacks {
  /** Runs while leading; the signal aborts when leadership is lost or the elector stops. */
  onStartedLeading(signal: AbortSignal): Promise<void> | void;
  onStoppedLeading?(): void;
}

const micro = (date: Date) => date.toISOString().replace("Z", "000Z");

export class LeaderElector {
  private readonly o: Required<Omit<LeaderElectionOptions, "client" | "log">> &
    Pick<LeaderElectionOptions, "client" | "log">;

  constructor(options: LeaderElectionOptions) {
    this.o = {
      leaseDurationMs: 15_000,
      renewDeadlineMs: 10_000,
      retryPeriodMs: 2_000,
      now: () => new Date(),
      ...options,
    };
  }

  /** One attempt to take or renew the lease; true when this candidate holds it afterwards. */
  async tryAcquireOrRenew(): Promise<boolean> {
    const { client, namespace, name, identity, leaseDurationMs } = this.o;
    const now = this.o.now();
    let lease: Lease;
    try {
      lease = await client.get<Lease>(resources.leases, namespace, name);
    } catch (error) {
      if (!isNotFound(error)) throw error;
      try {
        await client.create<Lease>(resources.leases, namespace, {
          apiVersion: "coordination.k8s.io/v1",
          kind: "Lease",
          metadata: { name, namespace },
          spec: {
            holderIdentity: identity,
            leaseDurationSeconds: leaseDurationMs / 1000,
            acquireTime: micro(now),
            renewTime: micro(now),
            leaseTransitions: 0,
          },
        });
        return true;
      } catch (createError) {
        if (isConflict(createError)) return false;
        throw createError;
      }
    }
    const holder = lease.spec.holderIdentity ?? "";
    const renewed = lease.spec.renewTime ? Date.parse(lease.spec.renewTime) : 0;
    const duration = (lease.spec.leaseDurationSeconds ?? leaseDurationMs / 1000) * 1000;
    if (holder !== "" && holder !== identity && renewed + duration > now.getTime()) return false;
    const takingOver = holder !== identity;
    try {
      await client.update<Lease>(resources.leases, {
        ...lease,
        spec: {
          ...lease.spec,
          holderIdentity: identity,
          leaseDurationSeconds: leaseDurationMs / 1000,
          renewTime: micro(now),
          acquireTime: takingOver ? micro(now) : lease.spec.acquireTime,
          leaseTransitions: (lease.spec.leaseTransitions ?? 0) + (takingOver ? 1 : 0),
        },
      });
      return true;
    } catch (error) {
      if (isConflict(error)) return false;
      throw error;
    }
  }

  /** Gives the lease up so that another replica takes over at once. */
  private async release(): Promise<void> {
    const { client, namespace, name, identity } = this.o;
    try {
      const lease = await client.get<Lease>(resources.leases, namespace, name);
      if (lease.spec.holderIdentity !== identity) return;
      await client.update<Lease>(resources.leases, {
        ...lease,
        spec: { ...lease.spec, holderIdentity: null, leaseDurationSeconds: 1, renewTime: micro(this.o.now()) },
      });
    } catch (error) {
      this.o.log.warn("could not release the leader lease", { error });
    }
  }

  private async attempt(): Promise<boolean> {
    try {
      return await this.tryAcquireOrRenew();
    } catch (error) {
      this.o.log.warn("leader election request failed", { error });
      return false;
    }
  }

  /** Campaigns until elected, leads until the lease is lost or the signal aborts, then returns. */
  async run(callbacks: LeaderCallbacks, signal: AbortSignal): Promise<void> {
    const { log, retryPeriodMs, renewDeadlineMs, identity, name } = this.o;
    while (!signal.aborted && !(await this.attempt()))
      await sleep(retryPeriodMs, undefined, { signal }).catch(() => undefined);
    if (aborted(signal)) return;
    log.info("became the leader", { lease: name, identity });
    const leadership = new AbortController();
    const stop = () => {
      leadership.abort();
    };
    signal.addEventListener("abort", stop, { once: true });
    const work = Promise.resolve(callbacks.onStartedLeading(leadership.signal));
    let lastRenew = Date.now();
    while (!leadership.signal.aborted) {
      await sleep(retryPeriodMs, undefined, { signal: leadership.signal }).catch(() => undefined);
      if (aborted(leadership.signal)) break;
      if (await this.attempt()) lastRenew = Date.now();
      else if (Date.now() - lastRenew > renewDeadlineMs) {
        log.error("lost the leader lease", { lease: name, identity });
        leadership.abort();
      }
    }
    signal.removeEventListener("abort", stop);
    await work;
    if (aborted(signal)) await this.release();
    callbacks.onStoppedLeading?.();
  }
}
