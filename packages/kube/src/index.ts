export { kubevirtApiCheck, loadKubeConfig } from "./client.ts";
