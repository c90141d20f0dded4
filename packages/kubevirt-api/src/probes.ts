import { LAUNCHER_OPS_PORT, LAUNCHER_OPS_PORT_NAME, podNetworkPorts } from "./pod-network.ts";
import type { Probe, VirtualMachineInstance } from "./schema/vmi.ts";

// A VMI's liveness and readiness probes, as KubeVirt runs them: the kubelet
// keeps each probe's schedule on the launcher container (delay, period,
// timeout, thresholds), so that a failing liveness probe stops the launcher
// and a failing readiness probe takes the pod out of its Services'
// endpoints; what it probes is the guest. The kubelet asks the launcher, on
// its operations port, at the path of the probe's kind, and the launcher
// checks the guest one of four ways (ADR 11): TCP and HTTP at the guest's
// address on the pod's bridge (ADR 33), exec and pings through its agent.

export type ProbeKind = "liveness" | "readiness";

/** The launcher's path the kubelet asks for each kind of probe. */
export const PROBE_PATH: Record<ProbeKind, string> = { liveness: "/probes/liveness", readiness: "/probes/readiness" };

/** The VMI's probe of a kind, if it has one. */
export function probeOf(
  spec: Pick<VirtualMachineInstance["spec"], "livenessProbe" | "readinessProbe">,
  kind: ProbeKind,
): Probe | undefined {
  return kind === "liveness" ? spec.livenessProbe : spec.readinessProbe;
}

/**
 * What checks the guest: an HTTP GET or a TCP connection to a port of the guest, a command its agent runs, or a ping of
 * its agent.
 */
export type ProbeCheck =
  | { kind: "http"; port: number; path: string; scheme: "HTTP" | "HTTPS"; headers: { name: string; value: string }[] }
  | { kind: "tcp"; port: number }
  | { kind: "exec"; command: string[] }
  | { kind: "guestAgentPing" };

/** The probe's handlers that are set, by name. */
export function probeHandlers(probe: Probe): string[] {
  return (["httpGet", "tcpSocket", "exec", "guestAgentPing"] as const).filter((h) => probe[h] !== undefined);
}

/** A probe's port as a number: itself, or the port the pod-network interface names so; undefined when none does. */
export function probePort(
  spec: Pick<VirtualMachineInstance["spec"], "domain" | "networks">,
  port: number | string,
): number | undefined {
  if (typeof port === "number") return port;
  return podNetworkPorts(spec).find((p) => p.name === port)?.port;
}

/** What the probe checks, for a VMI whose spec passed validation (one handler, ports that resolve). */
export function probeCheck(
  spec: Pick<VirtualMachineInstance["spec"], "domain" | "networks">,
  probe: Probe,
): ProbeCheck {
  if (probe.httpGet) {
    const port = probePort(spec, probe.httpGet.port);
    if (port === undefined)
      throw new Error(`the probe's port ${String(probe.httpGet.port)} is not one the pod-network interface names`);
    return {
      kind: "http",
      port,
      path: probe.httpGet.path ?? "/",
      scheme: probe.httpGet.scheme ?? "HTTP",
      headers: probe.httpGet.httpHeaders ?? [],
    };
  }
  if (probe.tcpSocket) {
    const port = probePort(spec, probe.tcpSocket.port);
    if (port === undefined)
      throw new Error(`the probe's port ${String(probe.tcpSocket.port)} is not one the pod-network interface names`);
    return { kind: "tcp", port };
  }
  if (probe.exec) return { kind: "exec", command: probe.exec.command };
  return { kind: "guestAgentPing" };
}

/** Kubernetes' defaults for a probe's schedule. */
export function probeTiming(probe: Probe): {
  initialDelaySeconds: number;
  timeoutSeconds: number;
  periodSeconds: number;
  successThreshold: number;
  failureThreshold: number;
} {
  return {
    initialDelaySeconds: probe.initialDelaySeconds ?? 0,
    timeoutSeconds: probe.timeoutSeconds ?? 1,
    periodSeconds: probe.periodSeconds ?? 10,
    successThreshold: probe.successThreshold ?? 1,
    failureThreshold: probe.failureThreshold ?? 3,
  };
}

/**
 * The launcher container's probe of a kind, for the VMI's probe: the VMI's schedule, asking the launcher. The
 * kubelet waits a second longer than the probe's timeout, which the launcher keeps, for the launcher's own answer.
 * It asks over HTTP on the pod's address, or, where the guest took that address (the bridge binding), runs the
 * probe client `execClient` in the launcher container, which asks the launcher on loopback.
 */
export function launcherContainerProbe(probe: Probe, kind: ProbeKind, execClient?: string) {
  const timing = probeTiming(probe);
  return {
    ...(execClient === undefined
      ? { httpGet: { path: PROBE_PATH[kind], port: LAUNCHER_OPS_PORT_NAME } }
      : { exec: { command: [execClient, String(LAUNCHER_OPS_PORT), PROBE_PATH[kind]] } }),
    ...timing,
    timeoutSeconds: timing.timeoutSeconds + 1,
  };
}
