import { nullLogger } from "@nodex/types";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningRedis, startRedis } from "../../../../apps/node/test/e2e/helpers/services.js";
import { HostedAccess } from "../../src/access.js";
import { type ApiKeyRecord, hashKey } from "../../src/keys.js";
import {
  createSharedKey,
  KEY_RECORDS,
  readSharedKeys,
  revokeSharedKey,
  SHARED_KEYS_GRACE_MS,
  SharedKeyStore,
} from "../../src/shared/keys.js";
import { LIMITS_GRACE_MS, readSharedUsage, SharedLimitStore } from "../../src/shared/limits.js";
import { RedisStore } from "../../src/shared/redis.js";

// The key registry and the limit counters of replicas sharing a real Redis. Time is the tests'
// own (`now`), so that the grace periods and buckets do not depend on the machine's speed.
let redis: RunningRedis;
const stores: RedisStore[] = [];
let network = 0;

beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => {
  await Promise.all(stores.map((s) => s.close()));
  await redis?.stop();
});

async function store(name: string, url = redis.url): Promise<RedisStore> {
  const s = new RedisStore({ url, network: name, connectTimeoutMs: 500 }, nullLogger);
  stores.push(s);
  await s.connect();
  return s;
}

function record(id: string, key: string, extra: Partial<ApiKeyRecord> = {}): ApiKeyRecord {
  return { id, name: id, sha256: hashKey(key), created: new Date(0).toISOString(), ...extra };
}

describe("SharedKeyStore", () => {
  it("mirrors the registry in Redis: created keys are found, revoked ones marked, at each read", async () => {
    const name = `keys${network++}`;
    const s = await store(name);
    const mirror = await new SharedKeyStore(s, nullLogger).start();
    expect(mirror.unavailable()).toBeUndefined();
    expect(mirror.active()).toBe(0);
    expect(await createSharedKey(s, record("key_a", "alpha-key-01", { rate: 5 }))).toBe(true);
    expect(await createSharedKey(s, record("key_a", "other-key-01"))).toBe(false);
    await mirror.reload();
    expect(mirror.find(hashKey("alpha-key-01"))).toMatchObject({ id: "key_a", rate: 5 });
    expect(await revokeSharedKey(s, "key_a", "2026-01-01T00:00:00.000Z")).toBe("revoked");
    expect(await revokeSharedKey(s, "key_a", "2026-01-02T00:00:00.000Z")).toBe("already");
    expect(await revokeSharedKey(s, "key_nope", "2026-01-02T00:00:00.000Z")).toBe("unknown");
    await mirror.reload();
    expect(mirror.find(hashKey("alpha-key-01"))?.revoked).toBe("2026-01-01T00:00:00.000Z");
    expect(mirror.active()).toBe(0);
    // A record the node refuses: the last good keys stay.
    await s.run(
      { name: "hsetBad", lua: "return redis.call('HSET', KEYS[1], 'key_b', '{')" },
      [KEY_RECORDS],
      [],
    );
    await mirror.reload();
    expect(mirror.find(hashKey("alpha-key-01"))).toBeDefined();
    await expect(readSharedKeys(s)).rejects.toThrow(/key_b is not valid JSON/);
    mirror.close();
    // Another network's prefix sees none of it.
    expect(await readSharedKeys(await store(`keys${network++}`))).toEqual([]);
  });

  it("applies a change published by another writer without waiting for the next full read", async () => {
    const name = `keys${network++}`;
    const reader = await store(name);
    const writer = await store(name);
    // No full read but the first: only the message can bring the key.
    const mirror = await new SharedKeyStore(reader, nullLogger, { reloadMs: 3_600_000 }).start();
    await createSharedKey(writer, record("key_p", "pushed-key-01"));
    const deadline = Date.now() + 10_000;
    while (mirror.find(hashKey("pushed-key-01")) === undefined && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 10));
    expect(mirror.find(hashKey("pushed-key-01"))).toMatchObject({ id: "key_p" });
    mirror.close();
  });

  it("fails closed once the registry has not been read for the grace period, and serves again after a read", async () => {
    const name = `keys${network++}`;
    const s = await store(name);
    await createSharedKey(s, record("key_g", "grace-key-001"));
    let now = 5_000_000;
    const mirror = await new SharedKeyStore(s, nullLogger, { now: () => now }).start();
    mirror.close(); // no timer: reads happen when the test says
    const access = new HostedAccess({
      keys: mirror,
      limits: new SharedLimitStore(s, nullLogger),
      now: () => now,
    });
    expect(access.identify("grace-key-001", undefined)).toMatchObject({ kind: "key" });
    now += SHARED_KEYS_GRACE_MS;
    expect(access.identify("grace-key-001", undefined)).toMatchObject({ kind: "key" });
    now += 1;
    expect(access.identify("grace-key-001", undefined)).toMatchObject({
      reason: "unavailable",
      message: expect.stringContaining("API keys unavailable"),
    });
    // An unknown key is not told "unknown" either: the registry may hold it.
    expect(access.identify("other-key-0001", undefined)).toMatchObject({ reason: "unavailable" });
    await mirror.reload();
    expect(access.identify("grace-key-001", undefined)).toMatchObject({ kind: "key" });
  });

  it("is unavailable from the start when Redis cannot be reached", async () => {
    const dead = await store(`keys${network++}`, "redis://127.0.0.1:1");
    const mirror = await new SharedKeyStore(dead, nullLogger).start();
    expect(mirror.unavailable()).toMatch(/API keys unavailable/);
    mirror.close();
  });
});

