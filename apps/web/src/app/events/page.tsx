import type { Metadata } from "next";
import { Suspense } from "react";
import { SignedIn } from "../providers";
import { EventsView } from "./events-view";

export const metadata: Metadata = { title: "Events" };

export default function EventsPage() {
  return (
    <Suspense>
      <SignedIn>
        <EventsView />
      </SignedIn>
    </Suspense>
  );
}
