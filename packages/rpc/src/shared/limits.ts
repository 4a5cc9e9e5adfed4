import { randomBytes } from "node:crypto";
import type { Logger } from "@nodex/types";
import {
  type LimitRefusal,
  type LimitStore,
  type Limits,
  type ScopeUsage,
  utcDay,
} from "../limits.js";
import type { SharedScript, SharedStore } from "./redis.js";

/** How often a replica pushes what it spent to Redis and reads the totals back. */
export const LIMITS_FLUSH_MS = 150;
/** A scope not used for this long is no longer read back at each flush. */
const WATCH_MS = 10_000;
/** A replica that has not flushed for this long is no longer counted among the replicas. */
const REPLICA_WINDOW_MS = 2_000;
/** Without a flush that landed for this long, a replica counts alone, with its share. */
export const LIMITS_GRACE_MS = 1_000;
const DAY_MS = 86_400_000;
/** Day counters outlive their day by one, for `keys list` around midnight. */
const DAY_COUNTER_TTL_MS = 2 * DAY_MS;

/** A scope's units of one UTC day in Redis. */
export function limitCounter(scope: string, day: string): string {
  return `limits:${scope}:${day}`;
}
/** Key scopes' last use (a hash of scope to milliseconds). */
export const LIMITS_LAST_USED = "limits:last";
const REPLICAS = "limits:replicas";

const FLUSH: SharedScript = {
  name: "limitsFlush",
  // KEYS: replicas, last used, counters…; ARGV: replica, counter TTL, replica window, number of
  // counters, what each counter gets, then (scope, last used) pairs. Answers the number of
  // replicas, then each counter's total.
  lua: `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZADD', KEYS[1], now, ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - tonumber(ARGV[3]))
redis.call('PEXPIRE', KEYS[1], ARGV[3])
local n = tonumber(ARGV[4])
local out = {redis.call('ZCARD', KEYS[1])}
for i = 1, n do
  out[i + 1] = redis.call('INCRBY', KEYS[2 + i], ARGV[4 + i])
  if redis.call('PTTL', KEYS[2 + i]) < 0 then redis.call('PEXPIRE', KEYS[2 + i], ARGV[2]) end
end
for j = 5 + n, #ARGV, 2 do
  local cur = tonumber(redis.call('HGET', KEYS[2], ARGV[j]) or '0')
  if tonumber(ARGV[j + 1]) > cur then redis.call('HSET', KEYS[2], ARGV[j], ARGV[j + 1]) end
end
return out
`,
};

const USAGE: SharedScript = {
  name: "limitsUsage",
  // KEYS: last used, counters…
  lua: `
local out = {redis.call('HGETALL', KEYS[1])}
for i = 2, #KEYS do out[i] = redis.call('GET', KEYS[i]) or '0' end
return out
`,
};

/** The usage of key scopes (`key:<id>`) today, as Redis counts it, for `nodex keys list`. */
export async function readSharedUsage(
  store: SharedStore,
  ids: readonly string[],
  now = Date.now(),
): Promise<Map<string, ScopeUsage>> {
  const day = utcDay(now);
  const answer = (await store.run(
    USAGE,
    [LIMITS_LAST_USED, ...ids.map((id) => limitCounter(`key:${id}`, day))],
    [],
  )) as unknown[];
  const flat = (answer[0] as string[] | undefined) ?? [];
  const last = new Map<string, number>();
  for (let i = 0; i + 1 < flat.length; i += 2) last.set(flat[i]!, Number(flat[i + 1]));
  const out = new Map<string, ScopeUsage>();
  ids.forEach((id, i) => {
    out.set(id, {
      day,
      unitsToday: Number(answer[i + 1] ?? 0),
      lastUsed: last.get(`key:${id}`) ?? 0,
    });
  });
  return out;
}

interface SharedCounter {
  /** The shared bucket's level when it was last known (`at`); negative: debt. */
  tokens: number;
  at: number;
  /** Units this replica took since `at`. */
  taken: number;
  /** Units not pushed yet, and those of the flush under way. */
  pending: number;
  inFlight: number;
  /** Days since the epoch (UTC) `total` counts. */
  day: number;
  /** Today's units across the replicas, at the last flush (this replica's pushed ones included). */
  total: number;
  /** Whether `total` was read from Redis for this scope since it was last idle. */
  synced: boolean;
  lastUsed: number;
  /** The rate the scope was last taken at (units per second). */
  rate: number;
}

