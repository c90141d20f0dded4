import type { Metadata } from "next";
import { Suspense } from "react";
import { SignedIn } from "../../../../providers";
import { ConsoleWindow } from "./console-window";

export async function generateMetadata({ params }: { params: Promise<{ name: string }> }): Promise<Metadata> {
  return { title: `${decodeURIComponent((await params).name)}: console` };
}

export default async function ConsolePage({ params }: { params: Promise<{ namespace: string; name: string }> }) {
  const { namespace, name } = await params;
  return (
    <Suspense>
      <SignedIn>
        <ConsoleWindow namespace={decodeURIComponent(namespace)} name={decodeURIComponent(name)} />
      </SignedIn>
    </Suspense>
  );
}
