"use client";

import type { VirtualMachine, VirtualMachineInstance } from "@kubevirt-ts/kubevirt-api";
import { restoreInPlaceAvailability, snapshotAvailability } from "@kubevirt-ts/vm-rules";
import { useMutation, useQuery } from "@tanstack/react-query";
import Link from "next/link";
import { useState } from "react";
import {
  type SnapshotRow,
  defaultSnapshotName,
  indicationBadges,
  newVmNameProblem,
  restoreState,
  snapshotSize,
  snapshotState,
} from "../../../../lib/snapshots";
import { describeError, useTRPC, toastOutcome } from "../../../../lib/trpc";
import { actionAllowed } from "../../../../lib/vm-status";
import { useConfirm } from "../../../ui/confirm";
import { useToast } from "../../../ui/toasts";
import { ActionButton } from "../../shell";
import { NewVmNameField } from "./new-vm-name-field";

// A VM's Snapshots tab: take a snapshot (named after the VM and the moment, or as typed), its snapshots with when
// they were taken, their state, what the VM was like (indications), which volumes each holds and its size; per
// snapshot Restore onto the VM (while it is stopped), Restore as a new VM under a name typed here, and Delete; and the
// restores made of them. Each button is disabled, with the reason, for a user who may not or while the VM's state
// stands in the way (vm-rules' snapshot rules, which the API refuses with too). The lists are polled, as the VM's
// migrations are.

type Permission = { allowed: boolean; reason?: string } | undefined;

export interface SnapshotPermissions {
  takeSnapshot: Permission;
  deleteSnapshot: Permission;
  restoreSnapshot: Permission;
  restoreAsNewVm: Permission;
}

const POLL_MS = 2_000;

function TakeSnapshot({ vm, permission }: { vm: VirtualMachine; permission: Permission }) {
  const trpc = useTRPC();
  const toast = useToast();
  const name = vm.metadata.name ?? "";
  const namespace = vm.metadata.namespace ?? "";
  const [snapshot, setSnapshot] = useState(() => defaultSnapshotName(name, new Date()));
  const take = useMutation(trpc.snapshots.create.mutationOptions());
  const { allowed, reason } = actionAllowed(permission, snapshotAvailability(vm));
  return (
    <form
      aria-label="Take a snapshot"
      onSubmit={(e) => {
        e.preventDefault();
        take.mutate(
          { namespace, name, snapshot },
          {
            onSuccess: ({ name: made }) => {
              toast(true, `Snapshot ${made} of ${name}: asked; its state follows.`);
              setSnapshot(defaultSnapshotName(name, new Date()));
            },
            onError: (error) => {
              toast(false, `Snapshot of ${name}: ${describeError(error).message}`);
            },
          },
        );
      }}
    >
      <div className="toolbar">
        <label htmlFor="snapshot-name">Snapshot name</label>
        <input
          id="snapshot-name"
          value={snapshot}
          autoComplete="off"
          disabled={allowed !== true}
          onChange={(e) => {
            setSnapshot(e.target.value);
          }}
        />
        <span className="action">
          <button
            type="submit"
            disabled={allowed !== true || take.isPending || snapshot.trim() === ""}
            aria-describedby={allowed === false ? "why-take-snapshot" : undefined}
            title={allowed === false ? reason : undefined}
          >
            Take snapshot
          </button>
          {allowed === false && reason && (
            <span id="why-take-snapshot" className="why">
              {reason}
            </span>
          )}
        </span>
      </div>
      <p className="hint">
        A running VM is snapshotted online: its guest agent, if it has one, freezes its file systems while the disks are
        copied. Disks not on a claim (container disks, cloud-init) are not in the snapshot.
      </p>
    </form>
  );
}

