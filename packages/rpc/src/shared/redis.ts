import type { Logger } from "@nodex/types";
import { Redis, type RedisOptions } from "ioredis";
import { RPCError, RPCErrorCode } from "../errors.js";

/**
 * State the replicas of one endpoint share: one Redis, every key under the network's prefix
 * (`nodex:<network>:`), so that a Redis shared by mainnet and testnet replicas keeps them
 * apart. Every call fails at once with -32002 while Redis is unreachable (no queue, no wait
 * for a reconnection), and after `commandTimeoutMs` when Redis does not answer.
 */
export interface SharedStore {
  /** `nodex:<network>:`; every name below is under it. */
  readonly prefix: string;
  /** Whether the connection is up now (the last state the client saw). */
  connected(): boolean;
  get(name: string): Promise<string | null>;
  /** Sets `name`; with `ttlMs`, it expires that long after. */
  set(name: string, value: string, ttlMs?: number): Promise<void>;
  /** Sets `name` only when absent; `true` when it was set. */
  setIfAbsent(name: string, value: string, ttlMs: number): Promise<boolean>;
  /** Deletes the names; resolves with how many there were. */
  del(...names: string[]): Promise<number>;
  /**
   * Adds `by` to the counter `name` and answers the new value; a counter created by this call
   * expires `ttlMs` after (a fixed window), one that exists keeps its expiry.
   */
  incr(name: string, by: number, ttlMs: number): Promise<number>;
  /**
   * A token bucket of `capacity` tokens refilled at `refillPerSecond`, kept in Redis and timed
   * by Redis's clock (replicas' clocks do not matter): takes `cost` tokens when there are that
   * many. `retryAfterMs` says when there will be, when refused.
   */
  takeTokens(
    name: string,
    bucket: { capacity: number; refillPerSecond: number; cost?: number },
  ): Promise<{ allowed: boolean; remaining: number; retryAfterMs: number }>;
  /**
   * Runs a Lua script (loaded once, then run by its SHA): `keys` are names under the prefix,
   * `args` plain values. The script's answer as Redis gives it.
   */
  run(
    script: SharedScript,
    keys: readonly string[],
    args: readonly (string | number)[],
  ): Promise<unknown>;
  /** Publishes on the channel `name` (under the prefix); resolves with the receivers. */
  publish(name: string, message: string): Promise<number>;
  /**
   * Receives what is published on `name` (under the prefix), on a connection of its own that
   * subscribes again after each reconnection. Resolves with the way to stop.
   */
  subscribe(name: string, listener: (message: string) => void): Promise<() => Promise<void>>;
  /** Closes the connections. */
  close(): Promise<void>;
}

/** A Lua script for `SharedStore.run`: its text and how many of its arguments are keys. */
export interface SharedScript {
  readonly name: string;
  readonly lua: string;
}

export interface RedisStoreOptions {
  /** `redis://` or `rediss://` (TLS); checked by `parseRedisUrl`. */
  readonly url: string;
  /** The network's name: keys go under `nodex:<network>:`. */
  readonly network: string;
  /** A command Redis does not answer within this fails (-32002). */
  readonly commandTimeoutMs?: number;
  /** How long `connect` waits for the first connection before the node starts without it. */
  readonly connectTimeoutMs?: number;
}

/** A `--redis` URL's reason for refusal, or `undefined` when it is one Redis can be reached at. */
export function redisUrlProblem(text: string): string | undefined {
  if (!text.includes("://"))
    return `${JSON.stringify(text)} has no scheme: write redis://${text} (rediss:// for TLS)`;
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return `${JSON.stringify(text)} is not a URL such as redis://127.0.0.1:6379 or rediss://user:password@host:6380/0`;
  }
  if (url.protocol !== "redis:" && url.protocol !== "rediss:")
    return `${JSON.stringify(url.protocol.replace(/:$/, ""))} is not a Redis scheme: use redis:// or rediss:// (TLS)`;
  if (url.hostname === "") return `${JSON.stringify(text)} names no host`;
  if (url.pathname !== "" && url.pathname !== "/" && !/^\/\d{1,5}$/.test(url.pathname))
    return `the path ${JSON.stringify(url.pathname)} is not a database number such as /0`;
  if (url.search !== "" || url.hash !== "")
    return `${JSON.stringify(text)} has a query or fragment, which the node does not read`;
  return undefined;
}

/** The URL without its user and password, for logs. */
export function redactRedisUrl(text: string): string {
  try {
    const url = new URL(text);
    url.username = "";
    url.password = "";
    return url.toString();
  } catch {
    return "(invalid URL)";
  }
}

