import type { Metadata } from "next";
import { Suspense } from "react";
import { SignedIn } from "../providers";
import { MigrationsView } from "./migrations-view";

export const metadata: Metadata = { title: "Migrations" };

export default function MigrationsPage() {
  return (
    <Suspense>
      <SignedIn>
        <MigrationsView />
      </SignedIn>
    </Suspense>
  );
}