/** Asks the new VM's name, checked as it is typed, and restores the snapshot as that VM. */
function RestoreAsNewVm({
  vm,
  snapshot,
  existing,
  onDone,
}: {
  vm: VirtualMachine;
  snapshot: string;
  existing: ReadonlySet<string>;
  onDone: () => void;
}) {
  const trpc = useTRPC();
  const toast = useToast();
  const name = vm.metadata.name ?? "";
  const namespace = vm.metadata.namespace ?? "";
  const [newVm, setNewVm] = useState(`${name}-restored`.slice(0, 63));
  const restore = useMutation(trpc.snapshots.restore.mutationOptions());
  const problem = newVmNameProblem(newVm, existing);
  return (
    <form
      className="card"
      aria-label={`Restore ${snapshot} as a new VM`}
      onSubmit={(e) => {
        e.preventDefault();
        if (problem) return;
        restore.mutate(
          { namespace, name, snapshot, newVm },
          {
            onSuccess: ({ target }) => {
              toast(true, `Restore ${snapshot} as ${target}: asked; the new VM appears once its disks are restored.`);
              onDone();
            },
            onError: (error) => {
              toast(false, `Restore ${snapshot} as ${newVm}: ${describeError(error).message}`);
            },
          },
        );
      }}
    >
      <h3>Restore {snapshot} as a new VM</h3>
      <NewVmNameField
        id="restore-new-vm-name"
        value={newVm}
        problem={problem}
        hint="It gets new disks from the snapshot, a new MAC address and firmware UUID, and runs beside this one."
        onChange={setNewVm}
      />
      <div className="toolbar">
        <button type="submit" disabled={problem !== undefined || restore.isPending}>
          Restore as {newVm || "new VM"}
        </button>
        <button type="button" className="secondary" onClick={onDone}>
          Cancel
        </button>
      </div>
    </form>
  );
}

