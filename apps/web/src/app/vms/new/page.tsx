import type { Metadata } from "next";
import { Suspense } from "react";
import { SignedIn } from "../../providers";
import { CreateVmView } from "./create-vm-view";

export const metadata: Metadata = { title: "Create a virtual machine" };

export default function CreateVmPage() {
  return (
    <Suspense>
      <SignedIn>
        <CreateVmView />
      </SignedIn>
    </Suspense>
  );
}
