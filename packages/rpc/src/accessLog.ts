import type { DispatchNotes } from "./dispatcher.js";

/** Methods listed in one access-log line; a bigger batch lists its first ones and its size. */
export const MAX_LOGGED_METHODS = 16;

/**
 * One line of the access log: one HTTP request, or one WebSocket message. Never the API key
 * (the request path, which holds it in hosted mode, is not logged): its id only.
 */
export interface AccessRecord {
  /** When the answer went out, ISO 8601. */
  readonly time: string;
  readonly transport: "http" | "ws";
  /** The client's address (the connection's: a proxy's when behind one). */
  readonly remote: string | undefined;
  /** The id of the API key the request came with; undefined (no field in the line) without one. */
  readonly key: string | undefined;
  /** HTTP only: the request's method (`POST`, `GET`, …) and status. */
  readonly httpMethod?: string;
  readonly status?: number;
  /** Method labels (names the node does not declare as `other`), at most `MAX_LOGGED_METHODS`. */
  readonly methods: readonly string[];
  /** Calls in the body: more than `methods` lists when a batch is bigger. */
  readonly calls: number;
  /** The JSON-RPC error codes answered, each once, in order of first answer. */
  readonly errors: readonly number[];
  /** From reading the request to its answer, in milliseconds. */
  readonly ms: number;
  readonly bytesIn: number;
  readonly bytesOut: number;
}

/** Where access records go (`apps/node` writes them as JSON lines). */
export interface AccessLogSink {
  write(record: AccessRecord): void;
}

export function newNotes(): DispatchNotes {
  return { methods: [], codes: [] };
}

/** The method labels of a record: at most `MAX_LOGGED_METHODS`. */
export function loggedMethods(notes: DispatchNotes): readonly string[] {
  return notes.methods.length > MAX_LOGGED_METHODS
    ? notes.methods.slice(0, MAX_LOGGED_METHODS)
    : notes.methods;
}

/** The error codes of a record, each once. */
export function loggedCodes(notes: DispatchNotes): readonly number[] {
  return notes.codes.length <= 1 ? notes.codes : [...new Set(notes.codes)];
}

let isoAt = 0;
let iso = "";
/** The time now, ISO 8601, made once per millisecond (a busy node answers many in one). */
export function isoNow(): string {
  const now = Date.now();
  if (now !== isoAt) {
    isoAt = now;
    iso = new Date(now).toISOString();
  }
  return iso;
}

/** Milliseconds since `start` (a `performance.now()`), to the microsecond. */
export function since(start: number): number {
  return Math.round((performance.now() - start) * 1000) / 1000;
}
