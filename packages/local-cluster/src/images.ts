import { type BuiltImage, buildPauseImage } from "@kubevirt-ts/images";
import { type ClusterNode, PAUSE_IMAGE, readClusterNodes } from "./config.ts";
import { log, run } from "./exec.ts";

/** Loads images into one node's containerd, skipping those it already has. */
async function importInto(node: ClusterNode, images: BuiltImage[]): Promise<void> {
  const ctr = (...args: string[]) => run("ctr", ["--address", node.containerdSocket, "--namespace", "k8s.io", ...args]);
  const present = new Set((await ctr("images", "ls", "-q")).split("\n").filter(Boolean));
  for (const image of images) {
    if ([image.reference, ...(image.aliases ?? [])].every((name) => present.has(name))) continue;
    log(`importing ${image.reference}${node.index === 1 ? "" : ` into ${node.name}`}`);
    await ctr("images", "import", image.archive);
  }
}

/** Loads images into every node's containerd: a pod may be scheduled to any of them, and nothing pulls. */
export async function importImages(images: BuiltImage[]): Promise<void> {
  for (const node of await readClusterNodes()) await importInto(node, images);
}

export async function importPauseImage(node: ClusterNode): Promise<void> {
  await importInto(node, [await buildPauseImage(PAUSE_IMAGE)]);
}
