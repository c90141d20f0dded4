import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";

// KubeVirt's own examples/, read from the kubevirt.io/kubevirt Go module at a
// release: the Go module proxy serves a module by version (it refuses to
// list this module's versions, but not to serve one). `go mod download`
// fetches it once into Go's module cache, checked against the checksum
// database, with Go's own proxy settings and trust store (Node's fetch has
// neither); it is never copied into this repository.

export const KUBEVIRT_EXAMPLES_VERSION = "v1.8.0";

/** The folder holding KubeVirt's examples/*.yaml at that version, in Go's module cache. */
export async function kubevirtExamples(version = KUBEVIRT_EXAMPLES_VERSION): Promise<string> {
  const module = `kubevirt.io/kubevirt@${version}`;
  process.stderr.write(`[e2e] KubeVirt's examples: go mod download ${module}\n`);
  const { stdout } = await promisify(execFile)("go", ["mod", "download", "-json", module], {
    maxBuffer: 1024 * 1024,
  }).catch((error: unknown) => {
    const output = (error as { stdout?: string }).stdout ?? "";
    throw new Error(
      `go mod download ${module} failed: the Go module proxy must serve it. ${output || (error as Error).message}`,
    );
  });
  const { Dir: dir } = JSON.parse(stdout) as { Dir?: string };
  if (!dir) throw new Error(`go mod download ${module} named no folder: ${stdout}`);
  return join(dir, "examples");
}
