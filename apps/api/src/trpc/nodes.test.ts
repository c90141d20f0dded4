import type { Pod } from "@kubevirt-ts/kube";
import { describe, expect, it } from "vitest";
import { podRequests } from "./nodes.ts";

const container = (name: string, cpu: string, memory: string, restartPolicy?: "Always") => ({
  name,
  ...(restartPolicy ? { restartPolicy } : {}),
  resources: { requests: { cpu, memory } },
});

describe("podRequests, as the scheduler counts them", () => {
  it("sums the containers, or takes the largest init container when it asks for more, plus the overhead", () => {
    const pod: Pod = {
      metadata: {},
      spec: {
        containers: [container("a", "100m", "64Mi"), container("b", "50m", "32Mi")],
        initContainers: [container("copy", "1", "16Mi")],
        overhead: { cpu: "10m", memory: "1Mi" },
      },
    };
    expect(podRequests(pod)).toEqual({ cpu: 1010, memory: 97 * 1024 * 1024 });
  });

  it(
    "adds a sidecar (an init container that keeps running) to the containers, " + "and to the init containers after it",
    () => {
      const pod: Pod = {
        metadata: {},
        spec: {
          containers: [container("compute", "100m", "100Mi")],
          initContainers: [
            container("copy", "200m", "10Mi"),
            container("guest-console-log", "5m", "35Mi", "Always"),
            container("late", "300m", "10Mi"),
          ],
        },
      };
      expect(podRequests(pod)).toEqual({ cpu: 305, memory: 135 * 1024 * 1024 });
    },
  );
});
