/**
 * What a controller has written that its cache has not shown it yet. After a
 * write, the informer's copy stays at the version the write replaced until
 * the watch brings the new one; an event about another object (a pod, say)
 * can make the controller look at the old copy meanwhile, decide the same
 * write again and be refused with a conflict, one wasted write per change.
 * A controller records the version each write replaced, and leaves an object
 * alone while its cache still holds that version: the watch event of its own
 * write brings the object back to it.
 */
export class WrittenVersions {
  private readonly replaced = new Map<string, Set<string>>();

  /** Writes to the object under key succeeded, replacing these resourceVersions (each write the one before). */
  wrote(key: string, ...replacedVersions: (string | undefined)[]): void {
    const versions = replacedVersions.filter((v): v is string => v !== undefined);
    if (versions.length > 0) this.replaced.set(key, new Set(versions));
  }

  /** Whether the cached copy is one a write of ours has already replaced. */
  isStale(key: string, cachedVersion: string | undefined): boolean {
    const replaced = this.replaced.get(key);
    if (replaced === undefined) return false;
    if (cachedVersion !== undefined && replaced.has(cachedVersion)) return true;
    this.replaced.delete(key);
    return false;
  }

  forget(key: string): void {
    this.replaced.delete(key);
  }
}
