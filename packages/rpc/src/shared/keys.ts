import type { Logger } from "@nodex/types";
import { type ApiKeyRecord, KeyFileError, type KeyStore, parseKeyRegistry } from "../keys.js";
import type { SharedScript, SharedStore } from "./redis.js";

/**
 * The key registry in Redis, under the network's prefix: `keys:records` (a hash of key id to the
 * record's JSON, digests only, never changed once written) and `keys:revoked` (key id to the
 * time of revocation). A change is published on the channel `keys`.
 */
export const KEY_RECORDS = "keys:records";
export const KEY_REVOCATIONS = "keys:revoked";
export const KEY_CHANNEL = "keys";

/** How often every replica reads the whole registry again, besides what it is told. */
export const SHARED_KEYS_RELOAD_MS = 1_000;
/**
 * How long a replica serves keys on the registry it last read while Redis cannot be read: then
 * it refuses keyed requests (503, -32002) until a read succeeds again.
 */
export const SHARED_KEYS_GRACE_MS = 3_000;

const LOAD: SharedScript = {
  name: "keysLoad",
  lua: `return {redis.call('HGETALL', KEYS[1]), redis.call('HGETALL', KEYS[2])}`,
};

const CREATE: SharedScript = {
  name: "keysCreate",
  // KEYS: records, channel; ARGV: id, record. 0 when the id is taken.
  lua: `
if redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2]) == 0 then return 0 end
redis.call('PUBLISH', KEYS[2], ARGV[1])
return 1
`,
};

const REVOKE: SharedScript = {
  name: "keysRevoke",
  // KEYS: records, revocations, channel; ARGV: id, time. 'unknown', 'already' or 'revoked'.
  lua: `
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 then return 'unknown' end
if redis.call('HSETNX', KEYS[2], ARGV[1], ARGV[2]) == 0 then return 'already' end
redis.call('PUBLISH', KEYS[3], ARGV[1])
return 'revoked'
`,
};

function pairs(flat: unknown): Map<string, string> {
  const out = new Map<string, string>();
  if (!Array.isArray(flat)) return out;
  for (let i = 0; i + 1 < flat.length; i += 2) out.set(String(flat[i]), String(flat[i + 1]));
  return out;
}

/** Reads the registry from Redis, every record checked as a file's would be. */
export async function readSharedKeys(store: SharedStore): Promise<ApiKeyRecord[]> {
  const [records, revoked] = (await store.run(LOAD, [KEY_RECORDS, KEY_REVOCATIONS], [])) as [
    unknown,
    unknown,
  ];
  const revokedAt = pairs(revoked);
  const entries: unknown[] = [];
  for (const [id, json] of pairs(records)) {
    let record: unknown;
    try {
      record = JSON.parse(json);
    } catch {
      throw new KeyFileError(`Redis ${store.prefix}${KEY_RECORDS}: ${id} is not valid JSON`);
    }
    const at = revokedAt.get(id);
    entries.push(at === undefined ? record : { ...(record as object), revoked: at });
  }
  const where = `Redis ${store.prefix}${KEY_RECORDS}`;
  return [...parseKeyRegistry(JSON.stringify({ version: 1, keys: entries }), where).keys].sort(
    (a, b) => a.created.localeCompare(b.created) || a.id.localeCompare(b.id),
  );
}

/** Adds a key's record; `false` when its id is taken already. */
export async function createSharedKey(store: SharedStore, record: ApiKeyRecord): Promise<boolean> {
  const { revoked: _, ...kept } = record;
  const done = await store.run(
    CREATE,
    [KEY_RECORDS, KEY_CHANNEL],
    [record.id, JSON.stringify(kept)],
  );
  return Number(done) === 1;
}

/** Revokes a key for good. */
export async function revokeSharedKey(
  store: SharedStore,
  id: string,
  at: string,
): Promise<"unknown" | "already" | "revoked"> {
  return (await store.run(REVOKE, [KEY_RECORDS, KEY_REVOCATIONS, KEY_CHANNEL], [id, at])) as
    | "unknown"
    | "already"
    | "revoked";
}

