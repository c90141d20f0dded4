// The release is written once, as the root package.json's `version` (packages/images/src/version.ts); every other
// place that names it must say the same, so the chart, the images' labels, `virtctl version` and the documents
// cannot drift apart (issue 33). `npm version <v> --workspaces --include-workspace-root` moves the workspaces and
// the lock file; the chart, CHANGELOG.md and the install commands are edited by hand, and this test says where.
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { REPO_ROOT } from "@kubevirt-ts/control-plane";
// The version module alone: the package index reads the image cache from the environment, which turbo does not pass.
import { componentLabels, releaseVersion } from "@kubevirt-ts/images/version";
import { describe, expect, test } from "vitest";
import { parse } from "yaml";

/** Reads a file of the repository, relative to its root; undefined when it does not exist. */
type Read = (path: string) => string | undefined;

const CHART = "charts/kubevirt-ts/Chart.yaml";
/** Templates handing the chart's appVersion to a component as VERSION: virt-api's `version` answer, the CR's status. */
const API_TEMPLATE = "charts/kubevirt-ts/templates/api.yaml";
const CONTROLLER_TEMPLATE = "charts/kubevirt-ts/templates/controller.yaml";
const VERSION_ENV_TEMPLATES = [API_TEMPLATE, CONTROLLER_TEMPLATE];
const VERSION_ENV = /\{\s*name:\s*VERSION,\s*value:\s*\{\{\s*\.Chart\.AppVersion\s*\|\s*quote\s*\}\}\s*\}/;
/** Documents whose install commands name a release's image tag. */
const INSTALL_DOCS = ["README.md", "docs/install.md"];
const IMAGE_TAG = /(?:image\.tag=|docker:\/\/[\w./-]+\/[\w-]+:)(\d[\w.-]*)/g;

