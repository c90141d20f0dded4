// The repository's configuration, plus the file Next.js generates here.
import root from "../../eslint.config.js";

export default [...root, { ignores: ["next-env.d.ts"] }];
