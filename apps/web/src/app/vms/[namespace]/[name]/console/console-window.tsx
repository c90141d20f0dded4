"use client";

import { availableActions } from "@kubevirt-ts/vm-rules";
import { useQuery } from "@tanstack/react-query";
import Link from "next/link";
import { useSearchParams } from "next/navigation";
import { useLiveVms, vmKey } from "../../../../../lib/live";
import { useTRPC } from "../../../../../lib/trpc";
import { StatusBadge } from "../../../../ui/status-badge";
import { ConsolePanel } from "../console-panel";

// A VM's serial console or display in a window of its own (the pop-out):
// the console and the VM's status, nothing else, so it can sit beside the
// dashboard or on another screen.

export function ConsoleWindow({ namespace, name }: { namespace: string; name: string }) {
  const trpc = useTRPC();
  const kind = useSearchParams().get("kind") === "vnc" ? "vnc" : "console";
  const live = useLiveVms(namespace);
  const permissions = useQuery(trpc.permissions.queryOptions({ namespace }));
  const vm = live.vms.get(vmKey(namespace, name));
  const vmi = live.vmis.get(vmKey(namespace, name));
  const state = vm ? availableActions(vm, vmi)[kind] : undefined;
  return (
    <main className="console-window">
      <header className="toolbar">
        <h1>{name}</h1>
        {vm && <StatusBadge printableStatus={vm.status?.printableStatus} />}
        <span className="spacer" />
        <Link
          href={`/vms/${encodeURIComponent(namespace)}/${encodeURIComponent(name)}?ns=${encodeURIComponent(namespace)}`}
          target="_blank"
        >
          The VM&apos;s page
        </Link>
      </header>
      {!vm ? (
        <p aria-live="polite">{live.loaded ? `There is no VM ${name} in ${namespace}.` : "Loading…"}</p>
      ) : (
        <ConsolePanel
          kind={kind}
          namespace={namespace}
          name={name}
          node={vmi?.status?.nodeName}
          permission={permissions.data?.[kind]}
          state={state}
        />
      )}
    </main>
  );
}
