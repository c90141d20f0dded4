import { type DataVolume, kubevirtResources, summarize, validateDataVolume } from "@kubevirt-ts/kubevirt-api";
import { TRPCError } from "@trpc/server";
import { z } from "zod";
import { tokenRequester } from "../access.ts";
import { issueUploadToken } from "../upload/token-api.ts";
import { CausesError, router, userProcedure } from "./init.ts";
import { fromRefusal } from "./refusal.ts";

// The dashboard's Images page: the namespace's DataVolumes, an upload into a
// new one, as virtctl image-upload does it (a DataVolume whose source is
// upload, then an upload token for its claim, which the browser sends with
// the image to the upload proxy), and their deletion. All as the signed-in
// user: they may do here what they could do with kubectl and virtctl.

const names = z.object({ namespace: z.string().min(1), name: z.string().min(1) });

/**
 * A DataVolume waiting for an upload of a disk of `size`: what virtctl image-upload dv <name> --size=<size> creates.
 */
export function uploadDataVolume(namespace: string, name: string, size: string): DataVolume {
  const candidate = {
    apiVersion: "cdi.kubevirt.io/v1beta1",
    kind: "DataVolume",
    metadata: { name, namespace },
    spec: { source: { upload: {} }, storage: { resources: { requests: { storage: size } } } },
  };
  const result = validateDataVolume(candidate);
  if (!result.ok) throw new CausesError(summarize(result.causes), result.causes);
  return result.value;
}

export const dataVolumes = router({
  list: userProcedure
    .input(z.object({ namespace: z.string().min(1) }))
    .query(
      async ({ ctx, input }) =>
        (await ctx.client.list<DataVolume>(kubevirtResources.dataVolumes, input.namespace)).items,
    ),
  createUpload: userProcedure
    .input(names.extend({ size: z.string().min(1) }))
    .mutation(({ ctx, input }) =>
      ctx.client.create<DataVolume>(
        kubevirtResources.dataVolumes,
        input.namespace,
        uploadDataVolume(input.namespace, input.name, input.size),
      ),
    ),
  uploadToken: userProcedure.input(names).mutation(async ({ ctx, input }) => {
    if (!ctx.uploadTokens)
      throw new TRPCError({
        code: "PRECONDITION_FAILED",
        message: "this API serves no upload proxy: it runs without its serving certificate (WEBHOOK_TLS_DIR)",
      });
    return {
      token: await issueUploadToken(ctx.uploadTokens, tokenRequester(ctx.client), input.namespace, input.name).catch(
        fromRefusal,
      ),
    };
  }),
  delete: userProcedure.input(names).mutation(async ({ ctx, input }) => {
    await ctx.client.delete(kubevirtResources.dataVolumes, input.namespace, input.name);
    return { ok: true as const };
  }),
});