/** Every place that writes the release, against `version`: what disagrees, and how to fix it. */
export function versionProblems(version: string, read: Read, workspaces: string[]): string[] {
  const problems: string[] = [];
  const expectVersion = (where: string, found: unknown, fix: string) => {
    if (found !== version) problems.push(`${where} is ${JSON.stringify(found)}, not the release ${version}: ${fix}`);
  };
  const npmFix = `run \`npm version ${version} --workspaces --include-workspace-root --no-git-tag-version\``;
  for (const workspace of workspaces) {
    const pkg = JSON.parse(read(`${workspace}/package.json`) ?? "{}") as { version?: unknown };
    expectVersion(`${workspace}/package.json's "version"`, pkg.version, npmFix);
  }
  const lock = JSON.parse(read("package-lock.json") ?? "{}") as {
    version?: unknown;
    packages?: Record<string, { version?: unknown }>;
  };
  expectVersion(`package-lock.json's "version"`, lock.version, npmFix);
  for (const path of ["", ...workspaces])
    expectVersion(`package-lock.json's packages["${path}"].version`, lock.packages?.[path]?.version, npmFix);

  const chart = (parse(read(CHART) ?? "") ?? {}) as { version?: unknown; appVersion?: unknown };
  expectVersion(`${CHART}'s version`, chart.version, `set it to ${version}`);
  expectVersion(`${CHART}'s appVersion`, chart.appVersion, `set it to "${version}"`);
  for (const template of VERSION_ENV_TEMPLATES) {
    if (!VERSION_ENV.test(read(template) ?? ""))
      problems.push(
        `${template} does not set VERSION to {{ .Chart.AppVersion | quote }}: the component would report another`,
      );
  }

  const changelog = read("CHANGELOG.md") ?? "";
  if (!/^## \[Unreleased\]$/m.test(changelog))
    problems.push("CHANGELOG.md has no `## [Unreleased]` section: user-visible changes go there first");
  if (!changelog.split("\n").some((line) => line.startsWith(`## [${version}]`)))
    problems.push(`CHANGELOG.md has no \`## [${version}]\` section: move what Unreleased holds under it`);

  for (const doc of INSTALL_DOCS) {
    for (const [, tag] of (read(doc) ?? "").matchAll(IMAGE_TAG))
      expectVersion(`the image tag ${doc} installs`, tag, `write ${version}`);
  }
  return problems;
}

/** The workspace folders the root package.json's globs (`apps/*`, `e2e`) name. */
function workspacesOf(root: string): string[] {
  const { workspaces } = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { workspaces: string[] };
  return workspaces
    .flatMap((glob) =>
      glob.endsWith("/*")
        ? readdirSync(join(root, glob.slice(0, -2)), { withFileTypes: true })
            .filter((entry) => entry.isDirectory())
            .map((entry) => `${glob.slice(0, -2)}/${entry.name}`)
        : [glob],
    )
    .filter((folder) => existsSync(join(root, folder, "package.json")))
    .sort();
}

const readRepo: Read = (path) =>
  existsSync(join(REPO_ROOT, path)) ? readFileSync(join(REPO_ROOT, path), "utf8") : undefined;

describe("one release version", () => {
  const version = releaseVersion();

  test("the workspaces, the lock file, the chart, CHANGELOG.md and the install commands name it", () => {
    const workspaces = workspacesOf(REPO_ROOT);
    expect(workspaces).toEqual(expect.arrayContaining(["apps/api", "services/handler", "packages/images", "e2e"]));
    expect(versionProblems(version, readRepo, workspaces)).toEqual([]);
  });

  test("the component images are labelled with it", () => {
    expect(componentLabels("virt-api")).toMatchObject({
      "org.opencontainers.image.title": "virt-api",
      "org.opencontainers.image.version": version,
      "org.opencontainers.image.licenses": "Apache-2.0",
    });
  });

  test("a place that drifted is named, with its fix", () => {
    const files: Record<string, string> = {
      "apps/api/package.json": JSON.stringify({ version: "1.2.3" }),
      "e2e/package.json": JSON.stringify({ version: "0.9.0" }),
      "package-lock.json": JSON.stringify({
        version: "1.2.3",
        packages: { "": { version: "1.2.3" }, "apps/api": { version: "1.2.3" }, e2e: { version: "1.2.3" } },
      }),
      [CHART]: 'version: 1.2.3\nappVersion: "1.2.2"\n',
      [API_TEMPLATE]: "- { name: VERSION, value: {{ .Chart.AppVersion | quote }} }",
      [CONTROLLER_TEMPLATE]: '- { name: VERSION, value: "dev" }',
      "CHANGELOG.md": "# Changelog\n\n## [1.2.2] - 2026-01-01\n",
      "README.md": "helm install --set image.tag=1.2.3",
      "docs/install.md": "skopeo copy docker-archive:x docker://registry.example.com/kubevirt-ts/virt-api:1.2.0",
    };
    expect(versionProblems("1.2.3", (path) => files[path], ["apps/api", "e2e"])).toEqual([
      `e2e/package.json's "version" is "0.9.0", not the release 1.2.3: run ` +
        "`npm version 1.2.3 --workspaces --include-workspace-root --no-git-tag-version`",
      `${CHART}'s appVersion is "1.2.2", not the release 1.2.3: set it to "1.2.3"`,
      `${CONTROLLER_TEMPLATE} does not set VERSION to {{ .Chart.AppVersion | quote }}: ` +
        "the component would report another",
      "CHANGELOG.md has no `## [Unreleased]` section: user-visible changes go there first",
      "CHANGELOG.md has no `## [1.2.3]` section: move what Unreleased holds under it",
      'the image tag docs/install.md installs is "1.2.0", not the release 1.2.3: write 1.2.3',
    ]);
  });

  test("a root package.json without a release version is refused by name", () => {
    const root = mkdtempSync(join(tmpdir(), "release-version-"));
    try {
      writeFileSync(join(root, "package.json"), JSON.stringify({ version: "latest" }));
      expect(() => releaseVersion(root)).toThrow(
        `${join(root, "package.json")}: "version" is "latest"; ` +
          'set it to the release as major.minor.patch (e.g. "0.1.0")',
      );
      writeFileSync(join(root, "package.json"), JSON.stringify({ version: "0.2.0-rc.1" }));
      expect(releaseVersion(root)).toBe("0.2.0-rc.1");
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
