import { type StartedPrometheus, startPrometheus } from "@kubevirt-ts/control-plane";
import { KUBECONFIG_PATH, NAMESPACE } from "@kubevirt-ts/local-cluster";
import { core } from "./cluster.ts";
import { scraperToken } from "./metrics.ts";

// A Prometheus of a user's kind beside the local cluster: no operator, the
// chart's plain rules file (the ConfigMap kubevirt-ts-prometheus-rules) in its
// rule_files, and a scrape job as the chart's rules ask of one (the namespace
// and pod labels kept): each component pod's ops port, found through the API
// server, read with the scraper account's token as the ServiceMonitor sends
// it. It runs on the node, where pod addresses are routed.
//
// One change to the rules: each alert's `for:` is dropped, so that it fires
// at its first evaluation instead of after KubeVirt's 10 minutes or 24 hours.
// What is proven here is that the expressions hold on the cluster's live
// series; the durations are the chart tests' (promtool test rules).

const RULES_CONFIG_MAP = "kubevirt-ts-prometheus-rules";
const RULES_KEY = "kubevirt-ts.rules.yaml";

/** Scrapes and rule evaluations every 2 s: an alert follows the cluster within a few seconds. */
const INTERVAL = "2s";

/** The chart's rules as installed, every alert's `for:` left out. */
export async function installedRulesWithoutFor(): Promise<string> {
  const map = await core.readNamespacedConfigMap({ name: RULES_CONFIG_MAP, namespace: NAMESPACE });
  const rules = map.data?.[RULES_KEY];
  if (!rules)
    throw new Error(
      `the ConfigMap ${NAMESPACE}/${RULES_CONFIG_MAP} has no ${RULES_KEY}: see that the chart installed it`,
    );
  return rules.replace(/^\s+for: \S+\n/gm, "");
}

export async function startClusterPrometheus(): Promise<StartedPrometheus> {
  const config = `global:
  scrape_interval: ${INTERVAL}
  evaluation_interval: ${INTERVAL}
rule_files: [rules.yaml]
scrape_configs:
  - job_name: kubevirt-ts
    honor_labels: true
    authorization: { type: Bearer, credentials_file: token }
    kubernetes_sd_configs:
      - role: pod
        kubeconfig_file: ${JSON.stringify(KUBECONFIG_PATH)}
        namespaces: { names: [${JSON.stringify(NAMESPACE)}] }
    relabel_configs:
      - source_labels: [__meta_kubernetes_pod_label_kubevirt_io]
        regex: virt-api|virt-controller|virt-handler
        action: keep
      - source_labels: [__meta_kubernetes_pod_container_port_name]
        regex: ops
        action: keep
      - { source_labels: [__meta_kubernetes_namespace], target_label: namespace }
      - { source_labels: [__meta_kubernetes_pod_name], target_label: pod }
`;
  return startPrometheus({
    config,
    files: { "rules.yaml": await installedRulesWithoutFor(), token: await scraperToken() },
  });
}

/** The state of an alert now: "firing", "pending", or "inactive" when Prometheus has no such alert active. */
export async function alertState(prometheus: StartedPrometheus, alert: string): Promise<string> {
  return (await prometheus.alerts()).find((a) => a.labels.alertname === alert)?.state ?? "inactive";
}
