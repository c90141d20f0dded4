export {
  type ImageConfig,
  type Layer,
  contentTag,
  imageConfigJson,
  sha256File,
  tarDirectory,
  writeDockerArchive,
} from "./archive.ts";
export {
  BLANK_DISK_IMAGE,
  DEBIAN_GUEST_IMAGE,
  type BuiltImage,
  COMPONENTS,
  REGISTRY,
  buildBlankDiskImage,
  buildContainerDiskImage,
  buildDebianGuestImage,
  buildTinyGuestImage,
  buildImages,
  buildLocalPathHelperImage,
  buildPauseImage,
  buildProbeClient,
} from "./images.ts";
export { RELEASE_VERSION, componentLabels, releaseVersion } from "./version.ts";
export { TINY_GUEST_READY, type TinyGuest, buildTinyGuest } from "./guest/tiny.ts";
export { type CpioEntry, cpioArchive } from "./cpio.ts";
export { DEBIAN_GUEST_PACKAGES, buildDebianGuestDisk } from "./guest/debian.ts";
export { INSTALLED_BOOT_ARG, buildTinyInstallerIso } from "./guest/installer.ts";
export { tinyGuestDomain, tinyGuestVmiWithScratchDisk } from "./guest/tiny-vmi.ts";