/**
 * A replica's mirror of the registry in Redis: `find` answers from memory. Read again at once
 * when a change is published, and every `SHARED_KEYS_RELOAD_MS` in case a message was missed.
 * Fails closed: once no read has succeeded for `SHARED_KEYS_GRACE_MS`, `unavailable` says why
 * and `find` knows no key, until a read succeeds again.
 */
export class SharedKeyStore implements KeyStore {
  readonly #store: SharedStore;
  readonly #log: Logger;
  readonly #now: () => number;
  readonly #graceMs: number;
  readonly #reloadMs: number;
  #byDigest = new Map<string, ApiKeyRecord>();
  #active = 0;
  /** When the last read succeeded; 0 before the first. */
  #readAt = 0;
  #reading: Promise<void> | undefined;
  /** A change told while a read ran: read once more after it. */
  #again = false;
  #timer: NodeJS.Timeout | undefined;
  #unsubscribe: (() => Promise<void>) | undefined;
  #closed = false;
  #staleLogged = false;

  constructor(
    store: SharedStore,
    logger: Logger,
    opts: { now?: () => number; graceMs?: number; reloadMs?: number } = {},
  ) {
    this.#store = store;
    this.#log = logger;
    this.#now = opts.now ?? Date.now;
    this.#graceMs = opts.graceMs ?? SHARED_KEYS_GRACE_MS;
    this.#reloadMs = opts.reloadMs ?? SHARED_KEYS_RELOAD_MS;
  }

  /** Subscribes and reads once; until a read lands, the store is unavailable. */
  async start(): Promise<this> {
    // Waited for a moment only: while Redis is down, the reload every second stands in for it.
    const subscribed = this.#store
      .subscribe(KEY_CHANNEL, () => void this.reload())
      .then(
        (stop) => {
          if (this.#closed) void stop().catch(() => {});
          else this.#unsubscribe = stop;
        },
        () => {},
      );
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      subscribed,
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, 1_000);
      }),
    ]);
    clearTimeout(timer);
    await this.reload();
    this.#timer = setInterval(() => void this.reload(), this.#reloadMs);
    this.#timer.unref();
    return this;
  }

  /** Reads the registry again (one read at a time; a change told meanwhile reads once more). */
  reload(): Promise<void> {
    if (this.#reading !== undefined) {
      this.#again = true;
      return this.#reading;
    }
    this.#reading = (async () => {
      do {
        this.#again = false;
        await this.#readOnce();
      } while (this.#again && !this.#closed);
    })().finally(() => {
      this.#reading = undefined;
    });
    return this.#reading;
  }

  async #readOnce(): Promise<void> {
    let records: ApiKeyRecord[];
    try {
      records = await readSharedKeys(this.#store);
    } catch (err) {
      if (this.#closed) return;
      if (err instanceof KeyFileError) {
        // Redis answered, with a registry the node refuses: the last good keys stay.
        this.#readAt = this.#now();
        this.#log.warn("API keys in Redis not reloaded: keeping the keys read before", {
          reason: err.message,
        });
        return;
      }
      if (!this.#staleLogged && this.unavailable() !== undefined) {
        this.#staleLogged = true;
        this.#log.warn("API keys in Redis cannot be read: keyed requests are refused (503)", {
          error: (err as Error).message,
        });
      }
      return;
    }
    const byDigest = new Map<string, ApiKeyRecord>();
    for (const record of records) byDigest.set(record.sha256, record);
    const active = records.filter((r) => r.revoked === undefined).length;
    if (this.#staleLogged) this.#log.info("API keys in Redis read again", { active });
    this.#staleLogged = false;
    this.#byDigest = byDigest;
    this.#active = active;
    this.#readAt = this.#now();
  }

  find(sha256: string): ApiKeyRecord | undefined {
    return this.unavailable() === undefined ? this.#byDigest.get(sha256) : undefined;
  }

  active(): number {
    return this.#active;
  }

  records(): readonly ApiKeyRecord[] {
    return [...this.#byDigest.values()];
  }

  unavailable(): string | undefined {
    if (this.#readAt !== 0 && this.#now() - this.#readAt <= this.#graceMs) return undefined;
    return `API keys unavailable: the key registry in Redis has not been readable for more than ${this.#graceMs / 1000} s; try again once it is back`;
  }

  close(): void {
    this.#closed = true;
    clearInterval(this.#timer);
    void this.#unsubscribe?.().catch(() => {});
  }
}
