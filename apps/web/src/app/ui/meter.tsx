// A node's CPU or memory as requested of what pods may have: a meter with
// the figures in words, shared by the node view and the overview.

const GIB = 1024 ** 3;
export const cores = (millicores: number) => (millicores / 1000).toFixed(millicores % 1000 === 0 ? 0 : 1);
export const gib = (bytes: number) => `${(bytes / GIB).toFixed(1)} GiB`;

export function Meter({
  label,
  used,
  total,
  format,
}: {
  label: string;
  used: number;
  total: number;
  format: (n: number) => string;
}) {
  const percent = total > 0 ? Math.round((used / total) * 100) : 0;
  return (
    <div className="meter">
      <span>
        {label}: {format(used)} of {format(total)} requested ({percent} %)
      </span>
      <meter min={0} max={total} value={used} high={total * 0.85} optimum={0} aria-label={`${label} requested`} />
    </div>
  );
}

/** A node's CPU requested of what its pods may have, in cores; millicores in. */
export function CpuMeter({ used, total }: { used: number; total: number }) {
  return <Meter label="CPU" used={used} total={total} format={(m) => `${cores(m)} cores`} />;
}

/** A node's memory requested of what its pods may have, in GiB; bytes in. */
export function MemoryMeter({ used, total }: { used: number; total: number }) {
  return <Meter label="Memory" used={used} total={total} format={gib} />;
}
