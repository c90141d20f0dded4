import { readFile } from "node:fs/promises";

/**
 * How long a token read from its file is used before the file is read again (client-go's cachingTokenSource uses a
 * minute).
 */
export const TOKEN_FILE_PERIOD_MS = 60_000;

/** A projected service-account token is about 1 KiB; a file much larger than this is not a token. */
const TOKEN_FILE_MAX_BYTES = 64 * 1024;

export interface TokenFileOptions {
  periodMs?: number;
  now?: () => number;
  read?: (path: string) => Promise<string>;
  /** Called when the file cannot be read and the last token is used again. */
  onStale?: (error: unknown) => void;
}

async function readTokenFile(path: string): Promise<string> {
  const text = await readFile(path, "utf8");
  if (text.length > TOKEN_FILE_MAX_BYTES)
    throw new Error(`${path} holds ${text.length} bytes, more than a token's ${TOKEN_FILE_MAX_BYTES}`);
  return text;
}

/**
 * A bearer token kept in a file that the kubelet rewrites as it rotates the
 * token (a projected service-account token). The file is read again at most
 * once a period; refresh() reads it at once, for when the API server refused
 * the token. A file that cannot be read keeps the last token in use, as
 * client-go does, rather than failing every request.
 */
export class TokenFile {
  readonly path: string;
  private readonly periodMs: number;
  private readonly now: () => number;
  private readonly read: (path: string) => Promise<string>;
  private readonly onStale: (error: unknown) => void;
  private current: string | undefined;
  private readAt = Number.NEGATIVE_INFINITY;
  private reading: Promise<string> | undefined;

  constructor(path: string, options: TokenFileOptions = {}) {
    this.path = path;
    this.periodMs = options.periodMs ?? TOKEN_FILE_PERIOD_MS;
    this.now = options.now ?? Date.now;
    this.read = options.read ?? readTokenFile;
    this.onStale =
      options.onStale ??
      ((error) => {
        console.warn(`cannot read the token file ${path}, using the token read before: ${String(error)}`);
      });
  }

  /** The token: the one read last if it is younger than the period, else the file's. */
  token(): Promise<string> {
    if (this.current !== undefined && this.now() - this.readAt < this.periodMs) return Promise.resolve(this.current);
    return this.reload();
  }

  /** Reads the file now (one read for all callers that ask at the same time). */
  refresh(): Promise<string> {
    return this.reload();
  }

  private reload(): Promise<string> {
    this.reading ??= this.load().finally(() => {
      this.reading = undefined;
    });
    return this.reading;
  }

  private async load(): Promise<string> {
    try {
      const token = (await this.read(this.path)).trim();
      if (token === "") throw new Error(`${this.path} is empty`);
      this.current = token;
      this.readAt = this.now();
      return token;
    } catch (error) {
      if (this.current === undefined)
        throw new Error(
          "cannot read the service-account token " +
            `file ${this.path}: ${error instanceof Error ? error.message : String(error)}`,
          { cause: error },
        );
      // The next attempt waits a period, so that a missing file costs one read and one warning a period, not one a
      // request.
      this.readAt = this.now();
      this.onStale(error);
      return this.current;
    }
  }
}
