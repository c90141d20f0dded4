import type { Metadata, Viewport } from "next";
import type { ReactNode } from "react";
import "./globals.css";

// Every page is rendered per request: the gateway gives each response a
// fresh script nonce (its Content-Security-Policy), which Next.js puts on the
// scripts of that render; a page prerendered once would carry none.
export const dynamic = "force-dynamic";

export const metadata: Metadata = {
  title: { default: "kubevirt-ts", template: "%s · kubevirt-ts" },
  description: "Virtual machines on Kubernetes",
};

export const viewport: Viewport = {
  colorScheme: "light dark",
  themeColor: [
    { media: "(prefers-color-scheme: light)", color: "#f6f7f9" },
    { media: "(prefers-color-scheme: dark)", color: "#14161a" },
  ],
};

export default function RootLayout({ children }: Readonly<{ children: ReactNode }>) {
  return (
    <html lang="en">
      <body>
        <header className="topbar">
          <span className="brand">kubevirt-ts</span>
        </header>
        {children}
      </body>
    </html>
  );
}
