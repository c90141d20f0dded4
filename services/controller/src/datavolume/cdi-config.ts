import { type ControllerManager, type KubeClient, isAlreadyExists, writeStatusIfChanged } from "@kubevirt-ts/kube";
import {
  CDI_API_VERSION,
  CDI_CONFIG_NAME,
  type CdiConfig,
  PART_OF_LABELS,
  kubevirtResources,
} from "@kubevirt-ts/kubevirt-api";

// CDI's CDIConfig where kubevirt-ts serves DataVolumes (no CDI): the controller keeps the one named `config`, as CDI's
// operator does, for what clients read of it: virtctl image-upload without --uploadproxy-url takes
// spec.uploadProxyURLOverride, else status.uploadProxyURL. kubevirt-ts's upload proxy is virt-api's, behind the
// dashboard's address (ADR 15), which the chart hands over; as CDI's, the status repeats the override when one is set.

/** The status the config should have: the override, else the dashboard's address, else none (the chart knows none). */
export function cdiConfigStatus(
  config: Pick<CdiConfig, "spec">,
  uploadProxyUrl: string | undefined,
): CdiConfig["status"] {
  const url = config.spec.uploadProxyURLOverride ?? uploadProxyUrl;
  return url === undefined ? {} : { uploadProxyURL: url };
}

export interface CdiConfigDeps {
  client: KubeClient;
  /** The dashboard's external address, where CDI's upload paths are served (the chart's UPLOAD_PROXY_URL). */
  uploadProxyUrl: string | undefined;
}

/** The CDIConfig controller: one key, `config`, made when missing (or deleted) and its status kept. */
export function registerCdiConfig(manager: ControllerManager, deps: CdiConfigDeps): void {
  const { client, uploadProxyUrl } = deps;
  const configs = manager.informer<CdiConfig>({ client, type: kubevirtResources.cdiConfigs });
  const queue = manager.queue("cdiconfigs");
  const enqueue = () => {
    queue.add(CDI_CONFIG_NAME);
  };
  configs.addHandler({ add: enqueue, update: enqueue, delete: enqueue });
  // None may exist yet: the key is queued once the cache has synced, whatever it holds.
  manager.onSynced(enqueue);
  manager.controller({
    name: "cdiconfig",
    primary: configs,
    queue,
    workers: 1,
    reconcile: async (key) => {
      // Only `config` is CDI's; another CDIConfig is nobody's and is left as it is.
      if (key !== CDI_CONFIG_NAME) return undefined;
      let config = configs.get(CDI_CONFIG_NAME);
      if (!config) {
        try {
          config = await client.create<CdiConfig>(kubevirtResources.cdiConfigs, undefined, {
            apiVersion: CDI_API_VERSION,
            kind: "CDIConfig",
            metadata: { name: CDI_CONFIG_NAME, labels: { ...PART_OF_LABELS } },
            spec: {},
          });
        } catch (error) {
          // Made meanwhile (its watch event brings the key back).
          if (isAlreadyExists(error)) return undefined;
          throw error;
        }
      }
      await writeStatusIfChanged(client, kubevirtResources.cdiConfigs, config, cdiConfigStatus(config, uploadProxyUrl));
      return undefined;
    },
  });
}
