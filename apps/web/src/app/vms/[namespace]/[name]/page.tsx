import type { Metadata } from "next";
import { Suspense } from "react";
import { SignedIn } from "../../../providers";
import { VmDetailsView } from "./vm-details-view";

export async function generateMetadata({ params }: { params: Promise<{ name: string }> }): Promise<Metadata> {
  return { title: decodeURIComponent((await params).name) };
}

export default async function VmDetailsPage({ params }: { params: Promise<{ namespace: string; name: string }> }) {
  const { namespace, name } = await params;
  return (
    <Suspense>
      <SignedIn>
        <VmDetailsView namespace={decodeURIComponent(namespace)} name={decodeURIComponent(name)} />
      </SignedIn>
    </Suspense>
  );
}
