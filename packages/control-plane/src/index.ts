export { type ControlPlane, type ControlPlaneOptions, SERVICE_CIDR, kubeconfigFor, startControlPlane } from "./control-plane.ts";
export { installCrds, readCrds } from "./crds.ts";
export { CHART_CRD_DIR, REPO_ROOT, ensureBinaries } from "./paths.ts";
export { Pki } from "./pki.ts";