describe("SharedLimitStore", () => {
  it("counts a key's rate across replicas: each takes its share of the one bucket between flushes", async () => {
    const name = `limits${network++}`;
    let now = 10_000_000;
    const a = new SharedLimitStore(await store(name), nullLogger, { now: () => now });
    const b = new SharedLimitStore(await store(name), nullLogger, { now: () => now });
    // Both register: two replicas.
    await a.flush();
    await b.flush();
    await a.flush();
    const limits = { rate: 100 };
    // Both have read the key's total once (a replica meeting a key first starts from a full
    // bucket: the documented bound).
    a.take("key:k", 0, limits, now);
    b.take("key:k", 0, limits, now);
    await a.flush();
    await b.flush();
    const admitted = (s: SharedLimitStore) => {
      let n = 0;
      while (s.take("key:k", 10, limits, now) === undefined) n++;
      return n;
    };
    expect(admitted(a)).toBe(5);
    expect(admitted(b)).toBe(5);
    await a.flush();
    await b.flush();
    await a.flush();
    // Together they took the bucket: nothing left until it refills.
    expect(a.take("key:k", 10, limits, now)).toMatchObject({ limit: "rate" });
    expect(b.take("key:k", 10, limits, now)).toMatchObject({ limit: "rate" });
    now += 1_000;
    await a.flush();
    await b.flush();
    expect(admitted(a) + admitted(b)).toBeGreaterThanOrEqual(8);
  });

  it("counts a daily quota across replicas, and shows the day's units for keys list", async () => {
    const name = `limits${network++}`;
    const now = Date.UTC(2026, 10, 29, 12);
    const s = await store(name);
    const a = new SharedLimitStore(s, nullLogger, { now: () => now });
    const b = new SharedLimitStore(await store(name), nullLogger, { now: () => now });
    const limits = { daily: 50 };
    expect(a.take("key:d", 30, limits, now)).toBeUndefined();
    await a.flush();
    expect(b.take("key:d", 1, limits, now)).toBeUndefined();
    await b.flush();
    expect(b.take("key:d", 20, limits, now)).toMatchObject({ limit: "daily" });
    expect(b.take("key:d", 19, limits, now)).toBeUndefined();
    await b.flush();
    const usage = await readSharedUsage(s, ["d", "unused"], now);
    expect(usage.get("d")).toEqual({ day: "2026-11-29", unitsToday: 50, lastUsed: now });
    expect(usage.get("unused")).toEqual({ day: "2026-11-29", unitsToday: 0, lastUsed: 0 });
  });

  it("counts alone with its share of the rate while Redis cannot be reached, and pushes what it took once it can", async () => {
    const name = `limits${network++}`;
    let now = 20_000_000;
    const good = await store(name);
    const a = new SharedLimitStore(good, nullLogger, { now: () => now });
    const b = new SharedLimitStore(await store(name), nullLogger, { now: () => now });
    await a.flush();
    await b.flush();
    await a.flush();
    await redis.down();
    try {
      now += LIMITS_GRACE_MS + 1_000;
      await a.flush();
      // Alone: half the rate of 100, a bucket of 50.
      let n = 0;
      while (a.take("ip:1.2.3.4", 10, { rate: 100 }, now) === undefined) n++;
      expect(n).toBe(5);
    } finally {
      await redis.up();
    }
    const deadline = Date.now() + 20_000;
    while (!good.connected() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    await a.flush();
    expect(a.usage("ip:1.2.3.4")).toMatchObject({ unitsToday: 50 });
    expect(b.take("ip:1.2.3.4", 0, {}, now)).toBeUndefined();
    await b.flush();
    expect(b.usage("ip:1.2.3.4")).toMatchObject({ unitsToday: 50 });
  });
});
