"use client";

import type { VirtualMachine } from "@kubevirt-ts/kubevirt-api";
import { snapshotAvailability } from "@kubevirt-ts/vm-rules";
import { useMutation, useQuery } from "@tanstack/react-query";
import Link from "next/link";
import { useEffect, useRef, useState } from "react";
import { cloneState } from "../../../../lib/clones";
import { newVmNameProblem } from "../../../../lib/snapshots";
import { describeError, useTRPC } from "../../../../lib/trpc";
import { actionAllowed } from "../../../../lib/vm-status";
import { useToast } from "../../../ui/toasts";
import { ActionButton } from "../../shell";
import { NewVmNameField } from "./new-vm-name-field";

// The VM page's Clone action: a dialog asks the new VM's name (checked as it is typed), makes a VirtualMachineClone
// of the VM as the user, then follows it until the new VM is made (it is made stopped) with a link to its page, or
// says why it failed. A clone is a snapshot restored as a new VM, so the button is disabled, with the reason, while
// the VM could not be snapshotted, as for a user who may not create clones.

type Permission = { allowed: boolean; reason?: string } | undefined;

const POLL_MS = 2_000;

function CloneDialog({
  vm,
  existing,
  onClose,
}: {
  vm: VirtualMachine;
  existing: ReadonlySet<string>;
  onClose: () => void;
}) {
  const trpc = useTRPC();
  const toast = useToast();
  const dialog = useRef<HTMLDialogElement>(null);
  const name = vm.metadata.name ?? "";
  const namespace = vm.metadata.namespace ?? "";
  const [target, setTarget] = useState(`${name}-clone`.slice(0, 63));
  const [made, setMade] = useState<{ name: string; target: string } | null>(null);
  const create = useMutation(trpc.clones.create.mutationOptions());
  const list = useQuery({
    ...trpc.clones.list.queryOptions({ namespace, name }),
    enabled: made !== null,
    refetchInterval: (query) => {
      const row = query.state.data?.clones.find((c) => c.name === made?.name);
      return row?.succeeded || row?.failed ? false : POLL_MS;
    },
  });
  useEffect(() => {
    if (dialog.current && !dialog.current.open) dialog.current.showModal();
  }, []);
  // Its own name is no VM's yet, so the check covers only names taken by others until the clone is asked for.
  const problem = made ? undefined : newVmNameProblem(target, existing);
  const row = made ? list.data?.clones.find((c) => c.name === made.name) : undefined;
  const close = () => {
    dialog.current?.close();
    onClose();
  };
  return (
    <dialog ref={dialog} aria-labelledby="clone-title" className="card confirm" onCancel={close}>
      <h2 id="clone-title">Clone {name}</h2>
      {made === null ? (
        <form
          aria-label={`Clone ${name}`}
          onSubmit={(e) => {
            e.preventDefault();
            if (problem) return;
            create.mutate(
              { namespace, name, target },
              {
                onSuccess: (clone) => {
                  setMade(clone);
                },
                onError: (error) => {
                  toast(false, `Clone ${name} as ${target}: ${describeError(error).message}`);
                },
              },
            );
          }}
        >
          <NewVmNameField
            id="clone-target-name"
            value={target}
            problem={problem}
            hint={
              "A snapshot of this VM is restored as the new VM: it gets copies of the disks on claims, a new MAC " +
              "address and firmware UUID, and is made stopped."
            }
            onChange={setTarget}
          />
          <div className="toolbar">
            <button type="submit" disabled={problem !== undefined || create.isPending}>
              Clone as {target || "new VM"}
            </button>
            <button type="button" className="secondary" onClick={close}>
              Cancel
            </button>
          </div>
        </form>
      ) : (
        <>
          <p aria-live="polite">
            Clone {made.name} into {made.target}:{" "}
            <span data-testid="clone-state" data-phase={row?.phase}>
              {row ? cloneState(row) : "Pending"}
            </span>
          </p>
          {list.error && (
            <p className="error" role="alert">
              {describeError(list.error).message}
            </p>
          )}
          {row?.succeeded && (
            <p>
              <Link
                href={
                  `/vms/${encodeURIComponent(namespace)}/${encodeURIComponent(row.target)}` +
                  `?ns=${encodeURIComponent(namespace)}`
                }
                onClick={close}
              >
                Open {row.target}
              </Link>
            </p>
          )}
          <div className="toolbar">
            <button type="button" className="secondary" autoFocus onClick={close}>
              Close
            </button>
          </div>
          {!row?.succeeded && !row?.failed && (
            <p className="hint">Closing this leaves the clone running; the new VM appears in the VM list once made.</p>
          )}
        </>
      )}
    </dialog>
  );
}

/** The Clone button of a VM's page, and its dialog once clicked. */
export function CloneAction({
  vm,
  permission,
  vmNames,
}: {
  vm: VirtualMachine;
  permission: Permission;
  /** The names of the namespace's VMs, so the new VM's name is checked as it is typed. */
  vmNames: ReadonlySet<string>;
}) {
  const [open, setOpen] = useState(false);
  const { allowed, reason } = actionAllowed(permission, snapshotAvailability(vm));
  return (
    <>
      <ActionButton
        id="why-clone"
        label="Clone…"
        allowed={allowed}
        reason={reason}
        onClick={() => {
          setOpen(true);
        }}
      />
      {open && (
        <CloneDialog
          vm={vm}
          existing={vmNames}
          onClose={() => {
            setOpen(false);
          }}
        />
      )}
    </>
  );
}
