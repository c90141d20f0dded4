#!/usr/bin/env node
// Bundles a service's entry point and its dependencies into dist/main.js,
// the one file its image runs: `kubevirt-ts-bundle src/main.ts`.
import { build } from "esbuild";

const entry = process.argv[2] ?? "src/main.ts";
await build({
  entryPoints: [entry],
  outfile: "dist/main.js",
  bundle: true,
  platform: "node",
  format: "esm",
  target: "node24",
  sourcemap: true,
  logLevel: "warning",
  // Bundled CommonJS dependencies call require(); ESM output has none of its own.
  banner: { js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);" },
});
