import { z } from "zod";
import { QUANTITY_PATTERN } from "../quantity.ts";

/**
 * A resource quantity: a string such as "2Gi" or a plain number. Marked as
 * int-or-string so the generated CRD carries the structural form the API
 * server expects for quantities.
 */
export const quantity = z
  .union([
    z.string().regex(new RegExp(QUANTITY_PATTERN), "must be a Kubernetes quantity such as 128Mi or 2Gi"),
    z.number(),
  ])
  .meta({ "x-kubernetes-int-or-string": true, pattern: QUANTITY_PATTERN });

/** An object whose keys we do not model and keep as they are (e.g. affinity). */
export const opaqueObject = z.record(z.string(), z.unknown()).meta({ "x-kubernetes-preserve-unknown-fields": true });

export const resourceList = z.record(z.string(), quantity);

export const condition = z.object({
  type: z.string().describe("The aspect of the object this condition reports on, e.g. Ready."),
  status: z.enum(["True", "False", "Unknown"]),
  reason: z.string().optional().describe("A CamelCase word saying why the condition has its status."),
  message: z.string().optional().describe("A sentence for people about the condition."),
  lastProbeTime: z.string().nullable().optional(),
  lastTransitionTime: z.string().nullable().optional().describe("When the status last changed."),
});

/** Object metadata: validated by the API server itself, modelled loosely here. */
export const objectMeta = z.looseObject({
  name: z.string().optional(),
  generateName: z.string().optional(),
  namespace: z.string().optional(),
  uid: z.string().optional(),
  resourceVersion: z.string().optional(),
  generation: z.number().optional(),
  creationTimestamp: z.string().nullable().optional(),
  deletionTimestamp: z.string().nullable().optional(),
  labels: z.record(z.string(), z.string()).optional(),
  annotations: z.record(z.string(), z.string()).optional(),
  finalizers: z.array(z.string()).optional(),
  ownerReferences: z
    .array(
      z.object({
        apiVersion: z.string(),
        kind: z.string(),
        name: z.string(),
        uid: z.string(),
        controller: z.boolean().optional(),
        blockOwnerDeletion: z.boolean().optional(),
      }),
    )
    .optional(),
});
