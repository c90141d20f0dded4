"use client";

import { useMutation, useQuery } from "@tanstack/react-query";
import { useRef, useState } from "react";
import { defaultUploadSize, imageNameFromFile, imageRow } from "../../lib/images";
import { describeError, useTRPC } from "../../lib/trpc";
import { useConfirm } from "../ui/confirm";
import { useToast } from "../ui/toasts";
import { Shell, useNamespace } from "../vms/shell";

// The namespace's disk images (DataVolumes), and an upload from the browser
// done as virtctl image-upload does it: a DataVolume whose source is upload,
// its upload server awaited, an upload token, then the file sent to the
// upload proxy (behind this dashboard's own address) with a progress bar and
// a cancel button. A cancelled or refused upload removes the DataVolume it made.

type Upload =
  | { step: "idle" }
  | { step: "preparing"; name: string }
  | { step: "sending"; name: string; sent: number; total: number }
  | { step: "converting"; name: string }
  | { step: "done"; name: string }
  | { step: "failed"; name: string; message: string };

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Sends the file to the upload proxy; resolves with the server's answer. */
function send(
  file: File,
  token: string,
  onProgress: (sent: number) => void,
  xhrRef: { current: XMLHttpRequest | null },
): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhrRef.current = xhr;
    xhr.open("POST", "/v1beta1/upload");
    xhr.setRequestHeader("Authorization", `Bearer ${token}`);
    xhr.setRequestHeader("Content-Type", "application/octet-stream");
    xhr.upload.onprogress = (e) => {
      onProgress(e.loaded);
    };
    xhr.onload = () => {
      resolve({ status: xhr.status, text: xhr.responseText });
    };
    xhr.onerror = () => {
      reject(new Error("the upload broke off: the connection to the dashboard was lost"));
    };
    xhr.onabort = () => {
      reject(new Error("cancelled"));
    };
    xhr.send(file);
  });
}

function UploadForm({ namespace, onChange }: { namespace: string; onChange: () => void }) {
  const trpc = useTRPC();
  const createUpload = useMutation(trpc.dataVolumes.createUpload.mutationOptions());
  const uploadToken = useMutation(trpc.dataVolumes.uploadToken.mutationOptions());
  const remove = useMutation(trpc.dataVolumes.delete.mutationOptions());
  const list = useQuery(trpc.dataVolumes.list.queryOptions({ namespace }, { enabled: false }));
  const [file, setFile] = useState<File | null>(null);
  const [name, setName] = useState("");
  const [size, setSize] = useState("");
  const [upload, setUpload] = useState<Upload>({ step: "idle" });
  const xhr = useRef<XMLHttpRequest | null>(null);
  const cancelled = useRef(false);
  const wasCancelled = (): boolean => cancelled.current;

  async function waitReady(dvName: string): Promise<void> {
    for (let i = 0; i < 300; i++) {
      if (cancelled.current) throw new Error("cancelled");
      const found = (await list.refetch()).data?.find((dv) => dv.metadata.name === dvName);
      const phase = found?.status?.phase;
      if (phase === "UploadReady") return;
      if (phase === "Succeeded" || phase === "Failed")
        throw new Error(`the DataVolume ${dvName} is ${phase}: it takes no upload`);
      await sleep(1000);
    }
    throw new Error(`the upload server of ${dvName} did not become ready in 5 minutes`);
  }

  async function start(): Promise<void> {
    if (!file) return;
    const dvName = name.trim();
    cancelled.current = false;
    setUpload({ step: "preparing", name: dvName });
    let made = false;
    try {
      await createUpload.mutateAsync({ namespace, name: dvName, size: size.trim() });
      made = true;
      onChange();
      await waitReady(dvName);
      const { token } = await uploadToken.mutateAsync({ namespace, name: dvName });
      setUpload({ step: "sending", name: dvName, sent: 0, total: file.size });
      const answer = await send(
        file,
        token,
        (sent) => {
          setUpload(
            sent >= file.size
              ? { step: "converting", name: dvName }
              : { step: "sending", name: dvName, sent, total: file.size },
          );
        },
        xhr,
      );
      if (answer.status !== 200)
        throw new Error(answer.text.trim() || `the upload proxy answered ${String(answer.status)}`);
      setUpload({ step: "done", name: dvName });
      setFile(null);
    } catch (error) {
      // Read through a function: the cancel button changes it while this runs.
      const message = wasCancelled() ? "Cancelled" : describeError(error).message;
      // What this upload made goes with it: nothing half-filled is left behind.
      if (made) await remove.mutateAsync({ namespace, name: dvName }).catch(() => undefined);
      setUpload({
        step: "failed",
        name: dvName,
        message: made ? `${message}. The DataVolume ${dvName} was removed.` : message,
      });
    } finally {
      xhr.current = null;
      onChange();
    }
  }

  function cancel(): void {
    cancelled.current = true;
    xhr.current?.abort();
  }

  const busy = upload.step === "preparing" || upload.step === "sending" || upload.step === "converting";
  const percent =
    upload.step === "sending" && upload.total > 0
      ? Math.floor((upload.sent / upload.total) * 100)
      : upload.step === "converting" || upload.step === "done"
        ? 100
        : 0;
  return (
    <form
      className="card"
      aria-label="Upload an image"
      onSubmit={(e) => {
        e.preventDefault();
        void start();
      }}
    >
      <h2>Upload an image</h2>
      <p className="hint">
        A qcow2, raw or ISO file (gzip-compressed or not), into a new DataVolume of this namespace.
      </p>
      <div className="field">
        <label htmlFor="image-file">File</label>
        <input
          id="image-file"
          type="file"
          disabled={busy}
          onChange={(e) => {
            const chosen = e.target.files?.[0] ?? null;
            setFile(chosen);
            if (chosen) {
              setName(imageNameFromFile(chosen.name));
              setSize(defaultUploadSize(chosen.size));
            }
          }}
        />
      </div>
      <div className="field">
        <label htmlFor="image-name">Name</label>
        <input
          id="image-name"
          value={name}
          disabled={busy}
          onChange={(e) => {
            setName(e.target.value);
          }}
          autoComplete="off"
        />
      </div>
      <div className="field">
        <label htmlFor="image-size">Disk size</label>
        <p id="image-size-hint" className="hint">
          At least the image&apos;s virtual size (a qcow2 may hold more than the file): the upload is refused otherwise.
        </p>
        <input
          id="image-size"
          value={size}
          disabled={busy}
          aria-describedby="image-size-hint"
          onChange={(e) => {
            setSize(e.target.value);
          }}
        />
      </div>
      {upload.step !== "idle" && (
        <div role="status" aria-live="polite">
          {upload.step === "preparing" && <p>Preparing {upload.name}: waiting for its upload server…</p>}
          {(upload.step === "sending" || upload.step === "converting") && (
            <>
              <progress aria-label={`Upload of ${upload.name}`} max={100} value={percent}>
                {percent}%
              </progress>{" "}
              <span>{upload.step === "sending" ? `${String(percent)}% sent` : "Sent; converting the image…"}</span>
            </>
          )}
          {upload.step === "done" && <p>Uploaded {upload.name}: it is ready to boot from.</p>}
          {upload.step === "failed" && (
            <p className="error" role="alert">
              Upload of {upload.name} failed: {upload.message}
            </p>
          )}
        </div>
      )}
      <div className="toolbar">
        <button type="submit" disabled={!file || busy || name.trim() === ""}>
          {busy ? "Uploading…" : "Upload"}
        </button>
        {busy && (
          <button type="button" className="secondary" onClick={cancel}>
            Cancel upload
          </button>
        )}
      </div>
    </form>
  );
}

