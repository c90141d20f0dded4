import { NODE_IP } from "@kubevirt-ts/local-cluster";

// What the cluster suites read from the environment.

/** The dashboard's address as `make up` prints it; hack/test.sh sets it for every suite. */
export const DASHBOARD_URL = process.env.KUBEVIRT_TS_DASHBOARD_URL ?? `https://${NODE_IP}:30080`;

/** The suite's environment with more variables, for a program it runs (ssh, given SSH_ASKPASS). */
export const environmentWith = (more: Record<string, string>): NodeJS.ProcessEnv => ({ ...process.env, ...more });
