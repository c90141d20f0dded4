"use client";

import { useRouter } from "next/navigation";
import { useEffect } from "react";
import { signOut, useSessionToken } from "../../lib/session";

export function VirtualMachinesView() {
  const router = useRouter();
  const token = useSessionToken();

  useEffect(() => {
    if (token === null) router.replace("/");
  }, [token, router]);

  function handleSignOut(): void {
    signOut();
    router.replace("/");
  }

  const signedIn = typeof token === "string";
  return (
    <main>
      <div className="page-header">
        <h1>Virtual machines</h1>
        <button type="button" className="secondary" onClick={handleSignOut} disabled={!signedIn}>
          Sign out
        </button>
      </div>
      <div className="card" aria-live="polite">
        {signedIn ? (
          <p>
            You are signed in. The list of virtual machines arrives with the kubevirt-ts API (issue 6); until then
            there is nothing to show here.
          </p>
        ) : (
          <p>Checking your sign-in…</p>
        )}
      </div>
    </main>
  );
}
