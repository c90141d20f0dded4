import type { Metadata } from "next";
import { Suspense } from "react";
import { SignedIn } from "../providers";
import { ImagesView } from "./images-view";

export const metadata: Metadata = { title: "Images" };

export default function ImagesPage() {
  return (
    <Suspense>
      <SignedIn>
        <ImagesView />
      </SignedIn>
    </Suspense>
  );
}
