import type { Metadata } from "next";
import { Suspense } from "react";
import { SignedIn } from "../providers";
import { OverviewView } from "./overview-view";

export const metadata: Metadata = { title: "Overview" };

export default function OverviewPage() {
  return (
    <Suspense>
      <SignedIn>
        <OverviewView />
      </SignedIn>
    </Suspense>
  );
}
