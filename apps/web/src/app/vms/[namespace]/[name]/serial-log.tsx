"use client";

import { useQuery } from "@tanstack/react-query";
import { useEffect, useRef } from "react";
import { plainText } from "../../../../lib/serial-log";
import { describeError, useTRPC } from "../../../../lib/trpc";

// The Log tab: what the guest printed on its serial console since it booted
// (the last 512 KiB the handler keeps), kept current while the tab is open,
// downloadable, and read without taking over anyone's console session. It
// takes what KubeVirt's guest console log takes: get on pods/log.

const REFRESH_MS = 3_000;

export function SerialLog({
  namespace,
  name,
  running,
  permission,
}: {
  namespace: string;
  name: string;
  running: boolean;
  permission: { allowed: boolean; reason?: string } | undefined;
}) {
  const trpc = useTRPC();
  const log = useQuery({
    ...trpc.vms.serialLog.queryOptions({ namespace, name }),
    enabled: running && permission?.allowed === true,
    refetchInterval: REFRESH_MS,
    retry: false,
  });
  const box = useRef<HTMLPreElement>(null);
  const text = log.data === undefined ? "" : plainText(log.data);
  // Follow the end of the log, as tail -f does, unless the reader scrolled up.
  const following = useRef(true);
  useEffect(() => {
    const el = box.current;
    if (el && following.current) el.scrollTop = el.scrollHeight;
  }, [text]);
  if (permission && !permission.allowed)
    return (
      <p className="error" role="alert">
        {permission.reason}
      </p>
    );
  if (!running) return <p role="status">The VM is not running: its serial log begins with its next start.</p>;
  const download = () => {
    const url = URL.createObjectURL(new Blob([log.data ?? ""], { type: "text/plain" }));
    const a = document.createElement("a");
    a.href = url;
    a.download = `${namespace}-${name}-serial.log`;
    a.click();
    URL.revokeObjectURL(url);
  };
  return (
    <section aria-label="Serial log">
      <div className="toolbar">
        <span className="muted" role="status">
          {log.error
            ? `Not updated: ${describeError(log.error).message}`
            : log.data === undefined
              ? "Loading…"
              : `${String(text.split("\n").length)} lines, updated every ${String(REFRESH_MS / 1000)} s`}
        </span>
        <span className="spacer" />
        <button type="button" className="secondary" onClick={download} disabled={log.data === undefined}>
          Download
        </button>
      </div>
      <pre
        ref={box}
        className="serial-log"
        data-testid="serial-log"
        tabIndex={0}
        aria-label={`Serial log of ${name}`}
        onScroll={(e) => {
          const el = e.currentTarget;
          following.current = el.scrollTop + el.clientHeight >= el.scrollHeight - 8;
        }}
      >
        {text}
      </pre>
    </section>
  );
}
