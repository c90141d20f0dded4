import type { V1Container, V1Pod } from "@kubernetes/client-node";
import { LAUNCHER_CONTAINER } from "@kubevirt-ts/node-contract";

// A plain pod of a launcher pod's shape, the yardstick a VMI's start is
// measured against: the same init containers, sidecar and main container,
// with the same names, resources, security contexts and emptyDir volumes,
// on the same nodes, but each running `true` (an init container) or `sleep`
// (the sidecar and the main container) in the launcher's image. A
// containerDisk's own image holds nothing but its disk (no `true`), so its
// init container runs the launcher's image too; both are on the node already.

const SLEEP = ["sleep", "100000"];
const TRUE = ["true"];

export function plainPod(launcher: V1Pod, name: string, namespace: string): V1Pod {
  if (!launcher.spec) throw new Error(`launcher pod ${launcher.metadata?.name ?? "?"} has no spec`);
  const spec = structuredClone(launcher.spec);
  const main = spec.containers.find((c) => c.name === LAUNCHER_CONTAINER) ?? spec.containers[0];
  if (!main?.image) {
    const name = launcher.metadata?.name ?? "?";
    throw new Error(`launcher pod ${name} has no ${LAUNCHER_CONTAINER} container with an image`);
  }
  // Only the volumes any pod can have: a VMI's Secrets, ConfigMaps and claims are not in the plain pod's namespace.
  const volumes = (spec.volumes ?? []).filter((v) => v.emptyDir !== undefined);
  const kept = new Set(volumes.map((v) => v.name));
  const quiet = (c: V1Container, command: string[]): V1Container => ({
    name: c.name,
    image: main.image,
    imagePullPolicy: main.imagePullPolicy ?? "IfNotPresent",
    command,
    ...(c.restartPolicy !== undefined ? { restartPolicy: c.restartPolicy } : {}),
    ...(c.resources ? { resources: c.resources } : {}),
    ...(c.securityContext ? { securityContext: c.securityContext } : {}),
    ...(c.ports ? { ports: c.ports } : {}),
    volumeMounts: (c.volumeMounts ?? []).filter((m) => kept.has(m.name)),
  });
  spec.initContainers = spec.initContainers?.map((c) => quiet(c, c.restartPolicy === "Always" ? SLEEP : TRUE));
  spec.containers = spec.containers.map((c) => quiet(c, SLEEP));
  spec.volumes = volumes;
  delete spec.nodeName;
  // sleep as PID 1 ignores SIGTERM: a short grace keeps the namespace's deletion short; it plays no part in a start.
  spec.terminationGracePeriodSeconds = 1;
  const metadata = { name, namespace, labels: { "kubevirt-ts.io/bench": "true" } };
  return { apiVersion: "v1", kind: "Pod", metadata, spec };
}

/** Seconds from the pod's creationTimestamp to its Ready condition's last transition (server clocks, 1 s steps). */
export function podReadySeconds(pod: V1Pod): number | undefined {
  const ready = pod.status?.conditions?.find((c) => c.type === "Ready" && c.status === "True");
  const created = pod.metadata?.creationTimestamp;
  if (!ready?.lastTransitionTime || !created) return undefined;
  return (new Date(ready.lastTransitionTime).getTime() - new Date(created).getTime()) / 1000;
}