export function ImagesView() {
  const namespace = useNamespace();
  const trpc = useTRPC();
  const list = useQuery({ ...trpc.dataVolumes.list.queryOptions({ namespace }), refetchInterval: 3_000 });
  const remove = useMutation(trpc.dataVolumes.delete.mutationOptions());
  const toast = useToast();
  const [dialog, confirm] = useConfirm();
  const rows = (list.data ?? []).map(imageRow).sort((a, b) => a.name.localeCompare(b.name));
  return (
    <Shell title="Images">
      {dialog}
      <UploadForm namespace={namespace} onChange={() => void list.refetch()} />
      {list.error && (
        <p className="error" role="alert">
          {describeError(list.error).message}
        </p>
      )}
      <table className="vms">
        <caption className="visually-hidden">Disk images (DataVolumes) in {namespace}</caption>
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Source</th>
            <th scope="col">Size</th>
            <th scope="col">State</th>
            <th scope="col">
              <span className="visually-hidden">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {rows.map((row) => (
            <tr key={row.name}>
              <td>{row.name}</td>
              <td>{row.source}</td>
              <td>{row.size}</td>
              <td data-phase={row.phase}>
                {row.state}
                {row.problem && <span className="why"> {row.problem}</span>}
              </td>
              <td>
                <button
                  type="button"
                  className="secondary danger"
                  aria-label={`Delete ${row.name}`}
                  onClick={() =>
                    void (async () => {
                      if (
                        !(await confirm({
                          title: `Delete ${row.name}?`,
                          body: <p>The image {row.name} is deleted with its disk. VMs that boot from it lose it.</p>,
                          confirm: `Delete ${row.name}`,
                          danger: true,
                        }))
                      )
                        return;
                      remove.mutateAsync({ namespace, name: row.name }).then(
                        () => {
                          toast(true, `Deleted ${row.name}.`);
                          void list.refetch();
                        },
                        (error: unknown) => {
                          toast(false, `Could not delete ${row.name}: ${describeError(error).message}`);
                        },
                      );
                    })()
                  }
                >
                  Delete
                </button>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {list.isSuccess && rows.length === 0 && <p className="card">No images in {namespace} yet: upload one above.</p>}
    </Shell>
  );
}
