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
import { router, userProcedure } from "./init.ts";
import { MAX_LISTED, bounded, named, newestFirst, vm } from "./namespace-lists.ts";
import { refusal } from "./refusal.ts";

// A VM's exports for the dashboard's Export action (export.kubevirt.io, docs/data-protection.md): exporting the VM's
// disks while it is stopped, and its exports with their state and a download link per disk. The link is the export's
// external link with the token in its query, so that a browser downloads it as a plain link: the token is read from
// the export's token Secret as the signed-in user, and a user who may not read it (a viewer) gets no link. Every call
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

/** An export as the dashboard lists it; `token` is the export's token, when the user may read it. */
export function exportView(exp: VirtualMachineExport, token: string | undefined) {
  const status = exp.status;
  const ready = status?.conditions?.find((c) => c.type === "Ready");
  const link = status?.links?.external ?? status?.links?.internal;
  const withToken = (url: string) =>
    token === undefined ? undefined : `${url}?${EXPORT_TOKEN_HEADER}=${encodeURIComponent(token)}`;
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
    disks: (link?.volumes ?? []).map((v) => {
      const gzip = v.formats?.find((f) => f.format === "gzip")?.url;
      const raw = v.formats?.find((f) => f.format === "raw")?.url;
      return {
        name: v.name,
        gzip: gzip ? withToken(gzip) : undefined,
        raw: raw ? withToken(raw) : undefined,
      };
    }),
    tokenReadable: token !== undefined,
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

export const exports = router({
  // The exports of the VM, newest first, each with its download links where the user may read its token.
  list: userProcedure.input(vm).query(async ({ ctx, input }) => {
    const listed = await exportsIn(ctx.client, input.namespace);
    const mine = newestFirst(
      listed.items.filter((e) => e.spec.source.kind === "VirtualMachine" && e.spec.source.name === input.name),
    ).slice(0, MAX_LISTED);
    return {
      exports: await Promise.all(
        mine.map(async (e) =>
          exportView(e, e.status?.phase === ExportPhase.Ready ? await tokenOf(ctx.client, e) : undefined),
        ),
      ),
      truncated: listed.truncated || mine.length >= MAX_LISTED,
    };
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
  delete: userProcedure
    .input(vm.extend({ export: named(dnsLabelProblem, "export") }))
    .mutation(async ({ ctx, input }) => {
      await ctx.client.delete(kubevirtResources.virtualMachineExports, input.namespace, input.export);
      return { name: input.export };
    }),
});
