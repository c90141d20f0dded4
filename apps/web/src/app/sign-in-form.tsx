"use client";

import { useRouter } from "next/navigation";
import { type SubmitEvent, useRef, useState } from "react";
import { signIn, useHydrated, useSignedOutReason } from "../lib/session";
import { parseBearerToken } from "../lib/token";
import { checkToken } from "../lib/trpc";

export function SignInForm() {
  const router = useRouter();
  const hydrated = useHydrated();
  const tokenField = useRef<HTMLTextAreaElement>(null);
  const [error, setError] = useState<string | null>(null);
  const [checking, setChecking] = useState(false);
  const signedOutReason = useSignedOutReason();

  function refuse(message: string): void {
    setError(message);
    tokenField.current?.focus();
  }

  // The token is tried on the cluster (whoami) before it is kept: one the
  // cluster refuses never signs anybody in.
  async function handleSubmit(event: SubmitEvent<HTMLFormElement>): Promise<void> {
    event.preventDefault();
    const result = parseBearerToken(tokenField.current?.value ?? "");
    if (!result.ok) {
      refuse(result.error);
      return;
    }
    setError(null);
    setChecking(true);
    const refusal = await checkToken(result.token).finally(() => {
      setChecking(false);
    });
    if (refusal !== null) {
      refuse(refusal);
      return;
    }
    signIn(result.token);
    // The cluster at a glance first, as far as the user may see it.
    router.push("/overview");
  }

  // The field has no name, so a submission before hydration cannot put the
  // token in the URL; the button stays disabled until the handler is attached.
  return (
    <form
      onSubmit={(event) => {
        void handleSubmit(event);
      }}
      noValidate
    >
      {signedOutReason !== null && error === null && (
        <p className="error" role="alert">
          {signedOutReason}
        </p>
      )}
      <label htmlFor="token">Kubernetes bearer token</label>
      <p id="token-hint" className="hint">
        For example the output of <code>kubectl create token NAME</code>. It is kept in this browser tab only and
        forgotten when the tab closes or you sign out.
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
      <button type="submit" disabled={!hydrated || checking}>
        Sign in
      </button>
      {checking && (
        <p className="hint" aria-live="polite">
          Checking the token with the cluster…
        </p>
      )}
    </form>
  );
}
