import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

export const REPO_ROOT = fileURLToPath(new URL("../../../", import.meta.url));
export const CHART_CRD_DIR = fileURLToPath(new URL("../../../charts/kubevirt-ts/crds/", import.meta.url));
/**
 * The CRDs the chart installs only where no one else serves them (CDI's DataVolume): the tests' API server serves them.
 */
export const CHART_OPTIONAL_CRD_DIR = fileURLToPath(
  new URL("../../../charts/kubevirt-ts/files/crds/", import.meta.url),
);

/**
 * Builds (or finds in the cache) the Kubernetes binaries with
 * hack/build-k8s.sh, the one place that knows their versions, and returns
 * the folder holding them.
 */
export async function ensureBinaries(components: string[] = ["etcd", "kube-apiserver", "kubectl"]): Promise<string> {
  const script = fileURLToPath(new URL("../../../hack/build-k8s.sh", import.meta.url));
  const { stdout } = await promisify(execFile)(script, components, { maxBuffer: 1 << 20 });
  const dir = stdout.trim().split("\n").pop();
  if (!dir) throw new Error("hack/build-k8s.sh printed no binary folder");
  return dir;
}
