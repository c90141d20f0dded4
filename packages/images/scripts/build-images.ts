#!/usr/bin/env node
// Builds the component images (all, or those named) and writes their
// references to .local/images.json for cluster-sync:
//   build-images.ts [virt-controller ...]
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { REPO_ROOT } from "@kubevirt-ts/control-plane";
import { buildImages } from "../src/index.ts";

const images = await buildImages(process.argv.slice(2));
await mkdir(join(REPO_ROOT, ".local"), { recursive: true });
await writeFile(join(REPO_ROOT, ".local/images.json"), `${JSON.stringify(images, null, 2)}\n`);
for (const image of images) console.log(`${image.reference}  ${image.archive}`);
