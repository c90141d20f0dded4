import { type BuiltImage, buildPauseImage } from "@kubevirt-ts/images";
import { type ClusterNode, PAUSE_IMAGE, readClusterNodes } from "./config.ts";
import { log, run } from "./exec.ts";

/** ctr on one node's containerd, in the namespace the kubelet's images are in. */
const nodeCtr =
  (node: ClusterNode) =>
  (...args: string[]) =>
    run("ctr", ["--address", node.containerdSocket, "--namespace", "k8s.io", ...args]);

/** The names of the images a node has. */
const imageNames = async (node: ClusterNode) =>
  new Set((await nodeCtr(node)("images", "ls", "-q")).split("\n").filter(Boolean));

/** Loads images into one node's containerd, skipping those it already has. */
async function importInto(node: ClusterNode, images: BuiltImage[]): Promise<void> {
  const ctr = nodeCtr(node);
  const present = await imageNames(node);
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

/**
 * Gives an image already in every node's containerd a second name (a release's image under another tag, as an
 * upgrade's would be) and returns it; nothing is pulled or copied.
 */
export async function tagImageOnNodes(reference: string, tag: string): Promise<string> {
  const alias = `${reference.slice(0, reference.lastIndexOf(":"))}:${tag}`;
  for (const node of await readClusterNodes())
    if (!(await imageNames(node)).has(alias)) await nodeCtr(node)("images", "tag", reference, alias);
  return alias;
}
