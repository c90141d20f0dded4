"use client";

import { type ReactNode, useCallback, useRef, useState } from "react";

// A confirmation in the page, for what cannot be taken back (stop, force
// stop, restart, reset, delete): a modal dialog that names what it acts on
// and what will happen, the action on its button, Cancel (or Escape) to
// leave things as they are.

export interface Confirmation {
  title: string;
  body: ReactNode;
  confirm: string;
  danger?: boolean;
  /** Further choices (as "delete the VM, keep its disks"), each with what it answers. */
  choices?: { label: string; value: string; danger?: boolean }[];
}

/**
 * A dialog to render and a function that opens it with a confirmation and answers the choice made (undefined:
 * cancelled).
 */
export function useConfirm(): [ReactNode, (c: Confirmation) => Promise<string | undefined>] {
  const dialog = useRef<HTMLDialogElement>(null);
  const [shown, setShown] = useState<Confirmation | null>(null);
  const answer = useRef<(value: string | undefined) => void>(() => undefined);
  const ask = useCallback(
    (c: Confirmation) =>
      new Promise<string | undefined>((resolve) => {
        answer.current = resolve;
        setShown(c);
        // The dialog opens once it is rendered with the confirmation.
        requestAnimationFrame(() => {
          dialog.current?.showModal();
        });
      }),
    [],
  );
  const close = (value: string | undefined) => {
    dialog.current?.close();
    setShown(null);
    answer.current(value);
  };
  const element = (
    <dialog
      ref={dialog}
      aria-labelledby="confirm-title"
      className="card confirm"
      onCancel={() => {
        close(undefined);
      }}
    >
      {shown && (
        <>
          <h2 id="confirm-title">{shown.title}</h2>
          <div>{shown.body}</div>
          <div className="toolbar">
            {(shown.choices ?? [{ label: shown.confirm, value: "confirm", danger: shown.danger ?? false }]).map(
              (choice) => (
                <button
                  key={choice.value}
                  type="button"
                  className={choice.danger ? "danger" : ""}
                  onClick={() => {
                    close(choice.value);
                  }}
                >
                  {choice.label}
                </button>
              ),
            )}
            <button
              type="button"
              className="secondary"
              autoFocus
              onClick={() => {
                close(undefined);
              }}
            >
              Cancel
            </button>
          </div>
        </>
      )}
    </dialog>
  );
  return [element, ask];
}
