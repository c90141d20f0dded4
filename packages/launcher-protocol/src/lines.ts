// The protocol's framing: lines of UTF-8 JSON. The reader holds at most one
// unfinished line, and never one longer than its limit: a peer that sends
// no newline, or a 100 MiB line, is told apart after maxBytes, whatever it
// sends next.

export class LineTooLongError extends Error {
  constructor(maxBytes: number) {
    super(`a line longer than ${String(maxBytes)} bytes`);
    this.name = "LineTooLongError";
  }
}

export class InvalidUtf8Error extends Error {
  constructor() {
    super("a line that is not UTF-8");
    this.name = "InvalidUtf8Error";
  }
}

const NEWLINE = 0x0a;

export class LineReader {
  private readonly maxBytes: number;
  private readonly decoder = new TextDecoder("utf-8", { fatal: true });
  private pending: Buffer[] = [];
  private pendingBytes = 0;

  constructor(maxBytes: number) {
    this.maxBytes = maxBytes;
  }

  /** The bytes held of the line not yet finished. */
  get bufferedBytes(): number {
    return this.pendingBytes;
  }

  /**
   * The lines this chunk finishes. Throws LineTooLongError as soon as a line
   * exceeds the limit and InvalidUtf8Error for a line that does not decode;
   * after either, the reader must not be used again.
   */
  push(chunk: Buffer): string[] {
    const lines: string[] = [];
    let start = 0;
    let newline = chunk.indexOf(NEWLINE, start);
    while (newline >= 0) {
      const piece = chunk.subarray(start, newline);
      if (this.pendingBytes + piece.length > this.maxBytes) throw new LineTooLongError(this.maxBytes);
      const line = this.pending.length === 0 ? piece : Buffer.concat([...this.pending, piece]);
      this.pending = [];
      this.pendingBytes = 0;
      lines.push(this.decode(line));
      start = newline + 1;
      newline = chunk.indexOf(NEWLINE, start);
    }
    const rest = chunk.subarray(start);
    if (this.pendingBytes + rest.length > this.maxBytes) throw new LineTooLongError(this.maxBytes);
    if (rest.length > 0) {
      // A copy: the rest must not keep the whole chunk alive.
      this.pending.push(Buffer.from(rest));
      this.pendingBytes += rest.length;
    }
    return lines;
  }

  private decode(line: Uint8Array): string {
    try {
      return this.decoder.decode(line);
    } catch {
      throw new InvalidUtf8Error();
    }
  }
}
