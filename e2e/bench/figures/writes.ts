import type { Row } from "../results.ts";
import type { WriteCounters } from "../cluster.ts";

// Writes per VMI from the counters' deltas over a figure: the API server's
// (every client) and our components' own (kubevirt_rest_client_requests_total).

const INTERESTING = /virtualmachineinstances|virtualmachines|pods|events/;

const perVmi = (writes: Map<string, number>, count: number, keep: (key: string) => boolean) =>
  Object.fromEntries(
    [...writes]
      .filter(([key]) => keep(key))
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([key, value]) => [key, value / count]),
  );

export function writeRows(prefix: string, label: string, writes: WriteCounters, count: number): Row[] {
  const toVmis = (counters: Map<string, number>) =>
    [...counters].filter(([key]) => / virtualmachineinstances(\/|$)/.test(key)).reduce((sum, [, v]) => sum + v, 0);
  const vmiWrites = toVmis(writes.apiserver);
  return [
    {
      id: `${prefix}.vmi-writes`,
      figure: `${label}: writes to VMIs per VMI`,
      unit: "writes/VMI",
      values: { value: vmiWrites / count },
      method:
        "kube-apiserver apiserver_request_total, POST/PUT/PATCH/DELETE on " +
        "virtualmachineinstances (any subresource), delta over the figure ÷ VMIs",
    },
    {
      // The figure (10 before: 8 status PUTs, 2 PATCHes) counts these: what kubevirt-ts writes, not the user's
      // create.
      id: `${prefix}.vmi-writes-ours`,
      figure: `${label}: kubevirt-ts's writes to VMIs per VMI (the user's create left out)`,
      unit: "writes/VMI",
      values: { value: toVmis(writes.components) / count },
      method:
        "kubevirt_rest_client_requests_total delta on the controller replicas' and handlers' /metrics, " +
        "writes to virtualmachineinstances (any subresource) ÷ VMIs",
    },
    {
      id: `${prefix}.apiserver-writes`,
      figure: `${label}: API server writes per VMI, by verb and resource`,
      unit: "writes/VMI",
      values: perVmi(writes.apiserver, count, (key) => INTERESTING.test(key)),
      method: "apiserver_request_total delta (every client), VMI/VM/pod/event resources only, ÷ VMIs",
    },
    {
      id: `${prefix}.component-writes`,
      figure: `${label}: our components' writes per VMI, by verb and resource`,
      unit: "writes/VMI",
      values: perVmi(writes.components, count, () => true),
      method:
        "kubevirt_rest_client_requests_total delta on the controller replicas' and " +
        "handlers' /metrics (ops ports 9100, 9101), ÷ VMIs",
    },
  ];
}
