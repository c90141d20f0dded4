// The sockets a live migration goes through, in the sockets volume of both
// launcher pods. The volume is mounted at the same path in every launcher
// pod, so one path names, in the source pod, the handler's proxy socket that
// libvirt or QEMU connects to and, in the target pod, the socket the target's
// libvirt or QEMU listens on: the source's libvirt passes its URIs to the
// target's unchanged, as KubeVirt's do with their migrationproxy folder.

export const MIGRATION_SOCKETS = {
  /**
   * The target launcher's libvirt (it relays this socket to its session daemon's); the source's libvirt connects to it,
   * peer to peer.
   */
  libvirt: "migration-libvirt.sock",
  /** QEMU's migration stream: the target's QEMU listens on it (libvirt's migration URI unix://). */
  memory: "migration-memory.sock",
  /** The copy of the disks local to the pod: the target's QEMU serves NBD on it (libvirt's disks URI unix://). */
  disks: "migration-disks.sock",
} as const;

export type MigrationSocket = keyof typeof MIGRATION_SOCKETS;
