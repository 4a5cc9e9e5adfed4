import { readFileSync } from "node:fs";
import { writeFileAtomic } from "./keys.js";

/**
 * Per-key (and per-address) limits in units: each method costs its weight, in the spirit of
 * Alchemy's compute units. A token bucket bounds units per second; a quota bounds units per UTC
 * day.
 */

/** What one scope (a key, an address) may spend. */
export interface Limits {
  /** Units per second; the bucket holds one second's worth. */
  readonly rate?: number | undefined;
  /** Units per UTC day. */
  readonly daily?: number | undefined;
}

/** A refusal: which limit, and in how many seconds it frees. */
export interface LimitRefusal {
  readonly limit: "rate" | "daily";
  /** Whole seconds, at least 1 (what `Retry-After` says). */
  readonly retryAfterS: number;
}

/** What a scope spent: `keys list` shows it. */
export interface ScopeUsage {
  /** The UTC day `unitsToday` counts, `YYYY-MM-DD`. */
  readonly day: string;
  readonly unitsToday: number;
  /** Milliseconds since the epoch of the last request; 0 for none. */
  readonly lastUsed: number;
}

/**
 * The counters behind the limits. The embedded one keeps them in memory (and the node writes
 * the usage to a file); a shared one lets several nodes count together.
 */
export interface LimitStore {
  /** Spends `cost` units of `scope` when its limits allow, else says which limit refused. */
  take(scope: string, cost: number, limits: Limits, now: number): LimitRefusal | undefined;
  usage(scope: string): ScopeUsage | undefined;
  /** Every scope with usage. */
  entries(): Iterable<readonly [string, ScopeUsage]>;
  /** Usage counted before (the node's last run), so that a restart does not reset the quota. */
  seed(scope: string, usage: ScopeUsage): void;
}

/** A token bucket: `rate` units per second, holding at most `rate`. */
export class TokenBucket {
  #tokens: number;
  #at: number;

  constructor(
    readonly rate: number,
    now: number,
  ) {
    this.#tokens = rate;
    this.#at = now;
  }

