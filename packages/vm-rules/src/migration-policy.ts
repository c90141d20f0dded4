import { parseQuantity, type MigrationConfiguration, type MigrationPolicy } from "@kubevirt-ts/kubevirt-api";

// Which MigrationPolicy applies to a VMI's migration, and the configuration
// it runs with: KubeVirt's rules. A policy matches a VMI when the VMI has
// every label of its virtualMachineInstanceSelector and the VMI's namespace
// every label of its namespaceSelector (an absent or empty selector asks
// nothing). Of the policies that match, the one matching the most labels of
// both applies; on equal counts, the one matching more of the VMI's; then
// the first by name. The virt-controller applies it once, when it hands the
// migration over: the cluster's configuration with the policy's fields over
// it goes into the VMI's status.migrationState.migrationConfiguration, the
// policy's name into migrationPolicyName, and the source's handler migrates
// by that configuration alone.

type Labels = Readonly<Record<string, string>> | undefined;

/** How many of the selector's labels match, or undefined when one does not. */
function matching(selector: Labels, labels: Labels): number | undefined {
  const wanted = Object.entries(selector ?? {});
  return wanted.every(([key, value]) => labels?.[key] === value) ? wanted.length : undefined;
}

/** The policy that applies to a VMI with these labels, in a namespace with these; undefined when none matches. */
export function matchMigrationPolicy(
  policies: readonly MigrationPolicy[],
  vmiLabels: Labels,
  namespaceLabels: Labels,
): MigrationPolicy | undefined {
  const scored = policies.flatMap((policy) => {
    const vmi = matching(policy.spec.selectors.virtualMachineInstanceSelector, vmiLabels);
    const namespace = matching(policy.spec.selectors.namespaceSelector, namespaceLabels);
    return vmi === undefined || namespace === undefined ? [] : [{ policy, total: vmi + namespace, vmi }];
  });
  scored.sort(
    (a, b) =>
      b.total - a.total ||
      b.vmi - a.vmi ||
      (a.policy.metadata.name ?? "").localeCompare(b.policy.metadata.name ?? "", "en"),
  );
  return scored[0]?.policy;
}

/** The fields of a policy that override the cluster's configuration. */
const POLICY_FIELDS = [
  "allowAutoConverge",
  "allowPostCopy",
  "allowWorkloadDisruption",
  "bandwidthPerMigration",
  "completionTimeoutPerGiB",
] as const;

/**
 * What a migration runs with: the cluster's configuration, the policy's fields over it; and the policy's name, when
 * it changed anything (as KubeVirt's, a policy that sets nothing is not named).
 */
export function migrationConfigurationFor(
  cluster: MigrationConfiguration,
  policy: MigrationPolicy | undefined,
): { migrationConfiguration: MigrationConfiguration; migrationPolicyName?: string } {
  const overrides = Object.fromEntries(
    POLICY_FIELDS.flatMap((field) => (policy?.spec[field] === undefined ? [] : [[field, policy.spec[field]]])),
  );
  if (!policy || Object.keys(overrides).length === 0) return { migrationConfiguration: { ...cluster } };
  return { migrationConfiguration: { ...cluster, ...overrides }, migrationPolicyName: policy.metadata.name ?? "" };
}

/**
 * A bandwidth per second in MiB/s as libvirt takes it, as KubeVirt rounds it: 0 is no limit, anything below 1 MiB is 1.
 */
export function bandwidthMiB(bandwidth: MigrationConfiguration["bandwidthPerMigration"]): number {
  const bytes = bandwidth === undefined ? 0 : (parseQuantity(bandwidth) ?? 0);
  if (bytes <= 0) return 0;
  return bytes < 2 ** 20 ? 1 : Math.round(bytes / 2 ** 20);
}

/**
 * Whether a migration past its completion time switches to post-copy (rather than being aborted), as KubeVirt decides
 * it.
 */
export function switchesToPostCopy(configuration: MigrationConfiguration): boolean {
  const postCopy = configuration.allowPostCopy === true;
  return postCopy && (configuration.allowWorkloadDisruption ?? postCopy);
}
