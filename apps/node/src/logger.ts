import { LOG_LEVELS, type LogContext, type Logger, type LogLevel } from "@nodex/types";
import type { LogFormat } from "./config.js";

export interface LoggerOptions {
  readonly level: LogLevel;
  readonly format: LogFormat;
}

export interface LogSink {
  write(line: string): unknown;
}

const rank = Object.fromEntries(LOG_LEVELS.map((level, i) => [level, i])) as Record<
  LogLevel,
  number
>;

/** The node's logger: its children share its level, which `setLevel` changes (SIGHUP). */
export interface NodeLogger extends Logger {
  setLevel(level: LogLevel): void;
}

/** One line per event, JSON or pretty, to `sink` (standard error by default). */
export function createLogger(
  opts: LoggerOptions,
  sink: LogSink = process.stderr,
  bindings: LogContext = {},
  shared: { max: number } = { max: rank[opts.level] },
): NodeLogger {
  const enabled = (level: LogLevel) => rank[level] <= shared.max;
  const emit = (level: LogLevel, msg: string, ctx?: LogContext) => {
    if (!enabled(level)) return;
    const time = new Date().toISOString();
    // Assigned, not `{ ...bindings, ...ctx }`: on V8 11 (Node 20) a spread followed by more
    // fields makes a hidden class per line.
    sink.write(
      opts.format === "json"
        ? `${JSON.stringify(Object.assign({ time, level, msg }, bindings, ctx), jsonSafe)}\n`
        : `${time} ${level.toUpperCase().padEnd(5)} ${msg}${pretty(Object.assign({}, bindings, ctx))}\n`,
    );
  };
  return {
    error: (msg, ctx) => emit("error", msg, ctx),
    warn: (msg, ctx) => emit("warn", msg, ctx),
    info: (msg, ctx) => emit("info", msg, ctx),
    debug: (msg, ctx) => emit("debug", msg, ctx),
    trace: (msg, ctx) => emit("trace", msg, ctx),
    child: (more) => createLogger(opts, sink, { ...bindings, ...more }, shared),
    isLevelEnabled: enabled,
    setLevel: (level) => {
      shared.max = rank[level];
    },
  };
}

function jsonSafe(_key: string, value: unknown): unknown {
  if (typeof value === "bigint") return value.toString();
  if (value instanceof Uint8Array) return `0x${Buffer.from(value).toString("hex")}`;
  return value;
}

function pretty(fields: LogContext): string {
  let out = "";
  for (const [key, value] of Object.entries(fields)) {
    const text = typeof value === "string" ? value : JSON.stringify(value, jsonSafe);
    out += ` ${key}=${text !== undefined && /\s/.test(text) ? JSON.stringify(text) : text}`;
  }
  return out;
}
