import { readFileSync } from "node:fs";
import { join } from "node:path";
import { REPO_ROOT } from "@kubevirt-ts/control-plane";
import { PART_OF_LABELS } from "@kubevirt-ts/kubevirt-api";

// The release of kubevirt-ts is written in one place: the `version` of the
// repository's root package.json. The images carry it as a label, and
// packages/local-cluster/src/version.test.ts fails when the chart, a workspace
// or CHANGELOG.md says another.

/** A release: major.minor.patch with an optional pre-release, as SemVer and Helm's chart versions have it. */
export const RELEASE_VERSION = /^\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?$/;

/** The release named by the root package.json's `version` in `root` (the repository's by default). */
export function releaseVersion(root: string = REPO_ROOT): string {
  const file = join(root, "package.json");
  const { version } = JSON.parse(readFileSync(file, "utf8")) as { version?: unknown };
  if (typeof version !== "string" || !RELEASE_VERSION.test(version))
    throw new Error(
      `${file}: "version" is ${JSON.stringify(version)}; set it to the release as major.minor.patch (e.g. "0.1.0")`,
    );
  return version;
}

/** The OCI labels of a component's image: its name, the release it belongs to and the licence. */
export function componentLabels(name: string): Record<string, string> {
  return {
    "org.opencontainers.image.title": name,
    "org.opencontainers.image.version": releaseVersion(),
    "org.opencontainers.image.licenses": "Apache-2.0",
    ...PART_OF_LABELS,
  };
}
