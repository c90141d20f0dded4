import { type BuiltImage, buildPauseImage } from "@kubevirt-ts/images";
import { CONTAINERD_SOCKET, PAUSE_IMAGE } from "./config.ts";
import { log, run } from "./exec.ts";

const ctr = (...args: string[]) => run("ctr", ["--address", CONTAINERD_SOCKET, "--namespace", "k8s.io", ...args]);

/** Loads images into the node's containerd, skipping those it already has. */
export async function importImages(images: BuiltImage[]): Promise<void> {
  const present = new Set((await ctr("images", "ls", "-q")).split("\n").filter(Boolean));
  for (const image of images) {
    if ([image.reference, ...(image.aliases ?? [])].every((name) => present.has(name))) continue;
    log(`importing ${image.reference}`);
    await ctr("images", "import", image.archive);
  }
}

export async function importPauseImage(): Promise<void> {
  await importImages([await buildPauseImage(PAUSE_IMAGE)]);
}
