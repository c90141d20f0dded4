import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";
import { link, mkdir, mkdtemp, rename, rm, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { run } from "./exec.ts";

// Container images as docker-archive tars (what `docker save` writes and
// `ctr images import` reads), assembled from layer tars without Docker.

export interface ImageConfig {
  entrypoint?: string[];
  cmd?: string[];
  env?: string[];
  workingDir?: string;
  user?: string;
  labels?: Record<string, string>;
}

export interface Layer {
  /** An uncompressed tar of the files the layer adds. */
  path: string;
  /** sha256 of that tar, hex. */
  digest: string;
}

export async function sha256File(path: string): Promise<string> {
  const hash = createHash("sha256");
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest("hex");
}

/**
 * Tars a folder reproducibly: sorted names, fixed times and owners (root
 * unless the tree's own owners are kept), so the same files give the same digest.
 */
export async function tarDirectory(dir: string, out: string, options: { keepOwners?: boolean } = {}): Promise<Layer> {
  await mkdir(dirname(out), { recursive: true });
  const owners = options.keepOwners ? ["--numeric-owner"] : ["--owner=0", "--group=0", "--numeric-owner"];
  await run("tar", ["--sort=name", "--mtime=@0", "--format=gnu", ...owners, "-C", dir, "-cf", `${out}.partial`, "."]);
  await rename(`${out}.partial`, out);
  return { path: out, digest: await sha256File(out) };
}

export function imageConfigJson(layers: Layer[], config: ImageConfig): string {
  return JSON.stringify({
    architecture: "amd64",
    os: "linux",
    config: {
      Entrypoint: config.entrypoint,
      Cmd: config.cmd,
      Env: config.env ?? ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"],
      WorkingDir: config.workingDir,
      User: config.user,
      Labels: config.labels,
    },
    rootfs: { type: "layers", diff_ids: layers.map((l) => `sha256:${l.digest}`) },
    history: layers.map(() => ({ created_by: "kubevirt-ts image builder" })),
  });
}

/** The tag of an image: a digest of its layers and configuration, so it changes exactly when they do. */
export function contentTag(layers: Layer[], config: ImageConfig): string {
  return createHash("sha256").update(imageConfigJson(layers, config)).digest("hex").slice(0, 16);
}

/** Writes a docker-archive tar holding one image with the given references. */
export async function writeDockerArchive(
  out: string,
  references: string[],
  layers: Layer[],
  config: ImageConfig,
): Promise<void> {
  await mkdir(dirname(out), { recursive: true });
  const work = await mkdtemp(`${out}.work-`);
  try {
    const configJson = imageConfigJson(layers, config);
    const configName = `${createHash("sha256").update(configJson).digest("hex")}.json`;
    await writeFile(join(work, configName), configJson);
    const layerNames: string[] = [];
    for (const layer of layers) {
      const name = `${layer.digest}/layer.tar`;
      await mkdir(join(work, layer.digest), { recursive: true });
      // Hard links: the base layer is hundreds of megabytes and need not be copied.
      await link(layer.path, join(work, name)).catch(async () => run("cp", [layer.path, join(work, name)]));
      layerNames.push(name);
    }
    await writeFile(
      join(work, "manifest.json"),
      JSON.stringify([{ Config: configName, RepoTags: references, Layers: layerNames }]),
    );
    await run("tar", [
      "--format=gnu",
      "-C",
      work,
      "-cf",
      `${out}.partial`,
      "manifest.json",
      configName,
      ...new Set(layers.map((l) => l.digest)),
    ]);
    await rename(`${out}.partial`, out);
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}
