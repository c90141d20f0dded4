// One lint configuration for the whole repository: type-checked rules from
// typescript-eslint on every TypeScript file. The Node workspaces (packages,
// services, the API) are linted in one run, as one TypeScript program
// (tsconfig.workspaces.json, `npm run lint:workspaces`): each imports the
// others' sources, so a run per workspace would check them all again. The
// dashboard and the end-to-end suites, with the DOM's types, are linted per
// package by turbo.
import js from "@eslint/js";
import tseslint from "typescript-eslint";

export default tseslint.config(
  { ignores: ["**/dist/**", "**/node_modules/**", "**/.next/**", "**/.turbo/**", "**/coverage/**"] },
  js.configs.recommended,
  ...tseslint.configs.strictTypeChecked,
  ...tseslint.configs.stylisticTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      "@typescript-eslint/consistent-type-imports": ["error", { fixStyle: "inline-type-imports" }],
      "@typescript-eslint/no-non-null-assertion": "error",
      // Prettier lays the code out at 120 columns (npm run format); what it cannot break, a comment or a string, is
      // kept within them by hand.
      "max-len": ["error", { code: 120, ignoreUrls: true }],
      // @kubernetes/client-node declares its API objects as classes, yet they
      // are plain data on the wire and its methods take object literals.
      "@typescript-eslint/no-unsafe-class-instance-assignment": "off",
      "@typescript-eslint/restrict-template-expressions": ["error", { allowNumber: true }],
      "no-restricted-properties": [
        "error",
        { object: "process", property: "env", message: "Read the environment in the package's env.ts only." },
      ],
    },
  },
  {
    files: ["packages/**", "services/**", "apps/api/**"],
    languageOptions: {
      parserOptions: {
        projectService: false,
        project: "./tsconfig.workspaces.json",
        tsconfigRootDir: import.meta.dirname,
      },
    },
  },
  {
    files: ["**/env.ts", "**/*.config.ts"],
    rules: { "no-restricted-properties": "off" },
  },
  {
    files: ["**/*.js"],
    extends: [tseslint.configs.disableTypeChecked],
  },
);
