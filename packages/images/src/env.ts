import { z } from "zod";

const schema = z.object({
  KUBEVIRT_TS_CACHE: z
    .string()
    .min(1, "is not set: run image builds through hack/run.sh, which sets it from hack/versions.sh"),
  DEBIAN_MIRROR: z.url().default("http://deb.debian.org/debian"),
});

const parsed = schema.safeParse(process.env);
if (!parsed.success) {
  throw new Error(
    `invalid environment: ${parsed.error.issues.map((i) => `${i.path.join(".")} ${i.message}`).join("; ")}`,
  );
}
export const env = parsed.data;
