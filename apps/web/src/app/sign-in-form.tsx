"use client";

import { useRouter } from "next/navigation";
import { type SubmitEvent, useRef, useState } from "react";
import { signIn, useHydrated } from "../lib/session";
import { parseBearerToken } from "../lib/token";

export function SignInForm() {
  const router = useRouter();
  const hydrated = useHydrated();
  const tokenField = useRef<HTMLTextAreaElement>(null);
  const [error, setError] = useState<string | null>(null);

  function handleSubmit(event: SubmitEvent<HTMLFormElement>): void {
    event.preventDefault();
    const result = parseBearerToken(tokenField.current?.value ?? "");
    if (!result.ok) {
      setError(result.error);
      tokenField.current?.focus();
      return;
    }
    setError(null);
    signIn(result.token);
    router.push("/vms");
  }

  // The field has no name, so a submission before hydration cannot put the
  // token in the URL; the button stays disabled until the handler is attached.
  return (
    <form onSubmit={handleSubmit} noValidate>
      <label htmlFor="token">Kubernetes bearer token</label>
      <p id="token-hint" className="hint">
        For example the output of <code>kubectl create token NAME</code>. It is kept in this browser tab only
        and forgotten when the tab closes or you sign out.
      </p>
      <textarea
        id="token"
        ref={tokenField}
        rows={6}
        required
        autoComplete="off"
        autoCapitalize="off"
        autoCorrect="off"
        spellCheck={false}
        aria-describedby={error === null ? "token-hint" : "token-hint token-error"}
        aria-invalid={error !== null}
      />
      {error !== null && (
        <p id="token-error" className="error" role="alert">
          {error}
        </p>
      )}
      <button type="submit" disabled={!hydrated}>
        Sign in
      </button>
    </form>
  );
}
