import { baseEnv, parseEnv } from "@kubevirt-ts/runtime";
import { z } from "zod";

export const env = parseEnv(z.object({ ...baseEnv(9102) }));
