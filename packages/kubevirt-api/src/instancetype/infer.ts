import { kubevirtResources } from "../resources.ts";
import type { Lookup, Which } from "./find.ts";

// inferFromVolume, as KubeVirt's VM mutating webhook resolves it: the
// instancetype or preference a VM asks to take from one of its volumes is
// named by labels on what backs that volume. A persistentVolumeClaim volume:
// its claim's labels. A dataVolume volume: the source claim of its
// dataVolumeTemplate; or the DataVolume itself (its labels, then its source
// claim), or the claim of its name once the DataVolume is gone. The webhook
// then sets the matcher's name and kind and drops inferFromVolume. With
// inferFromVolumeFailurePolicy Ignore, a volume that gives no answer (no
// label, a source without a claim) drops the matcher instead, and an inferred
// instancetype drops the template's memory, which such VMs carry as their
// fallback. A volume that is not there, or a claim that cannot be read, is
// refused whatever the policy, as KubeVirt's.

export const DEFAULT_LABELS: Record<Which, { name: string; kind: string }> = {
  instancetype: {
    name: "instancetype.kubevirt.io/default-instancetype",
    kind: "instancetype.kubevirt.io/default-instancetype-kind",
  },
  preference: {
    name: "instancetype.kubevirt.io/default-preference",
    kind: "instancetype.kubevirt.io/default-preference-kind",
  },
};

const claims = { group: "", version: "v1", plural: "persistentvolumeclaims", namespaced: true } as const;

interface Labelled {
  metadata?: { labels?: Record<string, string> };
}
interface DataVolumeSpecLike {
  source?: { pvc?: { name?: string; namespace?: string }; [other: string]: unknown };
  sourceRef?: { kind?: string; name?: string };
}
/** What inference reads of a VM. */
export interface InferringVm {
  metadata?: { namespace?: string };
  spec?: {
    instancetype?: MatcherLike;
    preference?: MatcherLike;
    dataVolumeTemplates?: { metadata?: { name?: string }; spec?: DataVolumeSpecLike }[];
    template?: {
      spec?: {
        volumes?: { name: string; persistentVolumeClaim?: { claimName: string }; dataVolume?: { name: string } }[];
        domain?: { memory?: unknown };
      };
    };
  };
}
interface MatcherLike {
  name?: string;
  kind?: string;
  inferFromVolume?: string;
  inferFromVolumeFailurePolicy?: string;
}

/** What a volume says: a name and maybe a kind, or why it says nothing (`ignorable`: Ignore may pass over it). */
type Answer = { name: string; kind?: string } | { problem: string; ignorable: boolean };

/** A refusal of the VM, at the matcher's inferFromVolume. */
export interface InferenceRefusal {
  field: string;
  message: string;
}

function fromLabels(object: Labelled, which: Which, what: string): Answer {
  const labels = object.metadata?.labels ?? {};
  const name = labels[DEFAULT_LABELS[which].name];
  if (name === undefined) return { problem: `${what} has no ${DEFAULT_LABELS[which].name} label`, ignorable: true };
  const kind = labels[DEFAULT_LABELS[which].kind];
  return kind === undefined ? { name } : { name, kind };
}

async function fromClaim(lookup: Lookup, namespace: string | undefined, name: string, which: Which): Promise<Answer> {
  const claim = (await lookup(claims, namespace, name)) as Labelled | undefined;
  if (!claim) return { problem: `the PersistentVolumeClaim ${namespace ?? ""}/${name} is not found`, ignorable: false };
  return fromLabels(claim, which, `the PersistentVolumeClaim ${namespace ?? ""}/${name}`);
}

