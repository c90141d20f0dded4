// After `next build`: the standalone server serves static assets only from
// its own folder, so they are copied into it.
import { cp, rm } from "node:fs/promises";

const web = new URL("../", import.meta.url);
const target = new URL(".next/standalone/apps/web/", web);
await rm(new URL(".next/static", target), { recursive: true, force: true });
await cp(new URL(".next/static", web), new URL(".next/static", target), { recursive: true });
