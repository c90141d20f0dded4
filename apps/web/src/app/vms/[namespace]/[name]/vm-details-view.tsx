"use client";

import type { Condition, VirtualMachine, VirtualMachineInstance } from "@kubevirt-ts/kubevirt-api";
import { availableActions, conditionsInWords, statusReason } from "@kubevirt-ts/vm-rules";
import { useMutation, useQuery } from "@tanstack/react-query";
import { useRouter, useSearchParams } from "next/navigation";
import Link from "next/link";
import { type ReactNode, useState } from "react";
import { parse, stringify } from "yaml";
import { useLiveVms, vmKey } from "../../../../lib/live";
import { describeError, useTRPC } from "../../../../lib/trpc";
import { vmDisks } from "../../../../lib/vm-disks";
import { forUpdate } from "../../../../lib/vm-edit";
import { actionAllowed } from "../../../../lib/vm-status";
import { useConfirm } from "../../../ui/confirm";
import { StatusBadge } from "../../../ui/status-badge";
import { useToast } from "../../../ui/toasts";
import { ActionButton, Shell } from "../../shell";
import { CloneAction } from "./clone-dialog";
import { EditVmForm } from "./edit-vm-form";
import { PoppableConsole } from "./console-panel";
import { MetricsGraphs } from "./metrics-graphs";
import { MigrationPanel } from "./migration-panel";
import { RestartNeeded } from "./restart-needed";
import { SerialLog } from "./serial-log";
import { ExportsPanel } from "./exports-panel";
import { SnapshotsPanel } from "./snapshots-panel";

// One VM: its overview, graphs, YAML, events, snapshots, serial log, serial console
// and display, and the actions the signed-in user may take on it (the others
// shown disabled, with the reason).

const TABS = ["Overview", "Metrics", "YAML", "Events", "Snapshots", "Log", "Console", "VNC"] as const;

