import { defineConfig } from "@playwright/test";
import base from "./playwright.config.ts";

// `make screenshots`: the pictures of the dashboard in docs/screenshots,
// taken from the local cluster in light and dark mode. Not a test: it
// writes files into the work tree, to be committed when the dashboard
// changes.
export default defineConfig({
  ...base,
  testDir: "screenshots",
  outputDir: "test-results/screenshots",
  workers: 1,
  timeout: 600_000,
  reporter: [["list"]],
  use: { ...base.use, screenshot: "off", trace: "off" },
});
