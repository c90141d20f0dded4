"use client";

import { type VirtualMachine, type VirtualMachineInstance, availableActions } from "@kubevirt-ts/kubevirt-api";
import { useMutation, useQuery } from "@tanstack/react-query";
import { useRouter, useSearchParams } from "next/navigation";
import { useRef, useState } from "react";
import { parse, stringify } from "yaml";
import { useLiveVms } from "../../../../lib/live";
import { describeError, useTRPC } from "../../../../lib/trpc";
import { vmDisks } from "../../../../lib/vm-disks";
import { actionAllowed, sentence, statusInWords } from "../../../../lib/vm-status";
import { ActionButton, Shell } from "../../shell";
import { SerialConsole } from "./serial-console";
import { VncConsole } from "./vnc-console";

// One VM: its overview, YAML, events, serial console and display, and the
// actions the signed-in user may take on it (the others shown disabled, with
// the reason).

const TABS = ["Overview", "YAML", "Events", "Console", "VNC"] as const;

const CONDITION_WORDS: Record<string, string> = {
  Ready: "Ready: the guest is running",
  Paused: "Paused",
  Failure: "Failed",
  SoftwareEmulation: "Runs with software emulation (no KVM on the node)",
  AgentConnected: "The guest agent answers",
  PodScheduled: "Placed on a node",
};

function Overview({ vm, vmi }: { vm: VirtualMachine; vmi: VirtualMachineInstance | undefined }) {
  const domain = vm.spec.template.spec.domain;
  const conditions = [...(vm.status?.conditions ?? []), ...(vmi?.status?.conditions ?? [])];
  return (
    <div className="card">
      <dl className="facts">
        <dt>Status</dt>
        <dd data-testid="vm-status">{statusInWords(vm.status?.printableStatus)}</dd>
        <dt>Node</dt>
        <dd>{vmi?.status?.nodeName ?? "none"}</dd>
        <dt>IP address</dt>
        <dd>{vmi?.status?.interfaces?.[0]?.ipAddress ?? "none"}</dd>
        <dt>Guest OS</dt>
        <dd>{vmi?.status?.guestOSInfo?.prettyName ?? "not reported (no guest agent)"}</dd>
        <dt>CPU</dt>
        <dd>{String(domain.cpu?.cores ?? 1)} core(s)</dd>
        <dt>Memory</dt>
        <dd>{domain.memory?.guest ?? domain.resources?.requests?.memory ?? "not set"}</dd>
        <dt>Run strategy</dt>
        <dd>{vm.spec.runStrategy ?? (vm.spec.running ? "Always (running: true)" : "Halted (running: false)")}</dd>
      </dl>
      <h2>Disks</h2>
      <table className="disks" data-testid="vm-disks">
        <thead>
          <tr><th scope="col">Disk</th><th scope="col">Attached as</th><th scope="col">Holds</th><th scope="col">Kept across stops</th><th scope="col">Size</th><th scope="col">In the guest</th></tr>
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
      {conditions.length === 0 ? <p className="muted">None reported.</p> : (
        <ul>
          {conditions.map((c) => (
            <li key={`${c.type}-${c.status}`}>
              {c.status === "True" ? (CONDITION_WORDS[c.type] ?? c.type) : `Not ${(CONDITION_WORDS[c.type] ?? c.type).toLowerCase()}`}
              {c.message ? `: ${c.message}` : ""}
            </li>
          ))}
        </ul>
      )}
      <h2>Timeline</h2>
      {vmi?.status?.phaseTransitionTimestamps?.length ? (
        <ol className="timeline">
          {vmi.status.phaseTransitionTimestamps.map((t) => (
            <li key={`${t.phase}-${t.phaseTransitionTimestamp}`}><time dateTime={t.phaseTransitionTimestamp}>{new Date(t.phaseTransitionTimestamp).toLocaleTimeString()}</time> {t.phase}</li>
          ))}
        </ol>
      ) : <p className="muted">The VM has no running instance.</p>}
    </div>
  );
}

function YamlTab({ namespace, name, vm, mayUpdate, reason }: { namespace: string; name: string; vm: unknown; mayUpdate: boolean | undefined; reason: string | undefined }) {
  const trpc = useTRPC();
  const [editing, setEditing] = useState<string | null>(null);
  const [errors, setErrors] = useState<string[]>([]);
  const update = useMutation(trpc.vms.update.mutationOptions());
  if (editing === null) {
    return (
      <div className="card">
        <ActionButton label="Edit" allowed={mayUpdate} reason={reason} onClick={() => { setEditing(stringify(vm)); }} />
        <pre className="yaml" tabIndex={0} aria-label="VirtualMachine YAML">{stringify(vm)}</pre>
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
        update.mutate({ namespace, name, vm: object }, {
          onSuccess: () => { setEditing(null); setErrors([]); },
          onError: (error) => {
            const { message, causes } = describeError(error);
            setErrors(causes.length > 0 ? causes.map((c) => c.message) : [message]);
          },
        });
      }}
    >
      <label htmlFor="vm-yaml-edit">VirtualMachine YAML</label>
      <textarea id="vm-yaml-edit" rows={30} value={editing} onChange={(e) => { setEditing(e.target.value); }} spellCheck={false} aria-invalid={errors.length > 0} aria-describedby={errors.length > 0 ? "vm-yaml-errors" : undefined} />
      {errors.length > 0 && <div id="vm-yaml-errors" className="error" role="alert">{errors.map((m) => <p key={m}>{m}</p>)}</div>}
      <button type="submit" disabled={update.isPending}>Save</button>{" "}
      <button type="button" className="secondary" onClick={() => { setEditing(null); setErrors([]); }}>Cancel</button>
    </form>
  );
}

