import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import {
  ApiException,
  ApiextensionsV1Api,
  type KubeConfig,
  type V1CustomResourceDefinition,
  loadAllYaml,
} from "@kubernetes/client-node";

// Installs CustomResourceDefinitions from YAML files and waits until the API
// server serves them.

export async function readCrds(dir: string): Promise<V1CustomResourceDefinition[]> {
  const files = (await readdir(dir)).filter((f) => f.endsWith(".yaml") || f.endsWith(".yml")).sort();
  const crds: V1CustomResourceDefinition[] = [];
  for (const file of files) {
    // loadAllYaml maps the schema's x-kubernetes-* keys onto the client's
    // model properties; passed as plain JSON, the client would drop them.
    for (const value of loadAllYaml(await readFile(join(dir, file), "utf8")) as (V1CustomResourceDefinition | null)[]) {
      if (value?.kind === "CustomResourceDefinition") crds.push(value);
    }
  }
  return crds;
}

async function createOrReplace(api: ApiextensionsV1Api, crd: V1CustomResourceDefinition): Promise<void> {
  try {
    await api.createCustomResourceDefinition({ body: crd });
  } catch (error) {
    if (!(error instanceof ApiException) || error.code !== 409) throw error;
    const name = crd.metadata?.name ?? "";
    const current = await api.readCustomResourceDefinition({ name });
    const body = structuredClone(crd);
    body.metadata = { name, labels: crd.metadata?.labels, resourceVersion: current.metadata?.resourceVersion };
    await api.replaceCustomResourceDefinition({ name, body });
  }
}

export async function installCrds(kubeConfig: KubeConfig, dir: string, timeoutMs = 30_000): Promise<string[]> {
  const api = kubeConfig.makeApiClient(ApiextensionsV1Api);
  const crds = await readCrds(dir);
  if (crds.length === 0) throw new Error(`no CustomResourceDefinitions found in ${dir}; run \`npm run generate\``);
  await Promise.all(crds.map((crd) => createOrReplace(api, crd)));
  const names = crds.map((crd) => crd.metadata?.name ?? "");
  const deadline = Date.now() + timeoutMs;
  for (const name of names) {
    for (;;) {
      const crd = await api.readCustomResourceDefinition({ name });
      if (crd.status?.conditions?.some((c) => c.type === "Established" && c.status === "True")) break;
      if (Date.now() > deadline)
        throw new Error(`CustomResourceDefinition ${name} was not established within ${timeoutMs} ms`);
      await sleep(200);
    }
  }
  return names;
}