/**
 * Limit counters shared by the replicas of an endpoint through Redis, with `take` synchronous and
 * from memory: a replica decides from the totals it last read plus what it took since, and every
 * `LIMITS_FLUSH_MS` pushes what it took and reads the totals back in one round trip (a script:
 * INCRBY of each scope's day counter, and the count of replicas flushing).
 *
 * The rate: each replica mirrors the one shared bucket (its level at the last flush, refilled at
 * the key's rate, less what every replica took meanwhile) and takes, between two flushes, at most
 * its share of it (the level over the number of replicas). The replicas together thus take at
 * most what the bucket holds, except a replica that meets a scope for the first time (or after
 * it was idle `WATCH_MS`), which starts from a full bucket: up to 1/n of a second's worth more,
 * once. The daily quota: the day's total at the last flush plus what the replica took since;
 * each replica may pass it by what it takes in one flush interval.
 *
 * Without Redis for `LIMITS_GRACE_MS`, each replica counts alone with its share of the rate (the
 * rate over the replicas it last saw) and the day's total it knew; what it took is pushed once
 * Redis is back.
 */
export class SharedLimitStore implements LimitStore {
  readonly #store: SharedStore;
  readonly #log: Logger;
  readonly #counters = new Map<string, SharedCounter>();
  readonly #replica = randomBytes(6).toString("hex");
  readonly #now: () => number;
  #replicas = 1;
  #flushedAt = 0;
  #flushing = false;
  #timer: NodeJS.Timeout | undefined;
  #downLogged = false;

  constructor(store: SharedStore, logger: Logger, opts: { now?: () => number } = {}) {
    this.#store = store;
    this.#log = logger;
    this.#now = opts.now ?? Date.now;
  }

  /** Flushes every `LIMITS_FLUSH_MS` from now on. */
  start(): this {
    this.#timer = setInterval(() => void this.flush(), LIMITS_FLUSH_MS);
    this.#timer.unref();
    return this;
  }