  /**
   * Takes `cost` units when there are enough, or when the bucket is full (a request costing
   * more than a second's worth still runs, then waits its debt out). Otherwise returns the
   * milliseconds until there are enough.
   */
  take(cost: number, now: number, rate = this.rate): number {
    if (now > this.#at) {
      this.#tokens = Math.min(rate, this.#tokens + ((now - this.#at) * rate) / 1000);
      this.#at = now;
    }
    if (cost <= 0 || this.#tokens >= cost || this.#tokens >= rate) {
      this.#tokens -= cost;
      return 0;
    }
    return Math.ceil(((Math.min(cost, rate) - this.#tokens) * 1000) / rate);
  }
}

interface Counter {
  bucket: TokenBucket | undefined;
  /** Days since the epoch (UTC). */
  day: number;
  units: number;
  lastUsed: number;
}

/** The UTC day of a time, `YYYY-MM-DD`. */
export function utcDay(now: number): string {
  return new Date(now).toISOString().slice(0, 10);
}

const DAY_MS = 86_400_000;

function secondsToNextDay(now: number): number {
  return Math.max(1, Math.ceil(((Math.floor(now / DAY_MS) + 1) * DAY_MS - now) / 1000));
}

/** The limit counters in this process's memory. */
export class MemoryLimitStore implements LimitStore {
  readonly #counters = new Map<string, Counter>();

  take(scope: string, cost: number, limits: Limits, now: number): LimitRefusal | undefined {
    let c = this.#counters.get(scope);
    const day = Math.floor(now / DAY_MS);
    if (c === undefined) {
      c = { bucket: undefined, day, units: 0, lastUsed: 0 };
      this.#counters.set(scope, c);
    } else if (c.day !== day) {
      c.day = day;
      c.units = 0;
    }
    c.lastUsed = now;
    if (limits.daily !== undefined && c.units + cost > limits.daily) {
      return { limit: "daily", retryAfterS: secondsToNextDay(now) };
    }
    if (limits.rate !== undefined) {
      if (c.bucket === undefined) c.bucket = new TokenBucket(limits.rate, now);
      const wait = c.bucket.take(cost, now, limits.rate);
      if (wait > 0) return { limit: "rate", retryAfterS: Math.max(1, Math.ceil(wait / 1000)) };
    }
    c.units += cost;
    return undefined;
  }

  usage(scope: string): ScopeUsage | undefined {
    const c = this.#counters.get(scope);
    return c === undefined
      ? undefined
      : { day: utcDay(c.day * DAY_MS), unitsToday: c.units, lastUsed: c.lastUsed };
  }

  *entries(): Iterable<readonly [string, ScopeUsage]> {
    for (const [scope, c] of this.#counters)
      yield [scope, { day: utcDay(c.day * DAY_MS), unitsToday: c.units, lastUsed: c.lastUsed }];
  }

  /**
   * Forgets the counters of client addresses (`ip:` scopes) idle for `idleMs` that count no
   * units today (their bucket has long refilled): addresses come and go, and their counters with
   * them. Those of keys stay: they hold the key's last use.
   */
  prune(now: number, idleMs = 10 * 60_000): void {
    const today = Math.floor(now / DAY_MS);
    for (const [scope, c] of this.#counters) {
      if (!scope.startsWith("ip:")) continue;
      if (now - c.lastUsed > idleMs && (c.day !== today || c.units === 0))
        this.#counters.delete(scope);
    }
  }

  seed(scope: string, usage: ScopeUsage): void {
    this.#counters.set(scope, {
      bucket: undefined,
      day: Math.floor(Date.parse(`${usage.day}T00:00:00Z`) / DAY_MS),
      units: usage.unitsToday,
      lastUsed: usage.lastUsed,
    });
  }
}

/**
 * Default weights of methods, in units (Alchemy's compute units where it has the method). A
 * method not in the table costs `DEFAULT_METHOD_WEIGHT`.
 */
export const DEFAULT_METHOD_WEIGHTS: Readonly<Record<string, number>> = Object.freeze({
  eth_chainId: 0,
  net_version: 0,
  web3_clientVersion: 0,
  rpc_modules: 0,
  net_listening: 0,
  eth_syncing: 0,
  eth_blockNumber: 10,
  eth_gasPrice: 19,
  eth_maxPriorityFeePerGas: 10,
  eth_feeHistory: 10,
  eth_getBalance: 19,
  eth_getCode: 26,
  eth_getStorageAt: 17,
  eth_getTransactionCount: 26,
  eth_getBlockByNumber: 16,
  eth_getBlockByHash: 16,
  eth_getBlockReceipts: 500,
  eth_getBlockTransactionCountByHash: 20,
  eth_getBlockTransactionCountByNumber: 20,
  eth_getTransactionByHash: 17,
  eth_getTransactionByBlockHashAndIndex: 15,
  eth_getTransactionByBlockNumberAndIndex: 15,
  eth_getTransactionReceipt: 15,
  eth_getUncleCountByBlockHash: 15,
  eth_getUncleCountByBlockNumber: 15,
  eth_getProof: 21,
  eth_call: 26,
  eth_estimateGas: 87,
  eth_createAccessList: 26,
  eth_getLogs: 75,
  eth_newFilter: 20,
  eth_newBlockFilter: 20,
  eth_newPendingTransactionFilter: 20,
  eth_getFilterChanges: 20,
  eth_getFilterLogs: 75,
  eth_uninstallFilter: 10,
  eth_subscribe: 10,
  eth_unsubscribe: 10,
  eth_sendRawTransaction: 250,
  eth_sendTransaction: 250,
  debug_traceTransaction: 309,
  debug_traceCall: 309,
  debug_traceBlockByNumber: 497,
  debug_traceBlockByHash: 497,
  trace_transaction: 26,
  trace_block: 24,
  trace_filter: 75,
  txpool_status: 10,
  txpool_content: 500,
  txpool_contentFrom: 50,
  txpool_inspect: 500,
});

/** The weight of a method the table does not name. */
export const DEFAULT_METHOD_WEIGHT = 10;

/** Reads the usage a node wrote (`{"day": …, "keys": {id: {unitsToday, lastUsed}}}`). */
export function readUsageFile(path: string): Map<string, ScopeUsage> {
  const out = new Map<string, ScopeUsage>();
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, "utf8"));
  } catch {
    return out;
  }
  const keys = (raw as { keys?: unknown } | null)?.keys;
  if (typeof keys !== "object" || keys === null) return out;
  for (const [id, u] of Object.entries(keys as Record<string, unknown>)) {
    const v = u as Partial<Record<string, unknown>> | null;
    if (
      v !== null &&
      typeof v.day === "string" &&
      typeof v.unitsToday === "number" &&
      typeof v.lastUsed === "number"
    )
      out.set(id, { day: v.day, unitsToday: v.unitsToday, lastUsed: v.lastUsed });
  }
  return out;
}

/** Writes the usage of every key scope (`key:<id>`) of `store`, atomically. */
export function writeUsageFile(path: string, store: LimitStore): void {
  const keys: Record<string, ScopeUsage> = {};
  for (const [scope, usage] of store.entries()) {
    if (scope.startsWith("key:")) keys[scope.slice(4)] = usage;
  }
  writeFileAtomic(path, `${JSON.stringify({ version: 1, keys }, null, 2)}\n`);
}
