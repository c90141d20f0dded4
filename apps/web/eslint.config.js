// The repository's configuration, plus the file Next.js generates here.
import root from "../../eslint.config.js";

// The dashboard runs in the browser: the node's contract (the launcher pod's layout, the handler's routes) is none of
// its business; what it shows of a node, virt-api tells it.
const offTheNode = "The dashboard never imports the node's contract; ask virt-api for what it needs.";

export default [
  ...root,
  { ignores: ["next-env.d.ts"] },
  {
    rules: {
      "no-restricted-imports": [
        "error",
        {
          paths: [{ name: "@kubevirt-ts/node-contract", message: offTheNode }],
          patterns: [{ group: ["@kubevirt-ts/node-contract/*", "**/node-contract/**"], message: offTheNode }],
        },
      ],
    },
  },
];