async function fromDataVolumeSpec(
  lookup: Lookup,
  spec: DataVolumeSpecLike | undefined,
  namespace: string | undefined,
  which: Which,
  what: string,
): Promise<Answer> {
  const pvc = spec?.source?.pvc;
  if (pvc?.name) return fromClaim(lookup, pvc.namespace ?? namespace, pvc.name, which);
  if (spec?.sourceRef)
    return {
      problem: `${what} is filled from a ${spec.sourceRef.kind ?? "DataSource"}, which kubevirt-ts does not read`,
      ignorable: false,
    };
  return { problem: `${what} is not copied from a claim, so nothing names its ${which}`, ignorable: true };
}

async function answerFor(vm: InferringVm, volumeName: string, which: Which, lookup: Lookup): Promise<Answer> {
  const namespace = vm.metadata?.namespace;
  const volume = vm.spec?.template?.spec?.volumes?.find((v) => v.name === volumeName);
  if (!volume) return { problem: `no volume is named ${JSON.stringify(volumeName)}`, ignorable: false };
  if (volume.persistentVolumeClaim) return fromClaim(lookup, namespace, volume.persistentVolumeClaim.claimName, which);
  if (volume.dataVolume) {
    const name = volume.dataVolume.name;
    const template = vm.spec?.dataVolumeTemplates?.find((t) => t.metadata?.name === name);
    if (template) return fromDataVolumeSpec(lookup, template.spec, namespace, which, `the dataVolumeTemplate ${name}`);
    const dataVolume = (await lookup(kubevirtResources.dataVolumes, namespace, name)) as
      (Labelled & { spec?: DataVolumeSpecLike }) | undefined;
    // A DataVolume that is gone (CDI's garbage collection) leaves its claim, of its name.
    if (!dataVolume) return fromClaim(lookup, namespace, name, which);
    const labelled = fromLabels(dataVolume, which, `the DataVolume ${name}`);
    return "name" in labelled
      ? labelled
      : fromDataVolumeSpec(lookup, dataVolume.spec, namespace, which, `the DataVolume ${name}`);
  }
  return { problem: `the volume ${volumeName} is neither a persistentVolumeClaim nor a dataVolume`, ignorable: true };
}

/**
 * The VM with its instancetype and preference inferred from their volumes (a copy; the VM given is not changed), or
 * the refusals that say why they could not be. A VM that asks for no inference is given back as it is.
 */
export async function inferFromVolumes<V extends InferringVm>(
  vm: V,
  lookup: Lookup,
): Promise<{ vm: V; refusals: InferenceRefusal[] }> {
  const refusals: InferenceRefusal[] = [];
  if (!vm.spec?.instancetype?.inferFromVolume && !vm.spec?.preference?.inferFromVolume) return { vm, refusals };
  const inferred = structuredClone(vm);
  const spec = inferred.spec ?? {};
  // A matcher dropped under Ignore is set undefined here, and leaves the object (JSON has no undefined).
  for (const which of ["instancetype", "preference"] as const) {
    const matcher = spec[which];
    if (!matcher?.inferFromVolume) continue;
    const ignore = matcher.inferFromVolumeFailurePolicy === "Ignore";
    const answer = await answerFor(inferred, matcher.inferFromVolume, which, lookup);
    if ("name" in answer) {
      spec[which] = answer.kind === undefined ? { name: answer.name } : { name: answer.name, kind: answer.kind };
      // The memory such a VM carries is its fallback for when nothing is inferred: the instancetype gives it now.
      if (which === "instancetype" && ignore && spec.template?.spec?.domain) delete spec.template.spec.domain.memory;
    } else if (answer.ignorable && ignore) {
      spec[which] = undefined;
    } else {
      refusals.push({
        field: `spec.${which}.inferFromVolume`,
        message:
          `cannot infer the ${which} from volume ${matcher.inferFromVolume}: ${answer.problem}; label ` +
          `it ${DEFAULT_LABELS[which].name}=<name>, name the ${which} ` +
          `instead${answer.ignorable ? ", or set inferFromVolumeFailurePolicy: Ignore" : ""}`,
      });
    }
  }
  return { vm: JSON.parse(JSON.stringify(inferred)) as V, refusals };
}