/** One object's conditions in words (vm-rules' conditionsInWords), under a heading of its own. */
function Conditions({
  title,
  conditions,
  testId,
}: {
  title: string;
  conditions: readonly Condition[] | undefined;
  testId: string;
}) {
  const words = conditionsInWords(conditions);
  return (
    <section aria-label={title} data-testid={testId}>
      <h3>{title}</h3>
      {words.length === 0 ? (
        <p className="muted">None reported.</p>
      ) : (
        <ul className="conditions">
          {words.map((c) => (
            <li key={c.type} data-tone={c.tone} data-type={c.type}>
              <span className="condition-label">{c.label}</span>
              {c.message ? <span className="muted">: {c.message}</span> : null}
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}

function Overview({
  vm,
  vmi,
  namespace,
  migratePermission,
  edit,
}: {
  vm: VirtualMachine;
  vmi: VirtualMachineInstance | undefined;
  namespace: string;
  migratePermission: { allowed: boolean; reason?: string } | undefined;
  edit: ReactNode;
}) {
  const domain = vm.spec.template.spec.domain;
  const node = vmi?.status?.nodeName;
  const ip = vmi?.status?.interfaces?.[0]?.ipAddress;
  return (
    <div className="card">
      {edit}
      <dl className="facts">
        <dt>Status</dt>
        <dd>
          <StatusBadge printableStatus={vm.status?.printableStatus} testId="vm-status" />
        </dd>
        <dt>Node</dt>
        <dd>
          {node ? (
            <Link href={`/nodes?ns=${encodeURIComponent(namespace)}#node-${encodeURIComponent(node)}`}>{node}</Link>
          ) : (
            "none"
          )}
        </dd>
        <dt>IP address</dt>
        <dd>
          {ip ?? "none"}
          {ip && (
            <span className="hint">
              {" "}
              Each start may give it another; a Service selecting the VM&apos;s labels gives a stable one.
            </span>
          )}
        </dd>
        <dt>Guest OS</dt>
        <dd>{vmi?.status?.guestOSInfo?.prettyName ?? "not reported (no guest agent)"}</dd>
        <dt>CPU</dt>
        <dd>
          {vm.spec.instancetype
            ? `from ${vm.spec.instancetype.name}`
            : `${String((domain.cpu?.cores ?? 1) * (domain.cpu?.sockets ?? 1) * (domain.cpu?.threads ?? 1))} vCPU`}
        </dd>
        <dt>Memory</dt>
        <dd>
          {vm.spec.instancetype
            ? `from ${vm.spec.instancetype.name}`
            : (domain.memory?.guest ?? domain.resources?.requests?.memory ?? "not set")}
        </dd>
        <dt>Run strategy</dt>
        <dd>{vm.spec.runStrategy ?? (vm.spec.running ? "Always (running: true)" : "Halted (running: false)")}</dd>
      </dl>
      <h2>Disks</h2>
      <table className="disks" data-testid="vm-disks">
        <thead>
          <tr>
            <th scope="col">Disk</th>
            <th scope="col">Attached as</th>
            <th scope="col">Holds</th>
            <th scope="col">Kept across stops</th>
            <th scope="col">Size</th>
            <th scope="col">In the guest</th>
          </tr>
        </thead>
        <tbody>
          {vmDisks(vm, vmi).map((d) => (
            <tr key={d.name}>
              <td>{d.name}</td>
              <td>{d.kind}</td>
              <td>{d.source}</td>
              <td>{d.persistent ? "yes" : "no"}</td>
              <td>{d.size ?? "—"}</td>
              <td>{d.device ? `/dev/${d.device}` : "—"}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <h2>Conditions</h2>
      <div className="columns">
        <Conditions title="The virtual machine" conditions={vm.status?.conditions} testId="vm-conditions" />
        {vmi ? (
          <Conditions title="Its running instance" conditions={vmi.status?.conditions} testId="vmi-conditions" />
        ) : (
          <section aria-label="Its running instance">
            <h3>Its running instance</h3>
            <p className="muted">None: the VM is not running.</p>
          </section>
        )}
      </div>
      <MigrationPanel namespace={namespace} name={vm.metadata.name ?? ""} permission={migratePermission} />
      <h2>This run</h2>
      {vmi?.status?.phaseTransitionTimestamps?.length ? (
        <ol className="timeline">
          {vmi.status.phaseTransitionTimestamps.map((t) => (
            <li key={`${t.phase}-${t.phaseTransitionTimestamp}`}>
              <time dateTime={t.phaseTransitionTimestamp}>
                {new Date(t.phaseTransitionTimestamp).toLocaleTimeString()}
              </time>{" "}
              {t.phase}
            </li>
          ))}
        </ol>
      ) : (
        <p className="muted">The VM has no running instance. Earlier runs are in its Events.</p>
      )}
    </div>
  );
}

function YamlTab({
  namespace,
  name,
  vm,
  mayUpdate,
  reason,
}: {
  namespace: string;
  name: string;
  vm: VirtualMachine;
  mayUpdate: boolean | undefined;
  reason: string | undefined;
}) {
  const trpc = useTRPC();
  const [editing, setEditing] = useState<string | null>(null);
  const [errors, setErrors] = useState<string[]>([]);
  const update = useMutation(trpc.vms.update.mutationOptions());
  const shown = forUpdate(vm);
  if (editing === null) {
    return (
      <div className="card">
        <ActionButton
          label="Edit"
          allowed={mayUpdate}
          reason={reason}
          onClick={() => {
            setEditing(stringify(shown));
          }}
        />
        <pre className="yaml" tabIndex={0} aria-label="VirtualMachine YAML">
          {stringify(shown)}
        </pre>
      </div>
    );
  }
  return (
    <form
      className="card"
      onSubmit={(e) => {
        e.preventDefault();
        let object: unknown;
        try {
          object = parse(editing);
        } catch (error) {
          setErrors([`The YAML does not parse: ${error instanceof Error ? error.message : String(error)}`]);
          return;
        }
        update.mutate(
          { namespace, name, vm: object },
          {
            onSuccess: () => {
              setEditing(null);
              setErrors([]);
            },
            onError: (error) => {
              const { message, causes } = describeError(error);
              setErrors(causes.length > 0 ? causes.map((c) => c.message) : [message]);
            },
          },
        );
      }}
    >
      <label htmlFor="vm-yaml-edit">VirtualMachine YAML</label>
      <textarea
        id="vm-yaml-edit"
        rows={30}
        value={editing}
        onChange={(e) => {
          setEditing(e.target.value);
        }}
        spellCheck={false}
        aria-invalid={errors.length > 0}
        aria-describedby={errors.length > 0 ? "vm-yaml-errors" : undefined}
      />
      {errors.length > 0 && (
        <div id="vm-yaml-errors" className="error" role="alert">
          {errors.map((m) => (
            <p key={m}>{m}</p>
          ))}
        </div>
      )}
      <button type="submit" disabled={update.isPending}>
        Save
      </button>{" "}
      <button
        type="button"
        className="secondary"
        onClick={() => {
          setEditing(null);
          setErrors([]);
        }}
      >
        Cancel
      </button>
    </form>
  );
}

function Events({ namespace, name }: { namespace: string; name: string }) {
  const trpc = useTRPC();
  const events = useQuery({ ...trpc.vms.events.queryOptions({ namespace, name }), refetchInterval: 5_000 });
  if (events.error)
    return (
      <p className="error" role="alert">
        {events.error.message}
      </p>
    );
  return (
    <table className="vms">
      <thead>
        <tr>
          <th scope="col">When</th>
          <th scope="col">Type</th>
          <th scope="col">Object</th>
          <th scope="col">Reason</th>
          <th scope="col">Message</th>
        </tr>
      </thead>
      <tbody>
        {(events.data ?? []).map((e) => (
          <tr key={e.uid}>
            <td>{e.time ? new Date(e.time).toLocaleTimeString() : ""}</td>
            <td>{e.type}</td>
            <td>{e.kind}</td>
            <td>{e.reason}</td>
            <td>{e.message}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** The destructive actions, confirmed in the page with what each will do. */
const CONFIRM: Partial<Record<string, (name: string) => { body: string; confirm: string }>> = {
  stop: (name) => ({
    body:
      "The guest is asked to shut down; if it has not after its grace period, it is turned " +
      `off. ${name} stays stopped until it is started.`,
    confirm: `Stop ${name}`,
  }),
  forceStop: (name) => ({
    body: `${name} is turned off now, as if its power were cut: what the guest has not written to disk is lost.`,
    confirm: `Force stop ${name}`,
  }),
  restart: (name) => ({
    body: `The guest is shut down and started again on a new instance (it may get another node and address).`,
    confirm: `Restart ${name}`,
  }),
  reset: (name) => ({
    body: `${name} is reset at once, like pressing its reset button: what the guest has not written to disk is lost.`,
    confirm: `Reset ${name}`,
  }),
  delete: (name) => ({
    body: `${name} is deleted with its running instance. Its container disks' changes go with it.`,
    confirm: `Delete ${name}`,
  }),
};

export function VmDetailsView({ namespace, name }: { namespace: string; name: string }) {
  const trpc = useTRPC();
  const router = useRouter();
  const search = useSearchParams();
  const tab = TABS.find((t) => t.toLowerCase() === search.get("tab")) ?? "Overview";
  const live = useLiveVms(namespace);
  const permissions = useQuery(trpc.permissions.queryOptions({ namespace }));
  const toast = useToast();
  const [dialog, confirm] = useConfirm();
  const [editing, setEditing] = useState(false);
  const mutations = {
    start: useMutation(trpc.vms.start.mutationOptions()),
    stop: useMutation(trpc.vms.stop.mutationOptions()),
    forceStop: useMutation(trpc.vms.forceStop.mutationOptions()),
    restart: useMutation(trpc.vms.restart.mutationOptions()),
    pause: useMutation(trpc.vms.pause.mutationOptions()),
    unpause: useMutation(trpc.vms.unpause.mutationOptions()),
    softReboot: useMutation(trpc.vms.softReboot.mutationOptions()),
    reset: useMutation(trpc.vms.reset.mutationOptions()),
    delete: useMutation(trpc.vms.delete.mutationOptions()),
  };
  const vm = live.vms.get(vmKey(namespace, name));
  const vmi = live.vmis.get(vmKey(namespace, name));
  const may = permissions.data;
  // What the VM's state allows now, by the rules the API refuses with.
  const state = vm ? availableActions(vm, vmi) : undefined;
  const reason = vm ? statusReason(vm, vmi) : undefined;
  const consoleKind = tab === "Console" ? "console" : "vnc";
  const vmNames = new Set([...live.vms.values()].map((v) => v.metadata.name ?? ""));
  const clone = vm && <CloneAction vm={vm} permission={may?.clone} vmNames={vmNames} />;

  function act(action: keyof typeof mutations, label: string, keepDisks?: boolean): void {
    mutations[action].mutate(
      { namespace, name, ...(keepDisks !== undefined ? { keepDisks } : {}) },
      {
        onSuccess: () => {
          toast(true, `${label} ${name}: asked; the status follows.`);
          if (action === "delete") router.push(`/vms?ns=${encodeURIComponent(namespace)}`);
        },
        onError: (error) => {
          toast(false, `${label} ${name}: ${describeError(error).message}`);
        },
      },
    );
  }
  // A VM with disks of its own (its DataVolumes) asks whether they go with it.
  const ownDisks = (vm?.spec.dataVolumeTemplates ?? []).map((t) => t.metadata.name);
  const ask = async (action: keyof typeof mutations, label: string) => {
    const words = CONFIRM[action]?.(name);
    if (!words) {
      act(action, label);
      return;
    }
    if (action === "delete" && ownDisks.length > 0) {
      const choice = await confirm({
        title: `Delete ${name}?`,
        body: (
          <p>
            Its disks of its own: {ownDisks.join(", ")}. Keep them to attach them to another VM later, or delete them
            with it.
          </p>
        ),
        confirm: "",
        choices: [
          { label: "Delete the VM, keep its disks", value: "keep" },
          { label: "Delete the VM and its disks", value: "all", danger: true },
        ],
      });
      if (choice) act("delete", label, choice === "keep");
      return;
    }
    if (await confirm({ title: `${label} ${name}?`, body: <p>{words.body}</p>, confirm: words.confirm, danger: true }))
      act(action, label);
  };
  // id: the reason's element, where the same action is offered twice on the page.
  const button = (action: keyof typeof mutations, label: string, danger = false, id?: string) => {
    const { allowed, reason: why } = actionAllowed(may?.[action], state?.[action]);
    return (
      <ActionButton
        key={action}
        {...(id ? { id } : {})}
        label={label}
        allowed={allowed}
        reason={why}
        danger={danger}
        busy={mutations[action].isPending}
        onClick={() => void ask(action, label)}
      />
    );
  };
  // A viewer who may take no action reads that once, not beside every button.
  const viewOnly =
    may !== undefined && (["start", "stop", "restart", "pause", "delete"] as const).every((a) => !may[a].allowed);

  return (
    <Shell
      title={name}
      actions={
        viewOnly ? (
          <div className="toolbar">
            <p className="muted" data-testid="view-only">
              You may view this VM, not change it: ask for the kubevirt.io:edit role in {namespace} to edit, start, stop
              or delete it.
            </p>
            {clone}
          </div>
        ) : (
          <div className="toolbar" role="group" aria-label="Actions">
            {button("start", "Start")}
            {button("stop", "Stop")}
            {button("restart", "Restart")}
            {button("pause", "Pause")}
            {button("unpause", "Unpause")}
            {button("softReboot", "Soft reboot")}
            {button("reset", "Reset", true)}
            {button("forceStop", "Force stop", true)}
            {button("delete", "Delete", true)}
            {clone}
          </div>
        )
      }
    >
      {dialog}
      {vm && (
        <p className="status-line" data-testid="vm-status-line">
          <StatusBadge printableStatus={vm.status?.printableStatus} />
          {reason && <span data-testid="vm-status-reason"> {reason}</span>}
        </p>
      )}
      <div role="tablist" aria-label="VM views" className="tabs">
        {TABS.map((t) => (
          <button
            key={t}
            type="button"
            role="tab"
            className="secondary"
            aria-selected={t === tab}
            onClick={() => {
              router.replace(
                `/vms/${encodeURIComponent(namespace)}/${encodeURIComponent(name)}?ns=` +
                  `${encodeURIComponent(namespace)}&tab=${t.toLowerCase()}`,
              );
            }}
          >
            {t}
          </button>
        ))}
      </div>
      <div role="tabpanel" aria-label={tab}>
        {!vm ? (
          <p aria-live="polite">{live.loaded ? `There is no VM ${name} in ${namespace}.` : "Loading…"}</p>
        ) : tab === "Overview" && editing ? (
          <EditVmForm
            vm={vm}
            running={vmi !== undefined}
            onDone={(saved) => {
              setEditing(false);
              if (saved)
                toast(
                  true,
                  vmi
                    ? `Saved ${name}: the changes take effect when it restarts.`
                    : `Saved ${name}: it starts with the changes.`,
                );
            }}
          />
        ) : tab === "Overview" ? (
          <>
            <RestartNeeded vm={vm} restart={button("restart", "Restart", false, "why-restart-needed")} />
            <Overview
              vm={vm}
              vmi={vmi}
              namespace={namespace}
              migratePermission={may?.migrate}
              edit={
                // A viewer reads once, above, that they may not change it.
                !viewOnly && (
                  <ActionButton
                    label="Edit"
                    allowed={may?.update.allowed && !vm.metadata.deletionTimestamp}
                    reason={vm.metadata.deletionTimestamp ? `${name} is being deleted.` : may?.update.reason}
                    onClick={() => {
                      setEditing(true);
                    }}
                  />
                )
              }
            />
          </>
        ) : tab === "Metrics" ? (
          <MetricsGraphs namespace={namespace} name={name} running={vmi?.status?.phase === "Running"} />
        ) : tab === "YAML" ? (
          <YamlTab
            namespace={namespace}
            name={name}
            vm={vm}
            mayUpdate={may?.update.allowed}
            reason={may?.update.reason}
          />
        ) : tab === "Events" ? (
          <Events namespace={namespace} name={name} />
        ) : tab === "Snapshots" ? (
          <>
            <SnapshotsPanel vm={vm} vmi={vmi} vmNames={vmNames} permissions={may} />
            <ExportsPanel vm={vm} vmi={vmi} permissions={may} />
          </>
        ) : tab === "Log" ? (
          <SerialLog namespace={namespace} name={name} running={vmi !== undefined} permission={may?.serialLog} />
        ) : (
          <PoppableConsole
            key={tab}
            kind={consoleKind}
            namespace={namespace}
            name={name}
            node={vmi?.status?.nodeName}
            permission={may?.[consoleKind]}
            state={state?.[consoleKind]}
          />
        )}
      </div>
    </Shell>
  );
}
