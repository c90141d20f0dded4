import type { ActionAvailability } from "@kubevirt-ts/vm-rules";
import { TRPCError } from "@trpc/server";
import { ActionRefusal } from "../vm-actions.ts";

/** A refused action as tRPC's error: the API server's 403, the VM's state (409) or its spec (400) in the way. */
export function fromRefusal(error: unknown): never {
  if (!(error instanceof ActionRefusal)) throw error;
  const code =
    ({ 400: "PRECONDITION_FAILED", 403: "FORBIDDEN", 404: "NOT_FOUND", 409: "CONFLICT" } as const)[error.status] ??
    "INTERNAL_SERVER_ERROR";
  throw new TRPCError({ code, message: error.message });
}

/** Refuses an action vm-rules says is not available now: its spec (400) or its state (409) in the way, with why. */
export const refusal = (availability: ActionAvailability, what: string): void => {
  if (!availability.available)
    throw new TRPCError({
      code: availability.by === "spec" ? "PRECONDITION_FAILED" : "CONFLICT",
      message: `Cannot ${what}: ${availability.reason}.`,
    });
};
