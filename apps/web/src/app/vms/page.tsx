import type { Metadata } from "next";
import { Suspense } from "react";
import { SignedIn } from "../providers";
import { VirtualMachinesView } from "./virtual-machines-view";

export const metadata: Metadata = { title: "Virtual machines" };

export default function VirtualMachinesPage() {
  return (
    <Suspense>
      <SignedIn>
        <VirtualMachinesView />
      </SignedIn>
    </Suspense>
  );
}