export function SnapshotsPanel({
  vm,
  vmi,
  vmNames,
  permissions,
}: {
  vm: VirtualMachine;
  vmi: VirtualMachineInstance | undefined;
  /** The names of the namespace's VMs, so a new VM's name is checked as it is typed. */
  vmNames: ReadonlySet<string>;
  permissions: SnapshotPermissions | undefined;
}) {
  const trpc = useTRPC();
  const toast = useToast();
  const [dialog, confirm] = useConfirm();
  const [asNew, setAsNew] = useState<string | null>(null);
  const name = vm.metadata.name ?? "";
  const namespace = vm.metadata.namespace ?? "";
  const list = useQuery({ ...trpc.snapshots.list.queryOptions({ namespace, name }), refetchInterval: POLL_MS });
  const restores = useQuery({ ...trpc.snapshots.restores.queryOptions({ namespace, name }), refetchInterval: POLL_MS });
  const remove = useMutation(trpc.snapshots.delete.mutationOptions());
  const restore = useMutation(trpc.snapshots.restore.mutationOptions());

  const restoreInPlace = async (s: SnapshotRow) => {
    const words = {
      title: `Restore ${s.name} onto ${name}?`,
      body: (
        <p>
          {name}&apos;s disks are replaced by the snapshot&apos;s and its spec set back to what it was when the snapshot
          was taken. What was written to its disks since is lost.
        </p>
      ),
      confirm: `Restore ${name}`,
      danger: true,
    };
    if (!(await confirm(words))) return;
    restore.mutate(
      { namespace, name, snapshot: s.name },
      toastOutcome(
        toast,
        `Restore ${s.name} onto ${name}`,
        () => `Restore ${s.name} onto ${name}: asked; ${name} cannot start until it is done.`,
      ),
    );
  };
  const deleteSnapshot = async (s: SnapshotRow) => {
    const words = {
      title: `Delete ${s.name}?`,
      body: (
        <p>The snapshot {s.name} is deleted with its copies of the VM&apos;s disks; it cannot be restored after.</p>
      ),
      confirm: `Delete ${s.name}`,
      danger: true,
    };
    if (!(await confirm(words))) return;
    remove.mutate({ namespace, name, snapshot: s.name }, toastOutcome(toast, `Delete ${s.name}`));
  };

  const snapshots = list.data?.snapshots ?? [];
  return (
    <div className="card">
      {dialog}
      <TakeSnapshot vm={vm} permission={permissions?.takeSnapshot} />
      {list.error && (
        <p className="error" role="alert">
          {describeError(list.error).message}
        </p>
      )}
      <table className="vms" data-testid="snapshots">
        <caption className="visually-hidden">Snapshots of {name}</caption>
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Taken</th>
            <th scope="col">State</th>
            <th scope="col">Indications</th>
            <th scope="col">Volumes</th>
            <th scope="col">Size</th>
            <th scope="col">
              <span className="visually-hidden">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {snapshots.map((s) => {
            const time = s.taken ?? s.created;
            const inPlace = actionAllowed(
              permissions?.restoreSnapshot,
              restoreInPlaceAvailability(s.restorable, vm, vmi),
            );
            const newOne = actionAllowed(permissions?.restoreAsNewVm, s.restorable);
            const del = actionAllowed(permissions?.deleteSnapshot, { available: true });
            return (
              <tr key={s.name} data-snapshot={s.name}>
                <td>{s.name}</td>
                <td>{time ? <time dateTime={time}>{new Date(time).toLocaleString()}</time> : "—"}</td>
                <td data-phase={s.phase} data-testid="snapshot-state">
                  {snapshotState(s)}
                </td>
                <td>
                  {indicationBadges(s.indications).map((b) => (
                    <span key={b.label} className="badge" title={b.title}>
                      {b.label}
                    </span>
                  ))}
                </td>
                <td>
                  {s.included.length > 0 ? s.included.join(", ") : "none"}
                  {s.excluded.length > 0 && <span className="why"> (not included: {s.excluded.join(", ")})</span>}
                </td>
                <td>{snapshotSize(s.sizeBytes)}</td>
                <td>
                  <div className="toolbar">
                    <ActionButton
                      id={`why-restore-${s.name}`}
                      label="Restore"
                      allowed={inPlace.allowed}
                      reason={inPlace.reason}
                      busy={restore.isPending}
                      onClick={() => void restoreInPlace(s)}
                    />
                    <ActionButton
                      id={`why-restore-new-${s.name}`}
                      label="Restore as new VM…"
                      allowed={newOne.allowed}
                      reason={newOne.reason}
                      onClick={() => {
                        setAsNew(s.name);
                      }}
                    />
                    <ActionButton
                      id={`why-delete-${s.name}`}
                      label="Delete"
                      allowed={s.phase === "Deleting" ? false : del.allowed}
                      reason={s.phase === "Deleting" ? "It is being deleted." : del.reason}
                      danger
                      busy={remove.isPending}
                      onClick={() => void deleteSnapshot(s)}
                    />
                  </div>
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
      {list.data && snapshots.length === 0 && <p className="muted">{name} has no snapshots yet.</p>}
      {list.data?.truncated && (
        <p className="muted">Only the newest snapshots are listed; kubectl get vmsnapshots lists them all.</p>
      )}
      {asNew !== null && (
        <RestoreAsNewVm
          key={asNew}
          vm={vm}
          snapshot={asNew}
          existing={vmNames}
          onDone={() => {
            setAsNew(null);
          }}
        />
      )}
      <h2>Restores</h2>
      {restores.error && (
        <p className="error" role="alert">
          {describeError(restores.error).message}
        </p>
      )}
      {restores.data?.restores.length === 0 ? (
        <p className="muted">None of {name}&apos;s snapshots has been restored.</p>
      ) : (
        <table className="vms" data-testid="restores">
          <caption className="visually-hidden">Restores onto {name} and from its snapshots</caption>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Snapshot</th>
              <th scope="col">Onto VM</th>
              <th scope="col">State</th>
              <th scope="col">Done</th>
            </tr>
          </thead>
          <tbody>
            {(restores.data?.restores ?? []).map((r) => (
              <tr key={r.name}>
                <td>{r.name}</td>
                <td>{r.snapshot}</td>
                <td>
                  {r.target === name ? (
                    r.target
                  ) : (
                    <Link
                      href={
                        `/vms/${encodeURIComponent(namespace)}/${encodeURIComponent(r.target)}` +
                        `?ns=${encodeURIComponent(namespace)}`
                      }
                    >
                      {r.target}
                    </Link>
                  )}
                </td>
                <td data-testid="restore-state">{restoreState(r)}</td>
                <td>
                  {r.restoreTime ? (
                    <time dateTime={r.restoreTime}>{new Date(r.restoreTime).toLocaleString()}</time>
                  ) : (
                    "—"
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </div>
  );
}