  /** Whether the last flush landed within `LIMITS_GRACE_MS`. */
  #shared(now: number): boolean {
    return this.#flushedAt !== 0 && now - this.#flushedAt <= LIMITS_GRACE_MS;
  }

  take(scope: string, cost: number, limits: Limits, now: number): LimitRefusal | undefined {
    const day = Math.floor(now / DAY_MS);
    let c = this.#counters.get(scope);
    if (c === undefined) {
      c = {
        tokens: limits.rate ?? 0,
        at: now,
        taken: 0,
        pending: 0,
        inFlight: 0,
        day,
        total: 0,
        synced: false,
        lastUsed: 0,
        rate: limits.rate ?? 0,
      };
      this.#counters.set(scope, c);
    } else if (c.day !== day) {
      c.day = day;
      c.total = 0;
      c.synced = false;
    }
    c.lastUsed = now;
    c.rate = limits.rate ?? 0;
    if (limits.daily !== undefined && c.total + c.pending + c.inFlight + cost > limits.daily)
      return { limit: "daily", retryAfterS: secondsToNextDay(now) };
    const rate = limits.rate;
    if (rate !== undefined) {
      const shared = this.#shared(now);
      const n = Math.max(1, this.#replicas);
      // Alone, a replica refills its share; with Redis, the shared bucket refills at the rate.
      const capacity = shared ? rate : rate / n;
      const level = Math.min(capacity, c.tokens + ((now - c.at) * capacity) / 1000);
      const room = shared ? level / n : level;
      const fits =
        cost <= 0 ||
        c.taken + cost <= room ||
        // A request costing more than the share still runs on a full bucket, then waits its debt out.
        (c.taken === 0 && cost > room && level >= Math.min(cost, capacity));
      if (!fits) {
        const missing = shared ? (c.taken + cost - room) * n : c.taken + cost - room;
        const wait = Math.ceil((Math.min(missing, capacity) * 1000) / capacity);
        return { limit: "rate", retryAfterS: Math.max(1, Math.ceil(wait / 1000)) };
      }
      c.taken += cost;
    }
    c.pending += cost;
    return undefined;
  }

  /** Pushes what was taken, reads the totals back (one round trip); one flush at a time. */
  async flush(): Promise<void> {
    if (this.#flushing) return;
    this.#flushing = true;
    const now = this.#now();
    const today = Math.floor(now / DAY_MS);
    const scopes: [string, SharedCounter][] = [];
    for (const [scope, c] of this.#counters) {
      if (c.pending === 0 && now - c.lastUsed > WATCH_MS) {
        // Idle: read again from scratch when used again.
        c.synced = false;
        continue;
      }
      c.inFlight = c.pending;
      c.pending = 0;
      scopes.push([scope, c]);
    }
    const day = utcDay(now);
    const lastUsed = scopes
      .filter(([s]) => s.startsWith("key:"))
      .flatMap(([s, c]) => [s, c.lastUsed]);
    try {
      const answer = (await this.#store.run(
        FLUSH,
        [REPLICAS, LIMITS_LAST_USED, ...scopes.map(([s]) => limitCounter(s, day))],
        [
          this.#replica,
          DAY_COUNTER_TTL_MS,
          REPLICA_WINDOW_MS,
          scopes.length,
          ...scopes.map(([, c]) => c.inFlight),
          ...lastUsed,
        ],
      )) as number[];
      const at = this.#now();
      this.#replicas = Math.max(1, Number(answer[0]));
      scopes.forEach(([, c], i) => {
        const total = Number(answer[i + 1]);
        // What every replica took since the last flush; the first time, only this one's is known.
        const spent = c.synced && c.day === today ? total - c.total : c.inFlight;
        if (c.day === today) {
          c.total = total;
          c.synced = true;
        }
        c.tokens = this.#refilled(c, at, c.rate) - spent;
        c.at = at;
        // What was taken while the flush ran is not in `spent` yet.
        c.taken = c.pending;
        c.inFlight = 0;
      });
      if (this.#downLogged) this.#log.info("Limits counted through Redis again");
      this.#downLogged = false;
      this.#flushedAt = at;
    } catch (err) {
      const at = this.#now();
      for (const [, c] of scopes) {
        c.pending += c.inFlight;
        c.inFlight = 0;
        c.tokens = this.#refilled(c, at, c.rate / Math.max(1, this.#replicas)) - c.taken;
        c.at = at;
        c.taken = 0;
      }
      if (!this.#downLogged && !this.#shared(at)) {
        this.#downLogged = true;
        this.#log.warn("Limits cannot be counted through Redis: each replica counts alone", {
          replicas: this.#replicas,
          error: (err as Error).message,
        });
      }
    } finally {
      this.#flushing = false;
    }
  }

  /** The bucket's level refilled up to `now` at `capacity` units per second, holding `capacity`. */
  #refilled(c: SharedCounter, now: number, capacity: number): number {
    return Math.min(capacity, c.tokens + (Math.max(0, now - c.at) * capacity) / 1000);
  }

  usage(scope: string): ScopeUsage | undefined {
    const c = this.#counters.get(scope);
    return c === undefined ? undefined : this.#usageOf(c);
  }

  *entries(): Iterable<readonly [string, ScopeUsage]> {
    for (const [scope, c] of this.#counters) yield [scope, this.#usageOf(c)];
  }

  #usageOf(c: SharedCounter): ScopeUsage {
    return {
      day: utcDay(c.day * DAY_MS),
      unitsToday: c.total + c.pending + c.inFlight,
      lastUsed: c.lastUsed,
    };
  }

  /** Redis holds the counts: what a node wrote of its last run is not added again. */
  seed(_scope: string, _usage: ScopeUsage): void {}

  /** Forgets scopes idle for `idleMs` with nothing left to push. */
  prune(now: number, idleMs = 10 * 60_000): void {
    for (const [scope, c] of this.#counters)
      if (now - c.lastUsed > idleMs && c.pending === 0 && c.inFlight === 0)
        this.#counters.delete(scope);
  }

  /** Stops flushing, after one last flush of what was taken. */
  async close(): Promise<void> {
    clearInterval(this.#timer);
    await this.flush();
  }
}

function secondsToNextDay(now: number): number {
  return Math.max(1, Math.ceil(((Math.floor(now / DAY_MS) + 1) * DAY_MS - now) / 1000));
}
