// The README, CONTRIBUTING.md and the docs tree name commands and paths of
// this repository; each must exist, so a newcomer's first command works and a
// rename cannot leave a document behind (issue 35).
import { existsSync, readFileSync, readdirSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { REPO_ROOT } from "@kubevirt-ts/control-plane";
import { describe, expect, test } from "vitest";

/** The documents whose commands and paths are checked. */
const CHECKED = ["README.md", "CONTRIBUTING.md", "docs/index.md", "docs/testing.md"];
/** The README stays short; the rest lives in docs/. */
const README_MAX_BYTES = 8 * 1024;
/** Scripts the documents name ahead of the commit that adds them; each must still be missing. */
const PENDING_SCRIPTS: Record<string, string> = {};
/** A repository path in code starts with one of these folders. */
const REPO_PATH = /^(?:apps|services|packages|charts|e2e|docs|hack|\.ci|cluster-up|examples)\/[\w./-]*$/;

interface Repo {
  exists: (path: string) => boolean;
  makeTargets: Set<string>;
  npmScripts: Set<string>;
  turboTasks: Set<string>;
}

function realRepo(): Repo {
  const makefile = readFileSync(join(REPO_ROOT, "Makefile"), "utf8");
  const pkg = JSON.parse(readFileSync(join(REPO_ROOT, "package.json"), "utf8")) as { scripts: Record<string, string> };
  const turbo = JSON.parse(readFileSync(join(REPO_ROOT, "turbo.json"), "utf8")) as { tasks: Record<string, unknown> };
  return {
    exists: (path) => existsSync(join(REPO_ROOT, path)),
    makeTargets: new Set([...makefile.matchAll(/^([\w-]+):/gm)].map((m) => m[1] ?? "")),
    npmScripts: new Set(Object.keys(pkg.scripts)),
    turboTasks: new Set(Object.keys(turbo.tasks)),
  };
}

/** The text in code: fenced blocks and inline spans. */
function codeOf(markdown: string): string[] {
  const fenced = [...markdown.matchAll(/^```[^\n]*\n([\s\S]*?)^```/gm)].map((m) => m[1] ?? "");
  const prose = markdown.replace(/^```[^\n]*\n[\s\S]*?^```/gm, "");
  const inline = [...prose.matchAll(/`([^`\n]+)`/g)].map((m) => m[1] ?? "");
  return [...fenced, ...inline];
}

/** What a document (at `file`, relative to the repository) names that does not exist. */
export function problemsOf(file: string, markdown: string, repo: Repo): string[] {
  const problems: string[] = [];
  const prose = markdown.replace(/^```[^\n]*\n[\s\S]*?^```/gm, "").replace(/`[^`\n]+`/g, "");
  for (const [, target = ""] of prose.matchAll(/\]\(([^)\s]+)\)/g)) {
    if (/^(?:[a-z]+:|#)/.test(target)) continue;
    const path = relative(REPO_ROOT, join(REPO_ROOT, dirname(file), decodeURI(target.replace(/#.*$/, ""))));
    if (!repo.exists(path)) problems.push(`${file}: the link ${target} leads to ${path}, which does not exist`);
  }
  for (const code of codeOf(markdown)) {
    for (const [, target = ""] of code.matchAll(/\bmake ([a-z][\w-]*)/g)) {
      if (!repo.makeTargets.has(target)) problems.push(`${file}: \`make ${target}\` is no target of the Makefile`);
    }
    for (const [, script = ""] of code.matchAll(/\bnpm run ([\w:-]+)/g)) {
      if (!repo.npmScripts.has(script) && !(script in PENDING_SCRIPTS))
        problems.push(`${file}: \`npm run ${script}\` is no script of package.json`);
    }
    for (const [, task = ""] of code.matchAll(/\bturbo run ([\w:-]+)/g)) {
      if (!repo.turboTasks.has(task)) problems.push(`${file}: \`turbo run ${task}\` is no task of turbo.json`);
    }
    for (const [script = ""] of code.matchAll(/\bhack\/[\w.-]+\.sh\b/g)) {
      if (!repo.exists(script)) problems.push(`${file}: ${script} does not exist`);
    }
    for (const word of code.split(/[\s"'=]+/)) {
      const path = word.replace(/[),;:.]+$/, "");
      if (REPO_PATH.test(path) && !/^hack\/[\w.-]+\.sh$/.test(path) && !repo.exists(path))
        problems.push(`${file}: the path ${path} does not exist`);
    }
  }
  return problems;
}

/** docs/*.md and docs/adr/*.md, relative to docs/. */
function docsFiles(): string[] {
  const docs = join(REPO_ROOT, "docs");
  const here = readdirSync(docs).filter((f) => f.endsWith(".md"));
  const adrs = readdirSync(join(docs, "adr"))
    .filter((f) => f.endsWith(".md"))
    .map((f) => `adr/${f}`);
  return [...here, ...adrs].filter((f) => f !== "index.md");
}

describe("the README and the docs tree", () => {
  const repo = realRepo();

  test.each(CHECKED)("every link, make target, npm script, hack script and path %s names exists", (file) => {
    expect(problemsOf(file, readFileSync(join(REPO_ROOT, file), "utf8"), repo)).toEqual([]);
  });

  test(`README.md is at most ${String(README_MAX_BYTES)} bytes; the rest belongs in docs/`, () => {
    expect(readFileSync(join(REPO_ROOT, "README.md")).length).toBeLessThanOrEqual(README_MAX_BYTES);
  });

  test("docs/index.md links every document in docs/ and docs/adr/", () => {
    const index = readFileSync(join(REPO_ROOT, "docs/index.md"), "utf8");
    const linked = new Set([...index.matchAll(/\]\(([^)#\s]+)/g)].map((m) => m[1]));
    expect(docsFiles().filter((f) => !linked.has(f))).toEqual([]);
  });

  test.each(Object.entries(PENDING_SCRIPTS))(
    "the pending script %s is still missing (%s): once added, drop it from PENDING_SCRIPTS",
    (script) => {
      expect(repo.npmScripts.has(script)).toBe(false);
    },
  );

  test("a document naming what does not exist is caught", () => {
    const fake: Repo = {
      exists: (path) => path === "docs/api.md" || path === "hack/up.sh",
      makeTargets: new Set(["up"]),
      npmScripts: new Set(["lint"]),
      turboTasks: new Set(["build"]),
    };
    const markdown = [
      "[ok](docs/api.md) [gone](docs/gone.md#x) [web](https://kubevirt.io) [here](#top)",
      "```sh\nmake up && make nothing\nhack/up.sh; hack/missing.sh\nhack/run.sh npm run lint && npm run " +
        "absent && npx turbo run build && npx turbo run nothing\n```",
      "See `services/nowhere/src/x.ts`, `docs/api.md`, and `src/relative.ts`.",
    ].join("\n");
    expect(problemsOf("README.md", markdown, fake)).toEqual([
      "README.md: the link docs/gone.md#x leads to docs/gone.md, which does not exist",
      "README.md: `make nothing` is no target of the Makefile",
      "README.md: `npm run absent` is no script of package.json",
      "README.md: `turbo run nothing` is no task of turbo.json",
      "README.md: hack/missing.sh does not exist",
      "README.md: hack/run.sh does not exist",
      "README.md: the path services/nowhere/src/x.ts does not exist",
    ]);
  });
});
