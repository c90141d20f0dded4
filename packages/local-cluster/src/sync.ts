import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { REPO_ROOT } from "@kubevirt-ts/control-plane";
import {
  type BuiltImage,
  buildBlankDiskImage,
  buildDebianGuestImage,
  buildImages,
  buildTinyGuestImage,
} from "@kubevirt-ts/images";
import { IMAGES_FILE, KUBECONFIG_PATH, NODE_IP } from "./config.ts";
import { log, run, tryRun } from "./exec.ts";
import { importImages } from "./images.ts";
import { webhookClientValues } from "./webhook-client.ts";

// cluster-sync: the project's images into the node's containerd, its CRDs
// applied, its chart installed or upgraded, and the rollout waited for.

export const RELEASE = "kubevirt-ts";
export const NAMESPACE = "kubevirt-ts";
/** The chart, in the work tree. */
export const CHART = join(REPO_ROOT, "charts/kubevirt-ts");

/** The chart's value naming each image's tag. */
const TAG_VALUES: Record<string, string> = {
  "virt-controller": "controller",
  "virt-api": "api",
  "virt-handler": "handler",
  "virt-launcher": "launcher",
  importer: "importer",
  web: "web",
};

/**
 * Helm arguments naming each image's tag. A tag is a content hash that may be all digits, which `--set` would read as
 * a number and the chart's schema refuse: `--set-string` keeps it a string.
 */
export function tagValues(images: Pick<BuiltImage, "name" | "reference">[]): string[] {
  return images.flatMap((image) => {
    const key = TAG_VALUES[image.name];
    const tag = image.reference.split(":").pop();
    return key && tag ? ["--set-string", `tags.${key}=${tag}`] : [];
  });
}

/** The guests the dashboard offers: those that boot from their own disk. */
export function guestImages(
  images: Pick<BuiltImage, "name" | "reference">[],
): { name: string; image: string; description: string; boot: "disk" }[] {
  return images
    .filter((image) => image.name === "debian-guest")
    .map((image) => ({
      name: "debian-12",
      image: image.reference,
      description: "Debian 12: systemd, cloud-init (NoCloud), DHCP, a login on the serial console",
      boot: "disk",
    }));
}

/** The values the local cluster installs the chart with, for these images (what IMAGES_FILE lists). */
export async function chartValues(images: Pick<BuiltImage, "name" | "reference">[]): Promise<string[]> {
  return [
    ...tagValues(images),
    // /dev/kvm here cannot run ordinary guests: VMs run with emulation.
    "--set",
    "useEmulation=true",
    // Heartbeats every 10 s, a silent handler noticed after 40 s (KubeVirt's 60 s and 5 min): the e2e tests stop one.
    "--set",
    "nodeHeartbeat.intervalSeconds=10",
    "--set",
    "nodeHeartbeat.timeoutSeconds=40",
    // Two cores run dozens of mostly idle test guests at once: 10m per vCPU, not KubeVirt's 100m (cpuAllocationRatio
    // 10).
    "--set",
    "cpuAllocationRatio=100",
    "--set-json",
    `guestImages=${JSON.stringify(guestImages(images))}`,
    // The dashboard's certificate names the address `make up` prints.
    "--set-json",
    `web.tls.hosts=${JSON.stringify([NODE_IP])}`,
    // virt-api's webhooks answer only the API server's client certificate, which cluster-up set up.
    ...(await webhookClientValues()),
  ];
}

export async function clusterSync(binDir: string): Promise<void> {
  log("building images");
  // Guests come as images too: a blank containerDisk, the tiny guest for a kernel boot, and
  // the Debian guest (cloud-init, a serial getty) as a bootable containerDisk.
  const images = [
    ...(await buildImages()),
    await buildBlankDiskImage(),
    await buildTinyGuestImage(),
    await buildDebianGuestImage(),
  ];
  await importImages(images);
  const kubeconfig = `--kubeconfig=${KUBECONFIG_PATH}`;
  // The chart applies its CRDs itself, on install and upgrade (its CRD hook, ADR 32).
  log("installing the chart and waiting for the rollout");
  await run(join(binDir, "helm"), [
    kubeconfig,
    "upgrade",
    "--install",
    RELEASE,
    CHART,
    "--namespace",
    NAMESPACE,
    "--create-namespace",
    ...(await chartValues(images)),
    "--wait",
    "--timeout",
    "5m",
  ]);
  // The chart's own check of the release (templates/tests): the dashboard over HTTPS and the subresource API
  // through the aggregation layer answer. The test pod is deleted once it succeeds (so an uninstall leaves nothing)
  // and kept when it fails: then its log says which check failed.
  log("helm test: the release answers");
  try {
    await run(join(binDir, "helm"), [kubeconfig, "test", RELEASE, "--namespace", NAMESPACE, "--timeout", "3m"]);
  } catch (error) {
    const testLog = await tryRun(join(binDir, "kubectl"), [kubeconfig, "logs", "-n", NAMESPACE, "kubevirt-ts-test"]);
    throw new Error(`helm test failed; the test pod's log:\n${testLog ?? "(none)"}`, { cause: error });
  }
  await writeFile(IMAGES_FILE, `${JSON.stringify(images, null, 2)}\n`);
  log("synced");
}
