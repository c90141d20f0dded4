import type { z } from "zod";
import { API_VERSION, GROUP, Kind, Resource, VERSION } from "../constants.ts";
import { vmSpec, vmStatus } from "../schema/vm.ts";
import { vmiSpec, vmiStatus } from "../schema/vmi.ts";
import { kubevirtResources } from "../resources.ts";
import { type OpenApiSchema, toStructuralSchema } from "./openapi.ts";

// The CustomResourceDefinitions of kubevirt.io/v1, built from the zod schemas
// so that the API server and our validation never disagree about the shape.

interface PrinterColumn {
  name: string;
  type: "string" | "date" | "integer" | "boolean";
  jsonPath: string;
  description?: string;
  priority?: number;
}

const age: PrinterColumn = { name: "Age", type: "date", jsonPath: ".metadata.creationTimestamp" };
const ready: PrinterColumn = { name: "Ready", type: "string", jsonPath: ".status.conditions[?(@.type=='Ready')].status" };

interface CrdInput {
  kind: Kind;
  description: string;
  spec: z.ZodType;
  status: z.ZodType;
  columns: PrinterColumn[];
  /** Whether status is a subresource: kubevirtResources says, for the clients, as KubeVirt's CRDs do. */
  statusSubresource: boolean;
  specValidations?: { rule: string; message: string }[];
}

function crd(input: CrdInput): Record<string, unknown> {
  const names = Resource[input.kind];
  const specSchema: OpenApiSchema = toStructuralSchema(input.spec);
  if (input.specValidations) specSchema["x-kubernetes-validations"] = input.specValidations;
  return {
    apiVersion: "apiextensions.k8s.io/v1",
    kind: "CustomResourceDefinition",
    metadata: {
      name: `${names.plural}.${GROUP}`,
      labels: { "app.kubernetes.io/part-of": "kubevirt-ts" },
    },
    spec: {
      group: GROUP,
      names: {
        kind: input.kind,
        listKind: `${input.kind}List`,
        plural: names.plural,
        singular: names.singular,
        shortNames: [...names.shortNames],
        categories: ["all"],
      },
      scope: "Namespaced",
      versions: [
        {
          name: VERSION,
          served: true,
          storage: true,
          subresources: input.statusSubresource ? { status: {} } : {},
          additionalPrinterColumns: input.columns,
          schema: {
            openAPIV3Schema: {
              type: "object",
              description: input.description,
              required: ["spec"],
              properties: {
                apiVersion: { type: "string", description: `Always ${API_VERSION}.` },
                kind: { type: "string", description: `Always ${input.kind}.` },
                metadata: { type: "object" },
                spec: specSchema,
                status: toStructuralSchema(input.status),
              },
            },
          },
        },
      ],
    },
  };
}

export const virtualMachineCrd = crd({
  kind: Kind.VirtualMachine,
  description: "A virtual machine: its template, and when it should run. It creates a VirtualMachineInstance when it runs.",
  spec: vmSpec,
  status: vmStatus,
  statusSubresource: kubevirtResources.virtualMachines.statusSubresource,
  columns: [age, { name: "Status", type: "string", jsonPath: ".status.printableStatus", description: "Human Readable Status" }, ready],
  specValidations: [
    {
      rule: "!(has(self.running) && has(self.runStrategy))",
      message: "spec.running and spec.runStrategy are mutually exclusive; spec.running is deprecated, keep only spec.runStrategy",
    },
  ],
});

export const virtualMachineInstanceCrd = crd({
  kind: Kind.VirtualMachineInstance,
  description: "A running instance of a virtual machine: one guest in one launcher pod.",
  spec: vmiSpec,
  status: vmiStatus,
  statusSubresource: kubevirtResources.virtualMachineInstances.statusSubresource,
  columns: [
    age,
    { name: "Phase", type: "string", jsonPath: ".status.phase" },
    { name: "IP", type: "string", jsonPath: ".status.interfaces[0].ipAddress" },
    { name: "NodeName", type: "string", jsonPath: ".status.nodeName" },
    ready,
    { name: "Paused", type: "string", jsonPath: ".status.conditions[?(@.type=='Paused')].status", priority: 1 },
  ],
});

/** The generated files, by path relative to the chart's crds/ folder. */
export function renderCrdFiles(toYaml: (value: unknown) => string): Map<string, string> {
  const header = "# Generated from packages/kubevirt-api by `npm run generate`; do not edit.\n";
  return new Map(
    [virtualMachineCrd, virtualMachineInstanceCrd].map((c) => {
      const name = (c.metadata as { name: string }).name;
      const [plural = name] = name.split(".");
      return [`${GROUP}_${plural}.yaml`, header + toYaml(c)];
    }),
  );
}
