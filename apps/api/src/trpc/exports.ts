import { type KubeClient, type Secret, isForbidden, resources } from "@kubevirt-ts/kube";
import {
  EXPORT_API_VERSION,
  EXPORT_KIND,
  ExportPhase,
  type VirtualMachineExport,
  type VirtualMachineInstance,
  dnsLabelProblem,
  kubevirtResources,
} from "@kubevirt-ts/kubevirt-api";
import { EXPORT_TOKEN_HEADER, EXPORT_TOKEN_KEY } from "@kubevirt-ts/node-contract";
import { exportAvailability } from "@kubevirt-ts/vm-rules";
import { TRPCError } from "@trpc/server";
import { router, userProcedure } from "./init.ts";
import { MAX_LISTED, bounded, named, newestFirst, vm } from "./namespace-lists.ts";
import { refusal } from "./refusal.ts";

// A VM's exports for the dashboard's Export action (export.kubevirt.io, docs/data-protection.md): exporting the VM's
// disks while it is stopped, and its exports with their state and a download link per disk. The link is the export's
// external link with the token in its query, so that a browser downloads it as a plain link: the token is read from
// the export's token Secret as the signed-in user, once per export (not on each poll of the list), and a user who may
// not read it (a viewer) gets no link. Every call
// is the user's own request (ADR 5); the export controller does the work.

/** How long an export made from the dashboard lives: KubeVirt's default. */
const DASHBOARD_EXPORT_TTL = "2h";

/** A VirtualMachineExport of the VM, named after it (the API server adds a suffix). */
export function newExport(namespace: string, name: string): VirtualMachineExport {
  return {
    apiVersion: EXPORT_API_VERSION,
    kind: EXPORT_KIND,
    metadata: { generateName: `export-${name}-`.slice(0, 58), namespace },
    spec: { source: { apiGroup: "kubevirt.io", kind: "VirtualMachine", name }, ttlDuration: DASHBOARD_EXPORT_TTL },
  };
}

/** An export as the dashboard lists it, with its disks' names; their links are exportLinks'. */
export function exportView(exp: VirtualMachineExport) {
  const status = exp.status;
  const ready = status?.conditions?.find((c) => c.type === "Ready");
  return {
    name: exp.metadata.name ?? "",
    created: exp.metadata.creationTimestamp ?? "",
    phase: status?.phase ?? ExportPhase.Pending,
    // The Ready condition's message while it is not ready; its reason when it says nothing more.
    message:
      ready?.status === "True" ? undefined : [ready?.message, ready?.reason].find((m) => m !== undefined && m !== ""),
    expires: status?.ttlExpirationTime,
    /** Whether the links reach the server from outside the cluster (the dashboard's address). */
    external: status?.links?.external !== undefined,
    disks: linkOf(exp)?.volumes?.map((v) => v.name) ?? [],
  };
}

const linkOf = (exp: VirtualMachineExport) => exp.status?.links?.external ?? exp.status?.links?.internal;

/** Each disk's download links, with the token in their query; `token` is the export's, when the user may read it. */
export function exportLinks(exp: VirtualMachineExport, token: string | undefined) {
  const withToken = (url: string | undefined) =>
    url === undefined || token === undefined ? undefined : `${url}?${EXPORT_TOKEN_HEADER}=${encodeURIComponent(token)}`;
  return {
    tokenReadable: token !== undefined,
    disks: (linkOf(exp)?.volumes ?? []).map((v) => ({
      name: v.name,
      gzip: withToken(v.formats?.find((f) => f.format === "gzip")?.url),
      raw: withToken(v.formats?.find((f) => f.format === "raw")?.url),
    })),
  };
}

/** The export's token, read as the user; undefined when they may not read it or it is not there yet. */
async function tokenOf(client: KubeClient, exp: VirtualMachineExport): Promise<string | undefined> {
  const name = exp.status?.tokenSecretRef;
  if (!name) return undefined;
  try {
    const secret = await client.find<Secret>(resources.secrets, exp.metadata.namespace, name);
    const value = secret?.data?.[EXPORT_TOKEN_KEY];
    return value === undefined ? undefined : Buffer.from(value, "base64").toString("utf8");
  } catch (error) {
    if (isForbidden(error)) return undefined;
    throw error;
  }
}

const exportsIn = (client: KubeClient, namespace: string) =>
  bounded((o) => client.list<VirtualMachineExport>(kubevirtResources.virtualMachineExports, namespace, o));

const ofExport = vm.extend({ export: named(dnsLabelProblem, "export") });

export const exports = router({
  // The exports of the VM, newest first. Polled: it reads no Secret.
  list: userProcedure.input(vm).query(async ({ ctx, input }) => {
    const listed = await exportsIn(ctx.client, input.namespace);
    const mine = newestFirst(
      listed.items.filter((e) => e.spec.source.kind === "VirtualMachine" && e.spec.source.name === input.name),
    ).slice(0, MAX_LISTED);
    return { exports: mine.map(exportView), truncated: listed.truncated || mine.length >= MAX_LISTED };
  }),
  // A Ready export's download links, where the user may read its token: asked once per export, as the token lasts
  // as long as the export.
  links: userProcedure.input(ofExport).query(async ({ ctx, input }) => {
    const exp = await ctx.client.get<VirtualMachineExport>(
      kubevirtResources.virtualMachineExports,
      input.namespace,
      input.export,
    );
    const { kind, name } = exp.spec.source;
    if (kind !== "VirtualMachine" || name !== input.name)
      throw new TRPCError({
        code: "BAD_REQUEST",
        message: `export: ${input.export} does not export VM ${input.name}.`,
      });
    return exportLinks(exp, exp.status?.phase === ExportPhase.Ready ? await tokenOf(ctx.client, exp) : undefined);
  }),
  // Exports the VM's disks; refused while it runs.
  create: userProcedure.input(vm).mutation(async ({ ctx, input }) => {
    const { namespace, name } = input;
    await ctx.client.get(kubevirtResources.virtualMachines, namespace, name);
    const vmi = await ctx.client.find<VirtualMachineInstance>(
      kubevirtResources.virtualMachineInstances,
      namespace,
      name,
    );
    refusal(exportAvailability(vmi), `export ${name}`);
    const made = await ctx.client.create<VirtualMachineExport>(
      kubevirtResources.virtualMachineExports,
      namespace,
      newExport(namespace, name),
    );
    return { name: made.metadata.name ?? "" };
  }),
  delete: userProcedure.input(ofExport).mutation(async ({ ctx, input }) => {
    await ctx.client.delete(kubevirtResources.virtualMachineExports, input.namespace, input.export);
    return { name: input.export };
  }),
});
