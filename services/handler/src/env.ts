import { baseEnv, parseEnv } from "@kubevirt-ts/runtime";
import { z } from "zod";

export const env = parseEnv(
  z.object({
    ...baseEnv(9101),
    /** The node this handler serves: the DaemonSet passes its pod's spec.nodeName. */
    NODE_NAME: z.string().min(1, "must name this handler's node (the chart passes spec.nodeName)"),
    /** The kubelet's pod folders, mounted from the node. */
    KUBELET_PODS_DIR: z.string().default("/var/lib/kubelet/pods"),
    WORKERS: z.coerce.number().int().min(1).max(32).default(4),
  }),
);
