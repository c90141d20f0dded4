export { type ImageConfig, type Layer, contentTag, imageConfigJson, sha256File, tarDirectory, writeDockerArchive } from "./archive.ts";
export { type BuiltImage, COMPONENTS, REGISTRY, buildImages, buildPauseImage } from "./images.ts";
