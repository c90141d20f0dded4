#!/usr/bin/env node
// Bundles a service's entry point and its dependencies into dist/main.js,
// the one file its image runs: `kubevirt-ts-bundle src/main.ts`. Packages
// with native addons stay outside (`--external <package>`); the image ships
// them in node_modules.
import { parseArgs } from "node:util";
import { type Plugin, build } from "esbuild";

/**
 * `import ... from "node:http"` (and https) as the plain module: Node's ESM namespace of a built-in reads every export,
 * among them http's lazy WebSocket getters, which load Node's bundled undici (~30 ms of CPU at each process's start).
 * The shim exports the module and its plain properties, never calling a getter.
 */
const plainBuiltins: Plugin = {
  name: "plain-builtins",
  setup(b) {
    b.onResolve({ filter: /^(node:)?https?$/ }, ({ kind, path }) =>
      kind === "import-statement" ? { path: path.replace(/^node:/, ""), namespace: "plain-builtin" } : undefined,
    );
    b.onLoad({ filter: /.*/, namespace: "plain-builtin" }, async ({ path }) => {
      const module = (await import(`node:${path}`)) as { default: object };
      const plain = Object.entries(Object.getOwnPropertyDescriptors(module.default))
        .filter(([name, d]) => "value" in d && /^[A-Za-z_$][\w$]*$/.test(name))
        .map(([name]) => name);
      const contents =
        `const m = process.getBuiltinModule("node:${path}");\nexport default m;\n` +
        plain.map((name) => `export const ${name} = m.${name};`).join("\n");
      return { contents, loader: "js" };
    });
  },
};

const { positionals, values } = parseArgs({
  allowPositionals: true,
  options: { external: { type: "string", multiple: true } },
});
const entry = positionals[0] ?? "src/main.ts";
await build({
  entryPoints: [entry],
  outfile: "dist/main.js",
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node24",
  sourcemap: true,
  logLevel: "warning",
  external: values.external ?? [],
  plugins: [plainBuiltins],
  // Bundled CommonJS dependencies call require(); ESM output has none of its own.
  banner: {
    js:
      "import { createRequire as __createRequire } from 'node:module'; const " +
      "require = __createRequire(import.meta.url);",
  },
});
