import type { NextConfig } from "next";

const config: NextConfig = {
  // A self-contained server (.next/standalone) is what the web image runs and the e2e tests serve.
  output: "standalone",
  // No image optimisation: it would need sharp, a native module.
  images: { unoptimized: true },
  poweredByHeader: false,
  reactStrictMode: true,
};

export default config;
