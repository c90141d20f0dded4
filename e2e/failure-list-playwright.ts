// Playwright loads a reporter as a module's default export.
export { PlaywrightFailureList as default } from "./failure-list.ts";
