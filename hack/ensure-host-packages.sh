#!/usr/bin/env bash
# Installs the Debian packages the project needs, when missing: containerd,
# runc, the CNI plugins, iptables and mmdebstrap for the local cluster and its
# images; a compiler and libvirt's headers for the pause image and the
# launcher's libvirt addon; libvirt's schemas and validator for the domain XML;
# libvirtd, QEMU, OVMF (EFI firmware), swtpm (an emulated TPM) and busybox for the tests that boot the
# tiny guest; syslinux (BIOS and EFI) and isolinux (the installer ISO of the tests),
# mtools and dosfstools to make the Debian guest's disk bootable without
# mounting it; genisoimage for the launcher's ISO disks (cloud-init, ConfigMaps, Secrets), whose tests read them
# back with its isoinfo; an SSH client for the e2e login with an access credential's key; openssl for the e2e's
# HTTPS probe target; unzip for KubeVirt's examples, read from its Go module's zip; nftables and iproute2 for the
# launcher's test, which sets up the guest's pod network as the launcher pod's network-setup does.
set -euo pipefail
packages=(containerd runc containernetworking-plugins iptables conntrack mmdebstrap gcc g++ make python3 pkg-config libc6-dev libvirt-dev libvirt-clients libxml2-utils
  libvirt-daemon libvirt-daemon-driver-qemu qemu-system-x86 qemu-utils ovmf swtpm swtpm-tools busybox-static
  syslinux syslinux-common syslinux-efi isolinux mtools dosfstools genisoimage openssh-client openssl unzip nftables iproute2)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "[host] installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi

# The launcher's user, 107 as KubeVirt's qemu user: the tests run libvirt's
# session daemon as it, and libvirt's clients need it to have a name.
if ! getent passwd 107 >/dev/null; then
  echo "[host] adding the user kubevirt-ts-qemu (107)" >&2
  useradd --system --uid 107 --user-group --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin kubevirt-ts-qemu
fi
