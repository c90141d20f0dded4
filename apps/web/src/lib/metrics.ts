import type { inferRouterOutputs } from "@trpc/server";
import type { AppRouter } from "@kubevirt-ts/api/router";

// The VM graphs' figures as the API sends them, and how they read.

export type MetricRate = inferRouterOutputs<AppRouter>["vms"]["metrics"]["rates"][number];

const UNITS = ["B", "KiB", "MiB", "GiB", "TiB"] as const;

/** Bytes in binary units, three significant figures: 1536 reads "1.50 KiB". */
export function formatBytes(bytes: number): string {
  let value = bytes;
  let unit = 0;
  while (Math.abs(value) >= 1024 && unit < UNITS.length - 1) {
    value /= 1024;
    unit += 1;
  }
  // Whole bytes as they are, a fraction of one (a slow rate, an axis's tick) with one decimal.
  const figure = unit > 0 ? value.toPrecision(3) : Number.isInteger(value) ? String(value) : value.toFixed(1);
  return `${figure} ${UNITS[unit] ?? "B"}`;
}

export function formatRate(bytesPerSecond: number): string {
  return `${formatBytes(bytesPerSecond)}/s`;
}

/** CPU in cores, with as many decimals as a small figure needs: 0.004 cores reads "0.004 cores", not "0.00". */
export function formatCores(cores: number): string {
  return `${cores === 0 ? "0" : cores < 0.1 ? cores.toFixed(3) : cores.toFixed(2)} cores`;
}
