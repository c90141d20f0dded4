import { createHash } from "node:crypto";
import { mkdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { type Layer, sha256File } from "./archive.ts";
import { env } from "./env.ts";
import { exists, log, run } from "./exec.ts";

// Debian bookworm root filesystems made with mmdebstrap, cached by their
// package list: the base layer of every image.

export const DEBIAN_SUITE = "bookworm";

const EXCLUDED_PATHS = [
  "/usr/share/doc/*",
  "/usr/share/man/*",
  "/usr/share/info/*",
  "/usr/share/locale/*",
  "/usr/share/lintian/*",
];

export interface RootfsSpec {
  name: string;
  packages: string[];
  /** Shell commands run on the finished tree ($1), e.g. adding a user. */
  hooks?: string[];
}

export async function buildRootfs(spec: RootfsSpec): Promise<Layer> {
  const key = createHash("sha256")
    .update(
      JSON.stringify({
        suite: DEBIAN_SUITE,
        packages: [...spec.packages].sort(),
        hooks: spec.hooks ?? [],
        excluded: EXCLUDED_PATHS,
        mirror: env.DEBIAN_MIRROR,
      }),
    )
    .digest("hex")
    .slice(0, 16);
  const dir = join(env.KUBEVIRT_TS_CACHE, "rootfs");
  const out = join(dir, `${spec.name}-${DEBIAN_SUITE}-${key}.tar`);
  if (!(await exists(out))) {
    await mkdir(dir, { recursive: true });
    log(
      `building the ${spec.name} root filesystem with mmdebstrap (${spec.packages.length} packages; minutes when cold)`,
    );
    await rm(`${out}.partial`, { force: true });
    let lines = 0;
    await run(
      "mmdebstrap",
      [
        "--variant=minbase",
        "--mode=root",
        "--format=tar",
        `--include=${spec.packages.join(",")}`,
        ...EXCLUDED_PATHS.map((p) => `--dpkgopt=path-exclude=${p}`),
        '--customize-hook=rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*',
        ...(spec.hooks ?? []).map((hook) => `--customize-hook=${hook}`),
        DEBIAN_SUITE,
        `${out}.partial`,
        env.DEBIAN_MIRROR,
      ],
      {
        progress: (line) => {
          if (line.startsWith("I:") || ++lines % 200 === 0) log(`${spec.name}: ${line}`);
        },
      },
    );
    await writeFile(`${out}.sha256`, await sha256File(`${out}.partial`));
    await rename(`${out}.partial`, out);
  }
  return { path: out, digest: (await readFile(`${out}.sha256`, "utf8")).trim() };
}
