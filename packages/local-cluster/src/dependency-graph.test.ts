// The workspaces' dependencies point one way (issue 35): apps and services
// build on packages, never the reverse; the API contract (kubevirt-api) is
// beneath the rules the components share (vm-rules), which are beneath the
// node's contract (node-contract); and the dashboard, which runs in the
// browser, never depends on the node's contract. ESLint keeps the
// dashboard's imports of it out (eslint.config.js); this reads every
// workspace's package.json.
import { readFileSync, readdirSync, existsSync } from "node:fs";
import { join } from "node:path";
import { REPO_ROOT } from "@kubevirt-ts/control-plane";
import { describe, expect, test } from "vitest";

interface Workspace {
  /** Its folder, from the repository's root: apps/web, packages/vm-rules, e2e. */
  dir: string;
  name: string;
  /** The workspaces it depends on (dependencies, devDependencies, peerDependencies), by name. */
  deps: string[];
}

/** What may not depend on what, beyond the order of the folders. */
const FORBIDDEN: { from: string; to: string; why: string }[] = [
  {
    from: "@kubevirt-ts/kubevirt-api",
    to: "@kubevirt-ts/vm-rules",
    why: "the API contract is beneath the rules the components share",
  },
  {
    from: "@kubevirt-ts/kubevirt-api",
    to: "@kubevirt-ts/node-contract",
    why: "the API contract is beneath the node's contract",
  },
  {
    from: "@kubevirt-ts/vm-rules",
    to: "@kubevirt-ts/node-contract",
    why: "the shared rules are beneath the node's contract",
  },
  {
    from: "@kubevirt-ts/web",
    to: "@kubevirt-ts/node-contract",
    why: "the dashboard runs in the browser and never reaches a node",
  },
];

/** The folders' order: a workspace may depend on a lower one; packages on packages, apps on apps. */
const LEVEL: Record<string, number> = { packages: 0, services: 1, apps: 2, e2e: 3 };
const levelOf = (dir: string): number => LEVEL[dir.split("/")[0] ?? ""] ?? Number.NaN;

/** Every reason the graph points upward, one sentence each; empty when it does not. */
function upwardDependencies(workspaces: readonly Workspace[]): string[] {
  const byName = new Map(workspaces.map((w) => [w.name, w]));
  const problems: string[] = [];
  for (const w of workspaces) {
    for (const dep of w.deps) {
      const target = byName.get(dep);
      if (target === undefined) continue;
      const from = levelOf(w.dir);
      const to = levelOf(target.dir);
      if (to > from || (to === from && from === LEVEL.services))
        problems.push(`${w.dir} depends on ${target.dir}: move what it needs into a package beneath both`);
      const rule = FORBIDDEN.find((f) => f.from === w.name && f.to === dep);
      if (rule) problems.push(`${w.dir} depends on ${target.dir}: ${rule.why}`);
    }
  }
  // A cycle is an upward edge whichever way it is read.
  const state = new Map<string, "visiting" | "done">();
  const visit = (name: string, path: string[]): void => {
    if (state.get(name) === "done") return;
    if (state.get(name) === "visiting") {
      problems.push(`a cycle: ${[...path.slice(path.indexOf(name)), name].join(" -> ")}`);
      return;
    }
    state.set(name, "visiting");
    for (const dep of byName.get(name)?.deps ?? []) if (byName.has(dep)) visit(dep, [...path, name]);
    state.set(name, "done");
  };
  for (const w of workspaces) visit(w.name, []);
  return problems;
}

function realWorkspaces(): Workspace[] {
  const dirs = ["apps", "services", "packages"].flatMap((top) =>
    readdirSync(join(REPO_ROOT, top)).map((d) => `${top}/${d}`),
  );
  return [...dirs, "e2e"]
    .filter((dir) => existsSync(join(REPO_ROOT, dir, "package.json")))
    .map((dir) => {
      const pkg = JSON.parse(readFileSync(join(REPO_ROOT, dir, "package.json"), "utf8")) as Record<string, unknown>;
      const deps = ["dependencies", "devDependencies", "peerDependencies"].flatMap((k) =>
        Object.keys((pkg[k] ?? {}) as Record<string, string>),
      );
      return { dir, name: String(pkg.name), deps };
    });
}

describe("the workspaces' dependencies", () => {
  test("point downward only, and keep the dashboard off the node's contract", () => {
    const workspaces = realWorkspaces();
    expect(workspaces.map((w) => w.name)).toEqual(
      expect.arrayContaining([
        "@kubevirt-ts/kubevirt-api",
        "@kubevirt-ts/vm-rules",
        "@kubevirt-ts/node-contract",
        "@kubevirt-ts/web",
      ]),
    );
    expect(upwardDependencies(workspaces)).toEqual([]);
  });

  test("an upward one is named with its reason", () => {
    const ws = (dir: string, name: string, ...deps: string[]): Workspace => ({
      dir,
      name: `@kubevirt-ts/${name}`,
      deps: deps.map((d) => `@kubevirt-ts/${d}`),
    });
    const graph = [
      ws("packages/kubevirt-api", "kubevirt-api", "vm-rules"),
      ws("packages/vm-rules", "vm-rules", "kubevirt-api"),
      ws("packages/node-contract", "node-contract", "vm-rules"),
      ws("packages/kube", "kube", "controller"),
      ws("services/controller", "controller", "kube", "handler"),
      ws("services/handler", "handler", "node-contract"),
      ws("apps/web", "web", "node-contract", "vm-rules"),
    ];
    expect(upwardDependencies(graph)).toEqual([
      "packages/kubevirt-api depends on packages/vm-rules: the API contract is beneath the rules the components share",
      "packages/kube depends on services/controller: move what it needs into a package beneath both",
      "services/controller depends on services/handler: move what it needs into a package beneath both",
      "apps/web depends on packages/node-contract: the dashboard runs in the browser and never reaches a node",
      "a cycle: @kubevirt-ts/kubevirt-api -> @kubevirt-ts/vm-rules -> @kubevirt-ts/kubevirt-api",
      "a cycle: @kubevirt-ts/kube -> @kubevirt-ts/controller -> @kubevirt-ts/kube",
    ]);
  });
});
