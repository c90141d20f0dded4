export {
  type Certificates,
  type ControlPlane,
  type ControlPlaneOptions,
  FIRST_SERVICE_IP,
  FRONT_PROXY_CLIENT,
  SERVICE_CIDR,
  createCertificates,
  kubeconfigFor,
  startControlPlane,
} from "./control-plane.ts";
export { type ManagedProcess, logTail, spawnManaged } from "./process.ts";
export { installCrds, readCrds } from "./crds.ts";
export { CHART_CRD_DIR, REPO_ROOT, ensureBinaries } from "./paths.ts";
export { freePort } from "./ports.ts";
export { Pki } from "./pki.ts";
export { type PrometheusOptions, type StartedPrometheus, startPrometheus } from "./prometheus.ts";
