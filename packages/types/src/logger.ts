export type LogLevel = "error" | "warn" | "info" | "debug" | "trace";

/** Most to least severe. */
export const LOG_LEVELS: readonly LogLevel[] = Object.freeze([
  "error",
  "warn",
  "info",
  "debug",
  "trace",
]);

export type LogContext = Record<string, unknown>;

/** The logging contract every package writes to; `apps/node` provides the implementation. */
export interface Logger {
  error(msg: string, ctx?: LogContext): void;
  warn(msg: string, ctx?: LogContext): void;
  info(msg: string, ctx?: LogContext): void;
  debug(msg: string, ctx?: LogContext): void;
  trace(msg: string, ctx?: LogContext): void;
  child(bindings: LogContext): Logger;
  isLevelEnabled(level: LogLevel): boolean;
}

const discard = (): void => {};

/** A logger that discards everything. */
export const nullLogger: Logger = Object.freeze({
  error: discard,
  warn: discard,
  info: discard,
  debug: discard,
  trace: discard,
  child: () => nullLogger,
  isLevelEnabled: () => false,
});