function Events({ namespace, name }: { namespace: string; name: string }) {
  const trpc = useTRPC();
  const events = useQuery({ ...trpc.vms.events.queryOptions({ namespace, name }), refetchInterval: 5_000 });
  if (events.error) return <p className="error" role="alert">{events.error.message}</p>;
  return (
    <table className="vms">
      <thead><tr><th scope="col">When</th><th scope="col">Type</th><th scope="col">Object</th><th scope="col">Reason</th><th scope="col">Message</th></tr></thead>
      <tbody>
        {(events.data ?? []).map((e) => (
          <tr key={`${e.time}-${e.reason}-${e.kind}-${e.message}`}><td>{e.time ? new Date(e.time).toLocaleTimeString() : ""}</td><td>{e.type}</td><td>{e.kind}</td><td>{e.reason}</td><td>{e.message}</td></tr>
        ))}
      </tbody>
    </table>
  );
}

export function VmDetailsView({ namespace, name }: { namespace: string; name: string }) {
  const trpc = useTRPC();
  const router = useRouter();
  const search = useSearchParams();
  const tab = (TABS.find((t) => t.toLowerCase() === search.get("tab")) ?? "Overview");
  const live = useLiveVms(namespace);
  const permissions = useQuery(trpc.permissions.queryOptions({ namespace }));
  const [outcome, setOutcome] = useState<{ ok: boolean; text: string } | null>(null);
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
  const vm = live.vms.get(name);
  const vmi = live.vmis.get(name);
  const may = permissions.data;
  // What the VM's state allows now, by the rules the API refuses with.
  const state = vm ? availableActions(vm, vmi) : undefined;
  const consoleState = tab === "Console" ? state?.console : tab === "VNC" ? state?.vnc : undefined;

  function act(action: keyof typeof mutations, label: string, keepDisks?: boolean): void {
    mutations[action].mutate({ namespace, name, ...(keepDisks !== undefined ? { keepDisks } : {}) }, {
      onSuccess: () => {
        setOutcome({ ok: true, text: `${label}: requested.` });
        if (action === "delete") router.push(`/vms?ns=${encodeURIComponent(namespace)}`);
      },
      onError: (error) => { setOutcome({ ok: false, text: describeError(error).message }); },
    });
  }
  // A VM with disks of its own (its DataVolumes) asks whether they go with it.
  const ownDisks = (vm?.spec.dataVolumeTemplates ?? []).map((t) => t.metadata.name);
  const deleteDialog = useRef<HTMLDialogElement>(null);
  const button = (action: keyof typeof mutations, label: string, danger = false) => {
    const { allowed, reason } = actionAllowed(may?.[action], state?.[action]);
    const onClick = () => {
      if (action === "delete" && ownDisks.length > 0) deleteDialog.current?.showModal();
      else if (!danger || window.confirm(`${label} ${name}?`)) act(action, label);
    };
    return <ActionButton key={action} label={label} allowed={allowed} reason={reason} danger={danger} busy={mutations[action].isPending} onClick={onClick} />;
  };
  const deleteWith = (keepDisks: boolean) => {
    deleteDialog.current?.close();
    act("delete", "Delete", keepDisks);
  };

  return (
    <Shell
      title={name}
      actions={
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
        </div>
      }
    >
      <dialog ref={deleteDialog} aria-labelledby="delete-title" className="card">
        <h2 id="delete-title">Delete {name}?</h2>
        <p>Its disks of its own: {ownDisks.join(", ")}. Keep them to attach them to another VM later, or delete them with it.</p>
        <div className="toolbar">
          <button type="button" onClick={() => { deleteWith(true); }}>Delete the VM, keep its disks</button>
          <button type="button" className="secondary danger" onClick={() => { deleteWith(false); }}>Delete the VM and its disks</button>
          <button type="button" className="secondary" onClick={() => { deleteDialog.current?.close(); }}>Cancel</button>
        </div>
      </dialog>
      {outcome && <p role={outcome.ok ? "status" : "alert"} className={outcome.ok ? "" : "error"}>{outcome.text}</p>}
      <div role="tablist" aria-label="VM views" className="tabs">
        {TABS.map((t) => (
          <button key={t} type="button" role="tab" className="secondary" aria-selected={t === tab} onClick={() => { router.replace(`/vms/${encodeURIComponent(namespace)}/${encodeURIComponent(name)}?ns=${encodeURIComponent(namespace)}&tab=${t.toLowerCase()}`); }}>
            {t}
          </button>
        ))}
      </div>
      <div role="tabpanel" aria-label={tab}>
        {!vm ? (
          <p aria-live="polite">{live.loaded ? `There is no VM ${name} in ${namespace}.` : "Loading…"}</p>
        ) : tab === "Overview" ? (
          <Overview vm={vm} vmi={vmi} />
        ) : tab === "YAML" ? (
          <YamlTab namespace={namespace} name={name} vm={vm} mayUpdate={may?.update.allowed} reason={may?.update.reason} />
        ) : tab === "Events" ? (
          <Events namespace={namespace} name={name} />
        ) : !(tab === "Console" ? may?.console.allowed : may?.vnc.allowed) ? (
          <p className="error" role="alert">{(tab === "Console" ? may?.console.reason : may?.vnc.reason) ?? "Checking your permissions…"}</p>
        ) : consoleState && !consoleState.available ? (
          <p role="status">{sentence(consoleState.reason)}</p>
        ) : tab === "Console" ? (
          <SerialConsole namespace={namespace} name={name} />
        ) : (
          <VncConsole namespace={namespace} name={name} />
        )}
      </div>
    </Shell>
  );
}
