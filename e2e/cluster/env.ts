import { NODE_IP } from "@kubevirt-ts/local-cluster";

// What the cluster suites read from the environment.

/** The dashboard's address as `make up` prints it; hack/test.sh sets it for every suite. */
export const DASHBOARD_URL = process.env.KUBEVIRT_TS_DASHBOARD_URL ?? `https://${NODE_IP}:30080`;

/** The suite's environment with more variables, for a program it runs (ssh, given SSH_ASKPASS). */
export const environmentWith = (more: Record<string, string>): NodeJS.ProcessEnv => ({ ...process.env, ...more });

/** Where hack/run.sh keeps what is built or fetched once per version (hack/versions.sh). */
export const CACHE_DIR = process.env.KUBEVIRT_TS_CACHE ?? `${process.env.HOME ?? "/root"}/.cache/kubevirt-ts`;

/** The Go module proxy that Go's own builds here use: the first of GOPROXY's URLs, as `go` takes them. */
export const GO_PROXY = (process.env.GOPROXY ?? "").split(/[,|]/).find((entry) => entry.startsWith("https://")) ?? "https://proxy.golang.org";