const TOKEN_BUCKET: SharedScript = {
  name: "tokenBucket",
  // KEYS[1]: the bucket; ARGV: capacity, refill per second, cost. Redis's own clock.
  lua: `
local capacity = tonumber(ARGV[1])
local rate = tonumber(ARGV[2]) / 1000
local cost = tonumber(ARGV[3])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local state = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(state[1]) or capacity
local at = tonumber(state[2]) or now
if now > at then tokens = math.min(capacity, tokens + (now - at) * rate) end
local allowed = 0
local retry = 0
if tokens >= cost then
  tokens = tokens - cost
  allowed = 1
elseif rate > 0 then
  retry = math.ceil((cost - tokens) / rate)
else
  retry = -1
end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', tostring(now))
if rate > 0 then
  redis.call('PEXPIRE', KEYS[1], math.max(1, math.ceil((capacity - tokens) / rate)) + 1000)
end
return {allowed, math.floor(tokens), retry}
`,
};

const INCR_WITH_EXPIRY: SharedScript = {
  name: "incrWithExpiry",
  lua: `
local value = redis.call('INCRBY', KEYS[1], ARGV[1])
if redis.call('PTTL', KEYS[1]) < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return value
`,
};

/** The shared store on one Redis through `ioredis` (the one client of the node). */
export class RedisStore implements SharedStore {
  readonly prefix: string;
  readonly #redis: Redis;
  readonly #log: Logger;
  readonly #where: string;
  readonly #options: RedisOptions;
  readonly #url: string;
  readonly #connectTimeoutMs: number;
  #subscriber: Redis | undefined;
  readonly #listeners = new Map<string, Set<(message: string) => void>>();
  #up = false;
  /** Whether the loss of the connection was logged (once per outage). */
  #downLogged = false;
  #wasUp = false;
  #closing = false;
  readonly #loaded = new Set<string>();

