import type { Metadata } from "next";
import { SignInForm } from "./sign-in-form";

export const metadata: Metadata = { title: { absolute: "Sign in · kubevirt-ts" } };

export default function SignInPage() {
  return (
    <main>
      <h1>Sign in</h1>
      <div className="card">
        <SignInForm />
      </div>
    </main>
  );
}
