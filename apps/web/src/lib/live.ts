"use client";

import type { WatchMessage } from "@kubevirt-ts/api/router";
import type { VirtualMachine, VirtualMachineInstance } from "@kubevirt-ts/kubevirt-api";
import { useSubscription } from "@trpc/tanstack-react-query";
import { useReducer } from "react";
import { endSessionIfRefused, useTRPC } from "./trpc";

// A namespace's VMs and VMIs (or every namespace's) kept current from the API's list-then-watch
// streams: the list replaces what is known, each change updates it. The
// stream resumes by itself after a dropped connection, from the last version
// it saw; one the cluster refuses for the token ends the session.

type Message<T> = WatchMessage<T>;
interface Named {
  metadata: { name?: string; namespace?: string };
}

/** How the live maps key an object: namespace/name, so one map can hold every namespace's. */
export const vmKey = (namespace: string, name: string): string => `${namespace}/${name}`;
const keyOf = (object: Named): string => vmKey(object.metadata.namespace ?? "", object.metadata.name ?? "");

export function applyMessage<T extends Named>(current: Map<string, T>, message: Message<T>): Map<string, T> {
  if (message.type === "LIST") return new Map(message.items.map((item) => [keyOf(item), item]));
  const next = new Map(current);
  if (message.type === "DELETED") next.delete(keyOf(message.object));
  else next.set(keyOf(message.object), message.object);
  return next;
}

interface Collection<T> {
  items: Map<string, T>;
  loaded: boolean;
}

function reduce<T extends Named>(current: Collection<T>, message: Message<T>): Collection<T> {
  return { items: applyMessage(current.items, message), loaded: current.loaded || message.type === "LIST" };
}

const reduceVms = (current: Collection<VirtualMachine>, message: Message<VirtualMachine>): Collection<VirtualMachine> =>
  reduce(current, message);
const reduceVmis = (
  current: Collection<VirtualMachineInstance>,
  message: Message<VirtualMachineInstance>,
): Collection<VirtualMachineInstance> => reduce(current, message);

export interface LiveVms {
  /** Keyed by vmKey(namespace, name). */
  vms: Map<string, VirtualMachine>;
  vmis: Map<string, VirtualMachineInstance>;
  /** Both lists have arrived. */
  loaded: boolean;
  error: unknown;
  reconnecting: boolean;
}

/**
 * The namespace's VMs and VMIs, live; every namespace's without one. Give the calling component a key per namespace, so
 * a new one starts afresh.
 */
export function useLiveVms(namespace: string | undefined): LiveVms {
  const trpc = useTRPC();
  const [vms, onVm] = useReducer(reduceVms, { items: new Map<string, VirtualMachine>(), loaded: false });
  const [vmis, onVmi] = useReducer(reduceVmis, { items: new Map<string, VirtualMachineInstance>(), loaded: false });
  const vmStream = useSubscription(
    trpc.vms.watch.subscriptionOptions(namespace === undefined ? {} : { namespace }, {
      onData: (envelope) => {
        onVm(envelope.data);
      },
      onError: endSessionIfRefused,
    }),
  );
  const vmiStream = useSubscription(
    trpc.vmis.watch.subscriptionOptions(namespace === undefined ? {} : { namespace }, {
      onData: (envelope) => {
        onVmi(envelope.data);
      },
      onError: endSessionIfRefused,
    }),
  );
  const failed = [vmStream, vmiStream].find((s) => s.status === "error");
  return {
    vms: vms.items,
    vmis: vmis.items,
    loaded: vms.loaded && vmis.loaded,
    error: failed?.error ?? null,
    reconnecting: [vmStream, vmiStream].some((s) => s.status === "connecting" && vms.loaded),
  };
}
