import { StateError, StateErrorCode } from "../errors.js";

/**
 * Where the client logs: a warning per failover, per rate-limit backoff and per upstream found
 * to refuse batches, never one per request. `Logger` of `@nodex/types` fits.
 */
export interface UpstreamLogger {
  warn(msg: string, fields?: Record<string, unknown>): void;
  info?(msg: string, fields?: Record<string, unknown>): void;
  debug?(msg: string, fields?: Record<string, unknown>): void;
}

export interface UpstreamOptions {
  /** Upstream JSON-RPC endpoints (http or https), the first preferred; at least one. */
  readonly urls: readonly string[];
  /** HTTP requests per second to all upstreams together (`Infinity`: no budget). */
  readonly rps?: number;
  /** Requests the budget lets out at once after a quiet time; 1 spaces every request. */
  readonly burst?: number;
  /** HTTP requests in flight at once, to all upstreams together (more wait their turn). */
  readonly maxConcurrent?: number;
  /** Each HTTP request is abandoned after this long (body included). */
  readonly timeoutMs?: number;
  /** Retries of a call on one URL before it fails over to the next. */
  readonly retries?: number;
  /** Calls in one JSON-RPC batch (one HTTP request). */
  readonly maxBatch?: number;
  /** Answers larger than this are abandoned (a failure of the upstream). */
  readonly maxResponseBytes?: number;
  /** First backoff; each retry on a URL doubles it, with jitter (half to all of it). */
  readonly backoffMs?: number;
  /** Cap of the backoff. */
  readonly maxBackoffMs?: number;
  /** Cap of a wait an upstream asks for with `Retry-After`. */
  readonly maxRetryAfterMs?: number;
  /**
   * A URL that a call gave up on is passed over by new calls for this long; then it is tried
   * again (a recovered primary is used again), with a single attempt while another URL is
   * healthy, until it answers.
   */
  readonly cooldownMs?: number;
}

/** Collaborators: the log, and the clock and sleep (tests inject virtual ones). */
export interface UpstreamDeps {
  readonly logger?: UpstreamLogger;
  /** Milliseconds, monotonic; `performance.now` by default. */
  readonly now?: () => number;
  /** Waits `ms` milliseconds; real timers by default. */
  readonly sleep?: (ms: number) => Promise<void>;
  /** In [0, 1): the jitter of backoffs; `Math.random` by default. */
  readonly random?: () => number;
}

export const defaultUpstreamOptions = {
  rps: 50,
  burst: 1,
  maxConcurrent: 16,
  timeoutMs: 10_000,
  retries: 4,
  maxBatch: 100,
  maxResponseBytes: 64 * 1024 * 1024,
  backoffMs: 250,
  maxBackoffMs: 10_000,
  maxRetryAfterMs: 30_000,
  cooldownMs: 30_000,
} as const;

export type ResolvedUpstreamOptions = Required<Omit<UpstreamOptions, "urls">> & {
  readonly urls: readonly string[];
};

/** Fills in defaults and checks every limit; `STATE_UPSTREAM_INVALID_OPTIONS` names the bad one. */
export function resolveUpstreamOptions(options: UpstreamOptions): ResolvedUpstreamOptions {
  if (!Array.isArray(options.urls) || options.urls.length === 0) {
    throw invalid("upstream urls: at least one URL is needed");
  }
  for (const url of options.urls) {
    if (typeof url !== "string") throw invalid("upstream urls: each URL must be a string");
  }
  const resolved: ResolvedUpstreamOptions = {
    ...defaultUpstreamOptions,
    ...withoutUndefined(options),
  };
  positive("rps", resolved.rps, { infinite: true });
  positive("timeoutMs", resolved.timeoutMs);
  positive("maxResponseBytes", resolved.maxResponseBytes);
  positive("backoffMs", resolved.backoffMs);
  positive("maxBackoffMs", resolved.maxBackoffMs);
  positive("maxRetryAfterMs", resolved.maxRetryAfterMs);
  positive("cooldownMs", resolved.cooldownMs);
  count("burst", resolved.burst, 1);
  count("maxBatch", resolved.maxBatch, 1);
  count("maxConcurrent", resolved.maxConcurrent, 1);
  count("retries", resolved.retries, 0);
  return resolved;
}

/** The limits set in `options` (deps and unknown keys left out). */
function withoutUndefined(options: UpstreamOptions): Partial<UpstreamOptions> & {
  urls: readonly string[];
} {
  const set = Object.entries(options).filter(
    ([key, value]) => value !== undefined && key in defaultUpstreamOptions,
  );
  return { ...Object.fromEntries(set), urls: [...options.urls] };
}

function positive(name: string, value: number, { infinite = false } = {}): void {
  const ok = typeof value === "number" && value > 0 && (infinite || Number.isFinite(value));
  if (!ok) throw invalid(`upstream ${name} must be a positive number, got ${String(value)}`);
}

function count(name: string, value: number, min: number): void {
  if (!Number.isSafeInteger(value) || value < min) {
    throw invalid(`upstream ${name} must be an integer of at least ${min}, got ${String(value)}`);
  }
}

function invalid(message: string): StateError {
  return new StateError(StateErrorCode.UPSTREAM_INVALID_OPTIONS, message);
}
