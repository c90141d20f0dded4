"use client";

import { type ReactNode, createContext, useCallback, useContext, useMemo, useRef, useState } from "react";

// The outcome of an action as a toast: a success says so and goes after a
// few seconds, a failure stays until it is dismissed. Both are announced
// (status or alert) and can be dismissed with their button.

export interface Toast {
  id: number;
  ok: boolean;
  text: string;
}

const SUCCESS_LASTS_MS = 6_000;

const ToastContext = createContext<(ok: boolean, text: string) => void>(() => undefined);

export function useToast(): (ok: boolean, text: string) => void {
  return useContext(ToastContext);
}

export function ToastProvider({ children }: { children: ReactNode }) {
  const [toasts, setToasts] = useState<Toast[]>([]);
  const next = useRef(0);
  const dismiss = useCallback((id: number) => {
    setToasts((list) => list.filter((t) => t.id !== id));
  }, []);
  const show = useCallback(
    (ok: boolean, text: string) => {
      const id = (next.current += 1);
      setToasts((list) => [...list.slice(-4), { id, ok, text }]);
      if (ok)
        setTimeout(() => {
          dismiss(id);
        }, SUCCESS_LASTS_MS);
    },
    [dismiss],
  );
  const value = useMemo(() => show, [show]);
  return (
    <ToastContext.Provider value={value}>
      {children}
      <div className="toasts" aria-label="Notifications">
        {toasts.map((t) => (
          <div key={t.id} className={t.ok ? "toast" : "toast toast-error"} role={t.ok ? "status" : "alert"}>
            <span>{t.text}</span>
            <button
              type="button"
              className="secondary"
              aria-label={`Dismiss: ${t.text}`}
              onClick={() => {
                dismiss(t.id);
              }}
            >
              ×
            </button>
          </div>
        ))}
      </div>
    </ToastContext.Provider>
  );
}
