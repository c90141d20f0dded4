#!/usr/bin/env node
// Builds the component images (all, or those named) and prints each one's
// reference and docker-archive tar, e.g. to push them to a registry:
//   kubevirt-ts-build-images [virt-controller ...]
import { buildImages } from "../src/index.ts";

for (const image of await buildImages(process.argv.slice(2))) console.log(`${image.reference}  ${image.archive}`);
