import { execFile } from "node:child_process";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { contentTag, tarDirectory, writeDockerArchive } from "./archive.ts";

const exec = promisify(execFile);
let dir: string;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "archive-test-"));
  await mkdir(join(dir, "files/app"), { recursive: true });
  await writeFile(join(dir, "files/app/main.js"), "console.log('hi');\n");
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("tarDirectory", { timeout: 30_000 }, () => {
  it("gives the same digest for the same files, whenever they were written", async () => {
    const first = await tarDirectory(join(dir, "files"), join(dir, "a.tar"));
    await writeFile(join(dir, "files/app/main.js"), "console.log('hi');\n");
    const second = await tarDirectory(join(dir, "files"), join(dir, "b.tar"));
    expect(second.digest).toBe(first.digest);
  });

  it("gives another digest when a file changes", async () => {
    const first = await tarDirectory(join(dir, "files"), join(dir, "a.tar"));
    await writeFile(join(dir, "files/app/main.js"), "console.log('bye');\n");
    expect((await tarDirectory(join(dir, "files"), join(dir, "b.tar"))).digest).not.toBe(first.digest);
  });
});

describe("writeDockerArchive", { timeout: 30_000 }, () => {
  it("writes what `docker save` writes: a manifest, a config naming the layers' digests, and the layers", async () => {
    const layer = await tarDirectory(join(dir, "files"), join(dir, "layer.tar"));
    const config = { entrypoint: ["node", "/app/main.js"], user: "65532:65532" };
    await writeDockerArchive(join(dir, "image.tar"), ["kubevirt-ts.local/test:1"], [layer], config);
    await mkdir(join(dir, "out"));
    await exec("tar", ["-xf", join(dir, "image.tar"), "-C", join(dir, "out")]);

    const [manifest] = JSON.parse(await readFile(join(dir, "out/manifest.json"), "utf8")) as {
      Config: string;
      RepoTags: string[];
      Layers: string[];
    }[];
    expect(manifest?.RepoTags).toEqual(["kubevirt-ts.local/test:1"]);
    expect(manifest?.Layers).toEqual([`${layer.digest}/layer.tar`]);
    const imageConfig = JSON.parse(await readFile(join(dir, "out", manifest?.Config ?? ""), "utf8")) as {
      rootfs: { diff_ids: string[] };
      config: { Entrypoint: string[] };
    };
    expect(imageConfig.rootfs.diff_ids).toEqual([`sha256:${layer.digest}`]);
    expect(imageConfig.config.Entrypoint).toEqual(["node", "/app/main.js"]);
    const { stdout } = await exec("tar", ["-tf", join(dir, "out", layer.digest, "layer.tar")]);
    expect(stdout).toContain("./app/main.js");
  });

  it("tags by content", async () => {
    const layer = await tarDirectory(join(dir, "files"), join(dir, "layer.tar"));
    expect(contentTag([layer], { cmd: ["a"] })).toBe(contentTag([layer], { cmd: ["a"] }));
    expect(contentTag([layer], { cmd: ["a"] })).not.toBe(contentTag([layer], { cmd: ["b"] }));
  });
});
