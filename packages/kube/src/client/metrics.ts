import { Counter, Histogram, type Registry } from "prom-client";

/** REST request metrics, named like KubeVirt's so its dashboards and alerts carry over. */
export interface RestClientMetrics {
  observe(labels: { verb: string; method: string; resource: string; code: string }, seconds: number): void;
}

export function createRestClientMetrics(registry: Registry): RestClientMetrics {
  const requests = new Counter({
    name: "kubevirt_rest_client_requests_total",
    help: "Requests to the Kubernetes API server, by Kubernetes verb, HTTP method, resource and status code.",
    labelNames: ["verb", "method", "resource", "code"] as const,
    registers: [registry],
  });
  const latency = new Histogram({
    name: "kubevirt_rest_client_request_latency_seconds",
    help: "Latency of requests to the Kubernetes API server, by verb and resource.",
    labelNames: ["verb", "resource"] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  return {
    observe(labels, seconds) {
      requests.inc(labels);
      latency.observe({ verb: labels.verb, resource: labels.resource }, seconds);
    },
  };
}
