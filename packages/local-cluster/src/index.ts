export * from "./config.ts";
export { cleanUp, leftovers } from "./cleanup.ts";
export { importImages, tagImageOnNodes } from "./images.ts";
export { clusterUp } from "./up.ts";
export { CHART, NAMESPACE, RELEASE, chartValues, clusterSync, tagValues } from "./sync.ts";
export {
  HOST_COMPONENTS,
  type HostComponent,
  hostComponentServes,
  killAndRestartHostComponent,
  killContainer,
  qemuPodUids,
  zombies,
} from "./components.ts";