  constructor(opts: RedisStoreOptions, logger: Logger) {
    const problem = redisUrlProblem(opts.url);
    if (problem !== undefined) throw new Error(`--redis: ${problem}`);
    this.prefix = `nodex:${opts.network}:`;
    this.#log = logger;
    this.#url = opts.url;
    this.#where = redactRedisUrl(opts.url);
    this.#connectTimeoutMs = opts.connectTimeoutMs ?? 2_000;
    this.#options = {
      // Fail at once while down: a request must not wait for a reconnection.
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      commandTimeout: opts.commandTimeoutMs ?? 2_000,
      connectTimeout: this.#connectTimeoutMs,
      // Reconnect for ever, at most every 2 s.
      retryStrategy: (times) => Math.min(100 * times, 2_000),
      lazyConnect: true,
    };
    this.#redis = new Redis(this.#url, this.#options);
    this.#redis.on("ready", () => {
      this.#up = true;
      if (this.#wasUp) this.#log.info("Redis reachable again", { redis: this.#where });
      else this.#log.info("Connected to Redis", { redis: this.#where, prefix: this.prefix });
      this.#wasUp = true;
      this.#downLogged = false;
    });
    const down = (err?: Error) => {
      this.#up = false;
      if (this.#closing || this.#downLogged) return;
      this.#downLogged = true;
      this.#log.warn("Redis unreachable: shared filters answer -32002 until it is back", {
        redis: this.#where,
        ...(err === undefined ? {} : { error: err.message }),
      });
    };
    this.#redis.on("error", (err: Error) => down(err));
    this.#redis.on("close", () => down());
  }

  /**
   * Connects, waiting at most the connect timeout: the node starts without Redis (its shared
   * parts answer -32002 until it is reachable; the client keeps trying).
   */
  async connect(): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const waited = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, this.#connectTimeoutMs);
    });
    // ioredis keeps trying after a failed first attempt; the node does not wait for it.
    await Promise.race([this.#redis.connect().catch(() => {}), waited]);
    clearTimeout(timer);
    if (!this.#up && !this.#downLogged)
      this.#log.warn("Redis not reachable at start-up: shared filters answer -32002 until it is", {
        redis: this.#where,
      });
  }

  connected(): boolean {
    return this.#up;
  }

  async get(name: string): Promise<string | null> {
    return this.#do(() => this.#redis.get(this.prefix + name));
  }

  async set(name: string, value: string, ttlMs?: number): Promise<void> {
    await this.#do(() =>
      ttlMs === undefined
        ? this.#redis.set(this.prefix + name, value)
        : this.#redis.set(this.prefix + name, value, "PX", ttlMs),
    );
  }

  async setIfAbsent(name: string, value: string, ttlMs: number): Promise<boolean> {
    const done = await this.#do(() =>
      this.#redis.set(this.prefix + name, value, "PX", ttlMs, "NX"),
    );
    return done === "OK";
  }

  async del(...names: string[]): Promise<number> {
    if (names.length === 0) return 0;
    return this.#do(() => this.#redis.del(...names.map((n) => this.prefix + n)));
  }

  async incr(name: string, by: number, ttlMs: number): Promise<number> {
    return Number(await this.run(INCR_WITH_EXPIRY, [name], [by, ttlMs]));
  }

  async takeTokens(
    name: string,
    bucket: { capacity: number; refillPerSecond: number; cost?: number },
  ): Promise<{ allowed: boolean; remaining: number; retryAfterMs: number }> {
    const [allowed, remaining, retry] = (await this.run(
      TOKEN_BUCKET,
      [name],
      [bucket.capacity, bucket.refillPerSecond, bucket.cost ?? 1],
    )) as [number, number, number];
    return { allowed: allowed === 1, remaining, retryAfterMs: retry };
  }

  async run(
    script: SharedScript,
    keys: readonly string[],
    args: readonly (string | number)[],
  ): Promise<unknown> {
    const redis = this.#redis as unknown as Record<
      string,
      (...a: (string | number)[]) => Promise<unknown>
    >;
    if (!this.#loaded.has(script.name)) {
      // defineCommand: EVALSHA, and EVAL once when Redis does not know the script (a restart).
      this.#redis.defineCommand(script.name, { lua: script.lua });
      this.#loaded.add(script.name);
    }
    return this.#do(() =>
      redis[script.name]!.call(
        this.#redis,
        keys.length,
        ...keys.map((k) => this.prefix + k),
        ...args,
      ),
    );
  }

  async publish(name: string, message: string): Promise<number> {
    return this.#do(() => this.#redis.publish(this.prefix + name, message));
  }

  async subscribe(name: string, listener: (message: string) => void): Promise<() => Promise<void>> {
    const channel = this.prefix + name;
    if (this.#subscriber === undefined) {
      // A connection of its own (a subscribed connection takes no other command), which
      // queues its SUBSCRIBE while down and subscribes again after each reconnection.
      const sub = new Redis(this.#url, { ...this.#options, enableOfflineQueue: true });
      sub.on("error", () => {});
      sub.on("message", (ch: string, message: string) => {
        for (const l of this.#listeners.get(ch) ?? []) l(message);
      });
      this.#subscriber = sub;
      await sub.connect().catch(() => {});
    }
    const sub = this.#subscriber;
    let set = this.#listeners.get(channel);
    if (set === undefined) {
      set = new Set();
      this.#listeners.set(channel, set);
      try {
        await this.#do(() => sub.subscribe(channel));
      } catch (err) {
        // Not subscribed: a later call tries again (once subscribed, reconnections keep it).
        this.#listeners.delete(channel);
        throw err;
      }
    }
    set.add(listener);
    return async () => {
      const current = this.#listeners.get(channel);
      if (current === undefined || !current.delete(listener) || current.size > 0) return;
      this.#listeners.delete(channel);
      await sub.unsubscribe(channel).catch(() => {});
    };
  }

  async close(): Promise<void> {
    this.#closing = true;
    await Promise.all(
      [this.#redis, this.#subscriber].map((r) =>
        r === undefined ? undefined : r.quit().catch(() => r.disconnect()),
      ),
    );
  }

  async #do<T>(command: () => Promise<T>): Promise<T> {
    try {
      return await command();
    } catch (err) {
      throw unavailable(err, this.#where);
    }
  }
}

/**
 * What a client is told when Redis cannot answer: -32002, with what failed. A command Redis
 * refused for what it is (a script's error) stays as it is: a fault of the node, not an outage.
 */
export function unavailable(err: unknown, where: string): Error {
  if (err instanceof RPCError) return err;
  const text = err instanceof Error ? err.message : String(err);
  // An error of a script or a command itself is the node's (-32603, logged), not an outage.
  if (
    err instanceof Error &&
    err.name === "ReplyError" &&
    !/^(LOADING|BUSY|MASTERDOWN|READONLY|OOM|NOAUTH|WRONGPASS|NOPERM|CLUSTERDOWN)/.test(text)
  )
    return err;
  const reason =
    /writeable|Connection is closed|max retries|ECONNREFUSED|ECONNRESET|ENOTFOUND|EHOSTUNREACH|EPIPE/i.test(
      text,
    )
      ? "is not reachable"
      : /timed? ?out/i.test(text)
        ? "is not answering"
        : `failed (${text})`;
  return new RPCError(
    RPCErrorCode.RESOURCE_UNAVAILABLE,
    `shared state unavailable: Redis at ${where} ${reason}; try again once it is back`,
  );
}
