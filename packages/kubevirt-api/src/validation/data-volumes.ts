import { parseQuantity } from "../quantity.ts";
import type { DataVolumeSpec } from "../schema/datavolume.ts";
import type { Causes } from "./causes.ts";
import { dnsSubdomainProblem } from "./names.ts";

// CDI's rules for a DataVolume's spec, and what kubevirt-ts's own DataVolume
// controller cannot do: checked for a VM's dataVolumeTemplates and, where
// kubevirt-ts serves the kind, for DataVolumes themselves (the webhook).

const SOURCES = ["http", "registry", "pvc", "blank", "upload"] as const;

/** KubeVirt's and CDI's rules for a DataVolume's spec at `path`, in `namespace`. */
export function validateDataVolumeSpec(
  spec: DataVolumeSpec,
  path: string,
  namespace: string | undefined,
  causes: Causes,
): void {
  const source = spec.source ?? {};
  const sources = SOURCES.filter((s) => source[s] !== undefined);
  if (sources.length !== 1) {
    causes.invalid(
      `${path}.source`,
      `must have exactly one of ${SOURCES.join(", ")}; it has ${sources.length === 0 ? "none" : sources.join(" and ")}`,
    );
  }
  if (spec.pvc && spec.storage)
    causes.invalid(
      `${path}.storage`,
      "is set together with pvc; set one of them (storage sizes the disk, pvc the claim)",
    );
  const claim = spec.storage ?? spec.pvc;
  const claimPath = `${path}.${spec.storage ? "storage" : "pvc"}`;
  if (!claim)
    causes.required(`${path}.storage`, "is required: give the disk's size as storage.resources.requests.storage");
  const size = claim?.resources?.requests.storage;
  // A clone may take its size from its source claim (CDI's storage API); every other source needs one.
  if (claim && size === undefined && !(spec.storage && source.pvc)) {
    causes.required(`${claimPath}.resources.requests.storage`, "is required: give the disk's size, such as 10Gi");
  }
  if (size !== undefined && (parseQuantity(size) ?? 0) <= 0)
    causes.invalid(`${claimPath}.resources.requests.storage`, `must be greater than 0, got ${String(size)}`);
  if (claim?.storageClassName !== undefined) {
    const problem = dnsSubdomainProblem(claim.storageClassName);
    if (problem) causes.invalid(`${claimPath}.storageClassName`, problem);
  }
  if (source.http && !/^https?:\/\/[^/\s]+/.test(source.http.url)) {
    causes.invalid(
      `${path}.source.http.url`,
      `is ${JSON.stringify(source.http.url)}; give an http:// or https:// URL of a qcow2, raw or ISO image`,
    );
  }
  (source.http?.extraHeaders ?? []).forEach((header, i) => {
    if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+:/.test(header))
      causes.invalid(
        `${path}.source.http.extraHeaders[${i}]`,
        `is ${JSON.stringify(header)}; write each header as 'Name: value'`,
      );
  });
  if (source.http?.secretRef !== undefined) {
    const problem = dnsSubdomainProblem(source.http.secretRef);
    if (problem)
      causes.invalid(`${path}.source.http.secretRef`, `${problem}; name a Secret in the DataVolume's namespace`);
  }
  if (source.registry && !/^docker:\/\/\S+$/.test(source.registry.url)) {
    causes.invalid(
      `${path}.source.registry.url`,
      `is ${JSON.stringify(source.registry.url)}; give a containerDisk image as docker://<image>`,
    );
  }
  if (source.pvc) {
    const problem = dnsSubdomainProblem(source.pvc.name);
    if (problem) causes.invalid(`${path}.source.pvc.name`, `${problem}; name the claim to copy`);
    if (namespace !== undefined && source.pvc.namespace !== namespace) {
      causes.notSupported(
        `${path}.source.pvc.namespace`,
        `is ${JSON.stringify(source.pvc.namespace)}; kubevirt-ts copies claims within the DataVolume's own ` +
          `namespace (${namespace}) only, as a pod mounts no other namespace's claim`,
      );
    }
  }
}
