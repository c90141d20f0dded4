import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, rename, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { CACHE_DIR, GO_PROXY } from "./env.ts";

// KubeVirt's own examples/, read from the kubevirt.io/kubevirt Go module at a
// release: the Go module proxy serves a module's zip by version (it refuses
// to list this module's versions, but not to serve one). Fetched once per
// version into the cache, never copied into this repository.

export const KUBEVIRT_EXAMPLES_VERSION = "v1.8.0";

/** The folder holding KubeVirt's examples/*.yaml at that version, fetched and unpacked on first use. */
export async function kubevirtExamples(version = KUBEVIRT_EXAMPLES_VERSION): Promise<string> {
  const root = join(CACHE_DIR, "src", `kubevirt-${version}`);
  const examples = join(root, `kubevirt.io/kubevirt@${version}`, "examples");
  if (existsSync(examples)) return examples;
  const url = `${GO_PROXY}/kubevirt.io/kubevirt/@v/${version}.zip`;
  process.stderr.write(`[e2e] fetching KubeVirt's examples: ${url}\n`);
  const response = await fetch(url);
  if (!response.ok) throw new Error(`${url} answered ${String(response.status)}: the Go module proxy must serve kubevirt.io/kubevirt@${version}`);
  const zip = `${root}.zip`;
  await mkdir(join(CACHE_DIR, "src"), { recursive: true });
  await writeFile(zip, Buffer.from(await response.arrayBuffer()));
  const partial = `${root}.partial`;
  await rm(partial, { recursive: true, force: true });
  await promisify(execFile)("unzip", ["-q", "-o", zip, `kubevirt.io/kubevirt@${version}/examples/*`, "-d", partial]);
  await rename(partial, root);
  await rm(zip, { force: true });
  return examples;
}
