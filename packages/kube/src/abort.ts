/**
 * Whether a signal has aborted, read afresh: TypeScript narrows
 * `signal.aborted` after one check as if an await could not change it.
 */
export function aborted(signal: AbortSignal): boolean {
  return signal.aborted;
}
