import type { Metadata } from "next";
import { Suspense } from "react";
import { SignedIn } from "../providers";
import { NodesView } from "./nodes-view";

export const metadata: Metadata = { title: "Nodes" };

export default function NodesPage() {
  return (
    <Suspense>
      <SignedIn>
        <NodesView />
      </SignedIn>
    </Suspense>
  );
}
