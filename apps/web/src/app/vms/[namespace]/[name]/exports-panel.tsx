"use client";

import type { VirtualMachine, VirtualMachineInstance } from "@kubevirt-ts/kubevirt-api";
import { exportAvailability } from "@kubevirt-ts/vm-rules";
import { useMutation, useQuery } from "@tanstack/react-query";
import { type ExportRow, exportState } from "../../../../lib/exports";
import { describeError, useTRPC, toastOutcome } from "../../../../lib/trpc";
import { actionAllowed } from "../../../../lib/vm-status";
import { useConfirm } from "../../../ui/confirm";
import { useToast } from "../../../ui/toasts";
import { ActionButton } from "../../shell";

// A VM's exports, below its snapshots: Export its disks (while it is stopped, as the API refuses otherwise), and its
// exports with their state, when each ends, a download link per disk (gzip-compressed, the token in the link, for a
// user who may read the export's token) and Delete. Each button is disabled, with the reason, for a user who may not
// or while the VM runs. The list is polled, as the snapshots are; a Ready export's links (which read its token
// Secret) are asked for once.

type Permission = { allowed: boolean; reason?: string } | undefined;

export interface ExportPermissions {
  exportVm: Permission;
  deleteExport: Permission;
}

const POLL_MS = 2_000;

export function ExportsPanel({
  vm,
  vmi,
  permissions,
}: {
  vm: VirtualMachine;
  vmi: VirtualMachineInstance | undefined;
  permissions: ExportPermissions | undefined;
}) {
  const trpc = useTRPC();
  const toast = useToast();
  const [dialog, confirm] = useConfirm();
  const name = vm.metadata.name ?? "";
  const namespace = vm.metadata.namespace ?? "";
  const list = useQuery({ ...trpc.exports.list.queryOptions({ namespace, name }), refetchInterval: POLL_MS });
  const create = useMutation(trpc.exports.create.mutationOptions());
  const remove = useMutation(trpc.exports.delete.mutationOptions());
  const exportNow = actionAllowed(permissions?.exportVm, exportAvailability(vmi));
  const deleteExport = async (e: ExportRow) => {
    const words = {
      title: `Delete ${e.name}?`,
      body: <p>Its download links stop working; the VM and its disks are not touched.</p>,
      confirm: `Delete ${e.name}`,
      danger: true,
    };
    if (!(await confirm(words))) return;
    remove.mutate({ namespace, name, export: e.name }, toastOutcome(toast, `Delete ${e.name}`));
  };
  const exports = list.data?.exports ?? [];
  return (
    <div className="card" data-testid="exports-panel">
      {dialog}
      <h2>Exports</h2>
      <div className="toolbar">
        <ActionButton
          label="Export disks"
          allowed={exportNow.allowed}
          reason={exportNow.reason}
          busy={create.isPending}
          onClick={() => {
            create.mutate(
              { namespace, name },
              toastOutcome(
                toast,
                `Export of ${name}`,
                ({ name: made }) => `Export ${made} of ${name}: asked; its links appear once it is ready.`,
              ),
            );
          }}
        />
      </div>
      <p className="hint">
        An export serves the VM&apos;s disks for download for two hours, as virtctl vmexport download reads them; the VM
        stays stopped meanwhile, or the export waits until it is stopped again.
      </p>
      {list.error && (
        <p className="error" role="alert">
          {describeError(list.error).message}
        </p>
      )}
      {exports.length === 0 ? (
        list.data && <p className="muted">{name} has no exports.</p>
      ) : (
        <table className="vms" data-testid="exports">
          <caption className="visually-hidden">Exports of {name}</caption>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">State</th>
              <th scope="col">Ends</th>
              <th scope="col">Downloads</th>
              <th scope="col">
                <span className="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {exports.map((e) => {
              const del = actionAllowed(permissions?.deleteExport, { available: true });
              return (
                <tr key={e.name} data-export={e.name}>
                  <td>{e.name}</td>
                  <td data-phase={e.phase} data-testid="export-state">
                    {exportState(e)}
                  </td>
                  <td>{e.expires ? <time dateTime={e.expires}>{new Date(e.expires).toLocaleString()}</time> : "—"}</td>
                  <td>
                    {e.phase !== "Ready" ? "—" : <Downloads namespace={namespace} name={name} exportName={e.name} />}
                  </td>
                  <td>
                    <ActionButton
                      id={`why-delete-export-${e.name}`}
                      label="Delete"
                      allowed={del.allowed}
                      reason={del.reason}
                      danger
                      busy={remove.isPending}
                      onClick={() => void deleteExport(e)}
                    />
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
      {list.data?.truncated && (
        <p className="muted">Only the newest exports are listed; kubectl get vmexports lists all.</p>
      )}
    </div>
  );
}

/** A Ready export's download links: asked for once, as its token lasts as long as the export. */
function Downloads({ namespace, name, exportName }: { namespace: string; name: string; exportName: string }) {
  const trpc = useTRPC();
  const links = useQuery({
    ...trpc.exports.links.queryOptions({ namespace, name, export: exportName }),
    staleTime: Infinity,
  });
  if (links.error) return <span className="error">{describeError(links.error).message}</span>;
  if (!links.data) return <span className="muted">…</span>;
  if (!links.data.tokenReadable) return <>You may not read this export&apos;s token, so it has no links for you.</>;
  return (
    <>
      {links.data.disks.map((d) =>
        d.gzip ? (
          <a key={d.name} href={d.gzip} download={`${d.name}.img.gz`} className="badge">
            {d.name}.img.gz
          </a>
        ) : null,
      )}
    </>
  );
}
