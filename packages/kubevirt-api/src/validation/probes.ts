import { podNetworkInterface } from "../pod-network.ts";
import { type ProbeKind, probeHandlers, probeOf, probePort } from "../probes.ts";
import type { VmiSpec } from "../schema/vmi.ts";
import type { Causes } from "./causes.ts";

// KubeVirt's and the kubelet's rules for a VMI's liveness and readiness probes.

const TIMINGS = [
  ["initialDelaySeconds", 0],
  ["timeoutSeconds", 1],
  ["periodSeconds", 1],
  ["successThreshold", 1],
  ["failureThreshold", 1],
] as const;

function validatePort(spec: VmiSpec, port: number | string, path: string, causes: Causes): void {
  if (podNetworkInterface(spec) === undefined) {
    causes.invalid(
      path,
      "needs an interface on the pod network: the probe reaches the guest through it; add one " +
        "(masquerade), or probe with exec or guestAgentPing",
    );
    return;
  }
  if (typeof port === "number") {
    if (port < 1 || port > 65535) causes.invalid(path, `must be between 1 and 65535, got ${port}`);
  } else if (probePort(spec, port) === undefined) {
    causes.invalid(
      path,
      `is ${JSON.stringify(port)}, which no port of the pod-network interface is named; give the ` +
        "port's number, or name it in the interface's ports",
    );
  }
}

function validateProbe(spec: VmiSpec, kind: ProbeKind, path: string, causes: Causes): void {
  const probe = probeOf(spec, kind);
  if (!probe) return;
  const handlers = probeHandlers(probe);
  if (handlers.length !== 1) {
    causes.invalid(
      path,
      "must have exactly one of httpGet, tcpSocket, exec and guestAgentPing; it " +
        `has ${handlers.length === 0 ? "none" : handlers.join(" and ")}`,
    );
  }
  for (const [field, min] of TIMINGS) {
    const value = probe[field];
    if (value !== undefined && value < min) causes.invalid(`${path}.${field}`, `must be ${min} or more, got ${value}`);
  }
  if (kind === "liveness" && probe.successThreshold !== undefined && probe.successThreshold !== 1) {
    causes.invalid(`${path}.successThreshold`, `must be 1 for a liveness probe, got ${probe.successThreshold}`);
  }
  for (const handler of ["httpGet", "tcpSocket"] as const) {
    const target = probe[handler];
    if (!target) continue;
    validatePort(spec, target.port, `${path}.${handler}.port`, causes);
    if (target.host !== undefined)
      causes.notSupported(
        `${path}.${handler}.host`,
        "is not supported: the probe reaches the guest itself, at its address on the pod network; leave it out",
      );
  }
  if (probe.exec && (probe.exec.command.length === 0 || probe.exec.command[0] === "")) {
    causes.required(`${path}.exec.command`, 'must name the command to run in the guest, e.g. ["cat", "/tmp/healthy"]');
  }
}

export function validateProbes(spec: VmiSpec, path: string, causes: Causes): void {
  // KubeVirt's rule: a guest that starts paused would fail its liveness probe until someone unpaused it.
  if (spec.startStrategy === "Paused" && spec.livenessProbe) {
    causes.invalid(
      `${path}.startStrategy`,
      "is Paused together with a livenessProbe, which a paused guest cannot pass; leave out one of them",
    );
  }
  validateProbe(spec, "liveness", `${path}.livenessProbe`, causes);
  validateProbe(spec, "readiness", `${path}.readinessProbe`, causes);
}
