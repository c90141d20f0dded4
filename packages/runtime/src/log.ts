// Structured logs: one JSON object per line on stdout, as log collectors in a
// cluster expect them.

export type LogLevel = "debug" | "info" | "warn" | "error";
const ORDER: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export type LogFields = Record<string, unknown>;

export interface Logger {
  debug(msg: string, fields?: LogFields): void;
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
  /** A logger that adds these fields to every line, e.g. `{ vmi: "ns/name" }`. */
  child(fields: LogFields): Logger;
  /**
   * Changes the level of this logger and of every logger made from it (and of the one it was made from): the process's.
   */
  setLevel(level: LogLevel): void;
  level(): LogLevel;
}

export interface LoggerOptions {
  component: string;
  level?: LogLevel;
  /** Where lines go; stdout unless given (tests pass a collector). */
  write?: (line: string) => void;
  now?: () => Date;
}

function serializeError(value: unknown): unknown {
  return value instanceof Error ? { message: value.message, name: value.name, stack: value.stack } : value;
}

/** A logger family's level, shared by a logger and its children so that a change reaches all of them. */
interface SharedLevel {
  level: LogLevel;
}

export function createLogger(
  options: LoggerOptions,
  base: LogFields = {},
  shared: SharedLevel = { level: options.level ?? "info" },
): Logger {
  const write = options.write ?? ((line: string) => process.stdout.write(`${line}\n`));
  const now = options.now ?? (() => new Date());
  const log = (level: LogLevel, msg: string, fields: LogFields = {}) => {
    if (ORDER[level] < ORDER[shared.level]) return;
    const entry: LogFields = { ts: now().toISOString(), level, component: options.component, msg, ...base };
    for (const [key, value] of Object.entries(fields)) entry[key] = serializeError(value);
    write(JSON.stringify(entry));
  };
  return {
    debug: (msg, fields) => {
      log("debug", msg, fields);
    },
    info: (msg, fields) => {
      log("info", msg, fields);
    },
    warn: (msg, fields) => {
      log("warn", msg, fields);
    },
    error: (msg, fields) => {
      log("error", msg, fields);
    },
    child: (fields) => createLogger(options, { ...base, ...fields }, shared),
    setLevel: (level) => {
      shared.level = level;
    },
    level: () => shared.level,
  };
}
