"use client";

import { useQuery } from "@tanstack/react-query";
import Link from "next/link";
import { describeError, useTRPC } from "../../lib/trpc";
import { CpuMeter, MemoryMeter, cores, gib } from "../ui/meter";
import { Shell, useNamespace } from "../vms/shell";

// The cluster's nodes: ready or not, whether new VMs may be placed there,
// CPU and memory as capacity, what pods may have (allocatable) and what the
// pods there ask for, and the VMs running on each, linked both ways with
// the VMs' pages.

export function NodesView() {
  const trpc = useTRPC();
  const namespace = useNamespace();
  const nodes = useQuery({ ...trpc.nodes.queryOptions({ namespace }), refetchInterval: 10_000 });
  return (
    <Shell title="Nodes">
      {nodes.error && (
        <p className="error" role="alert">
          {describeError(nodes.error).message}
        </p>
      )}
      {!nodes.data ? (
        !nodes.error && <p aria-live="polite">Loading…</p>
      ) : (
        <>
          {nodes.data.vmsOf !== null && (
            <p className="muted">
              You may not list VMs in every namespace: the VMs shown are those of {nodes.data.vmsOf}.
            </p>
          )}
          <div className="node-list">
            {nodes.data.nodes.map((n) => (
              <section
                key={n.name}
                id={`node-${n.name}`}
                className="card node"
                aria-labelledby={`node-title-${n.name}`}
                data-testid="node"
              >
                <h2 id={`node-title-${n.name}`}>{n.name}</h2>
                <p>
                  <span className={`status status-${n.ready ? "running" : "problem"}`}>
                    {n.ready ? "Ready" : "Not ready"}
                  </span>
                  {!n.schedulable && (
                    <span className="status status-paused"> Cordoned: no new VMs are placed here</span>
                  )}
                  {n.roles.length > 0 && <span className="muted"> · {n.roles.join(", ")}</span>}
                  {n.address && <span className="muted"> · {n.address}</span>}
                </p>
                <dl className="facts">
                  <dt>CPU</dt>
                  <dd>
                    {cores(n.capacity.cpu)} cores, {cores(n.allocatable.cpu)} for pods
                  </dd>
                  <dt>Memory</dt>
                  <dd>
                    {gib(n.capacity.memory)}, {gib(n.allocatable.memory)} for pods
                  </dd>
                </dl>
                {n.requested ? (
                  <>
                    <CpuMeter used={n.requested.cpu} total={n.allocatable.cpu} />
                    <MemoryMeter used={n.requested.memory} total={n.allocatable.memory} />
                    <p className="muted">
                      {n.requested.pods} pods. A VM fits when its launcher&apos;s requests fit in what is left.
                    </p>
                  </>
                ) : (
                  <p className="muted">
                    What the pods here request is not shown: it takes list on pods in every namespace.
                  </p>
                )}
                <h3>Virtual machines here ({n.vms.length})</h3>
                {n.vms.length === 0 ? (
                  <p className="muted">None.</p>
                ) : (
                  <ul data-testid="node-vms">
                    {n.vms.map((v) => (
                      <li key={`${v.namespace}/${v.name}`}>
                        <Link
                          href={
                            `/vms/${encodeURIComponent(v.namespace)}/${encodeURIComponent(v.name)}?ns=` +
                            encodeURIComponent(v.namespace)
                          }
                        >
                          {v.name}
                        </Link>
                        <span className="muted">
                          {" "}
                          in {v.namespace}, {v.phase}
                        </span>
                      </li>
                    ))}
                  </ul>
                )}
              </section>
            ))}
          </div>
        </>
      )}
    </Shell>
  );
}
