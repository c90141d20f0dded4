#!/usr/bin/env node
// Bundles a service's entry point and its dependencies into dist/main.js,
// the one file its image runs: `kubevirt-ts-bundle src/main.ts`. Packages
// with native addons stay outside (`--external <package>`); the image ships
// them in node_modules.
import { parseArgs } from "node:util";
import { build } from "esbuild";

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
  // Bundled CommonJS dependencies call require(); ESM output has none of its own.
  banner: {
    js:
      "import { createRequire as __createRequire } from 'node:module'; const " +
      "require = __createRequire(import.meta.url);",
  },
});
