import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import {
  CombinedKeyStore,
  defineModule,
  HostedAccess,
  hashKey,
  KeyFileError,
  MemoryLimitStore,
  MethodRegistry,
  method,
  parseKeyFile,
  parseKeyRegistry,
  type RegisteredMethod,
  r,
  readKeyRegistry,
  readUsageFile,
  StaticKeyStore,
  TokenBucket,
  updateKeyRegistry,
  WatchedKeyFile,
  writeUsageFile,
} from "../../src/index.js";

const dir = mkdtempSync(join(tmpdir(), "nodex-keys-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const silent = {
  trace() {},
  debug() {},
  info() {},
  warn() {},
  error() {},
  child() {
    return silent;
  },
  isLevelEnabled: () => false,
} as never;

describe("TokenBucket", () => {
  it("holds a second's worth, refills at its rate, and says how long to wait", () => {
    const b = new TokenBucket(100, 0);
    for (let i = 0; i < 10; i++) expect(b.take(10, 0)).toBe(0);
    expect(b.take(10, 0)).toBe(100);
    expect(b.take(10, 50)).toBe(50);
    expect(b.take(10, 100)).toBe(0);
    // Never more than a second's worth, however long it waited.
    expect(b.take(100, 60_000)).toBe(0);
    expect(b.take(1, 60_000)).toBeGreaterThan(0);
  });

  it("lets a request dearer than a second's worth run on a full bucket, then waits out the debt", () => {
    const b = new TokenBucket(1, 0);
    expect(b.take(10, 0)).toBe(0);
    expect(b.take(10, 0)).toBe(10_000);
    expect(b.take(10, 9_999)).toBeGreaterThan(0);
    expect(b.take(10, 10_000)).toBe(0);
  });

  it("always takes what costs nothing", () => {
    const b = new TokenBucket(1, 0);
    b.take(10, 0);
    expect(b.take(0, 0)).toBe(0);
  });
});

describe("MemoryLimitStore", () => {
  it("counts a daily quota per UTC day and frees it at midnight", () => {
    const s = new MemoryLimitStore();
    const day = Date.UTC(2026, 0, 1, 23, 59, 0);
    expect(s.take("k", 20, { daily: 30 }, day)).toBeUndefined();
    expect(s.take("k", 20, { daily: 30 }, day)).toEqual({ limit: "daily", retryAfterS: 60 });
    expect(s.take("k", 10, { daily: 30 }, day)).toBeUndefined();
    expect(s.usage("k")).toEqual({ day: "2026-01-01", unitsToday: 30, lastUsed: day });
    expect(s.take("k", 20, { daily: 30 }, day + 60_000)).toBeUndefined();
    expect(s.usage("k")?.unitsToday).toBe(20);
    // Scopes count apart.
    expect(s.take("other", 30, { daily: 30 }, day)).toBeUndefined();
  });

  it("refuses for the rate with the seconds until the bucket has enough", () => {
    const s = new MemoryLimitStore();
    expect(s.take("k", 10, { rate: 5 }, 0)).toBeUndefined();
    expect(s.take("k", 10, { rate: 5 }, 0)).toEqual({ limit: "rate", retryAfterS: 2 });
    // A refused request spends nothing.
    expect(s.usage("k")?.unitsToday).toBe(10);
  });

  it("starts from the usage seeded from the last run", () => {
    const s = new MemoryLimitStore();
    const now = Date.UTC(2026, 5, 1, 12);
    s.seed("k", { day: "2026-06-01", unitsToday: 25, lastUsed: now - 1000 });
    expect(s.take("k", 10, { daily: 30 }, now)?.limit).toBe("daily");
  });

  it("forgets idle counters that count nothing today, and keeps today's", () => {
    const s = new MemoryLimitStore();
    const day = Date.UTC(2026, 0, 1, 12);
    s.take("ip:1.1.1.1", 10, { rate: 10 }, day);
    s.take("ip:2.2.2.2", 10, { rate: 10 }, day + 3_600_000);
    s.take("key:k", 10, {}, day);
    s.prune(day + 3_600_000 + 1000);
    expect(s.usage("ip:1.1.1.1")?.unitsToday).toBe(10);
    s.prune(Date.UTC(2026, 0, 2, 0, 30));
    expect(s.usage("ip:1.1.1.1")).toBeUndefined();
    expect(s.usage("ip:2.2.2.2")).toBeUndefined();
    expect(s.usage("key:k")?.lastUsed).toBe(day);
  });

  it("writes and reads back the usage of key scopes only", () => {
    const s = new MemoryLimitStore();
    s.take("key:key_1", 10, {}, 5);
    s.take("ip:127.0.0.1", 10, {}, 5);
    const path = join(dir, "usage.json");
    writeUsageFile(path, s);
    expect([...readUsageFile(path)]).toEqual([
      ["key_1", { day: "1970-01-01", unitsToday: 10, lastUsed: 5 }],
    ]);
    expect(readUsageFile(join(dir, "none.json")).size).toBe(0);
  });
});

describe("key files", () => {
  it("checks every field of the registry, naming the entry", () => {
    const ok = {
      id: "key_1",
      name: "a",
      sha256: "ab".repeat(32),
      created: "2026-01-01T00:00:00.000Z",
    };
    expect(parseKeyRegistry(JSON.stringify({ version: 1, keys: [ok] }), "f").keys).toEqual([ok]);
    for (const [bad, why] of [
      ["{", "f is not valid JSON"],
      ["[]", "must hold a JSON object"],
      [JSON.stringify({ version: 2, keys: [] }), "version must be 1"],
      [JSON.stringify({ version: 1, keys: [{ ...ok, sha256: "x" }] }), "keys[0].sha256"],
      [JSON.stringify({ version: 1, keys: [ok, ok] }), "is used twice"],
      [JSON.stringify({ version: 1, keys: [{ ...ok, rate: -1 }] }), "keys[0].rate"],
      [JSON.stringify({ version: 1, keys: [{ ...ok, methods: ["a b"] }] }), "keys[0].methods"],
    ] as const) {
      expect(() => parseKeyRegistry(bad, "f")).toThrow(KeyFileError);
      expect(() => parseKeyRegistry(bad, "f")).toThrow(why);
    }
  });

  it("reads a plain key file, one key per line, and says which line is wrong without the key", () => {
    const reg = parseKeyFile("# keys\n\nabcdefgh-1\r\nabcdefgh-1\nxyzxyzxyz\n", "/k/keys.txt");
    expect(reg.keys.map((k) => k.sha256)).toEqual([hashKey("abcdefgh-1"), hashKey("xyzxyzxyz")]);
    expect(reg.keys[0]!.id).toBe(`file-${hashKey("abcdefgh-1").slice(0, 12)}`);
    let message = "";
    try {
      parseKeyFile("abcdefgh-1\nsecret!!\n", "/k/keys.txt");
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toBe("/k/keys.txt:2: an API key is 8-128 characters of A-Z, a-z, 0-9, _ and -");
  });

  it("takes over a lock its process left behind, and removes its own", async () => {
    const path = join(dir, "registry.json");
    const { spawnSync } = await import("node:child_process");
    // The pid of a process that has ended.
    const gone = spawnSync(process.execPath, ["-e", ""]).pid!;
    writeFileSync(`${path}.lock`, String(gone));
    updateKeyRegistry(path, (reg) => ({
      registry: {
        version: 1,
        keys: [...reg.keys, { id: "k1", name: "", sha256: "00".repeat(32), created: "" }],
      },
      result: undefined,
    }));
    expect(readKeyRegistry(path).keys.map((k) => k.id)).toEqual(["k1"]);
    expect(() => readFileSync(`${path}.lock`)).toThrow(/ENOENT/);
    expect(readFileSync(path, "utf8").endsWith("\n")).toBe(true);
  });

  it("follows a watched file and keeps the last good keys when a change is bad", async () => {
    const path = join(dir, "watched.json");
    const record = (id: string, key: string) => ({
      id,
      name: "",
      sha256: hashKey(key),
      created: "",
    });
    writeFileSync(path, JSON.stringify({ version: 1, keys: [record("a", "key-aaaaaaaa")] }));
    const warnings: string[] = [];
    const logger = { ...(silent as object), warn: (msg: string) => warnings.push(msg) } as never;
    const file = new WatchedKeyFile(path, { parse: parseKeyRegistry, logger, optional: false })
      .load()
      .watch();
    try {
      expect(file.find(hashKey("key-aaaaaaaa"))?.id).toBe("a");
      writeFileSync(path, JSON.stringify({ version: 1, keys: [record("b", "key-bbbbbbbb")] }));
      await poll(() => file.find(hashKey("key-bbbbbbbb")) !== undefined);
      expect(file.find(hashKey("key-aaaaaaaa"))).toBeUndefined();
      writeFileSync(path, "{ not json");
      await poll(() => warnings.length > 0);
      expect(file.find(hashKey("key-bbbbbbbb"))?.id).toBe("b");
    } finally {
      file.close();
    }
    expect(() =>
      new WatchedKeyFile(join(dir, "absent"), {
        parse: parseKeyFile,
        logger: silent,
        optional: false,
      }).load(),
    ).toThrow(/cannot read/);
  });
});

async function poll(ok: () => boolean): Promise<void> {
  const end = Date.now() + 10_000;
  while (!ok()) {
    if (Date.now() > end) throw new Error("timed out");
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe("HostedAccess", () => {
  const mod = defineModule("eth", {
    blockNumber: method({ params: [], result: r.quantity, handler: () => 1 }),
    chainId: method({ params: [], result: r.quantity, handler: () => 1 }),
  });
  const evm = defineModule("evm", {
    mine: method({ params: [], result: r.string, handler: () => "" }),
  });
  const reg = new MethodRegistry([mod, evm], {
    enabled: new Set(["eth", "evm"]),
    hostedOff: new Set(["evm"]),
  });
  const m = (name: string) => reg.lookup(name) as RegisteredMethod;
  const registry = {
    find: (sha: string) =>
      ({
        [hashKey("dev-key-0001")]: { id: "dev", name: "", sha256: "", created: "", allow: ["evm"] },
        [hashKey("old-key-0001")]: { id: "old", name: "", sha256: "", created: "", revoked: "x" },
        [hashKey("few-key-0001")]: {
          id: "few",
          name: "",
          sha256: "",
          created: "",
          methods: ["eth_chainId"],
        },
      })[sha],
    active: () => 2,
    close() {},
  };
  const access = new HostedAccess({
    keys: new CombinedKeyStore([new StaticKeyStore(["static-key-01"]), registry]),
    limits: new MemoryLimitStore(),
    weights: { eth_chainId: 3 },
  });

  it("tells missing, unknown and revoked keys apart, and knows the others", () => {
    expect(access.identify("", "1.2.3.4")).toMatchObject({ reason: "missing" });
    expect(access.identify("nope-nope-01", undefined)).toMatchObject({ reason: "unknown" });
    expect(access.identify("old-key-0001", undefined)).toMatchObject({ reason: "revoked" });
    expect(access.identify("static-key-01", undefined)).toMatchObject({ kind: "key" });
  });

  it("lifts hosted mode's switch for the keys allowed it, and keeps a key to its list", () => {
    const dev = access.guard(access.identify("dev-key-0001", undefined) as never);
    expect(dev.admit(m("evm_mine"))).toBeUndefined();
    const plain = access.guard(access.identify("static-key-01", undefined) as never);
    expect(plain.admit(m("evm_mine"))?.message).toContain("disabled in hosted mode");
    const few = access.guard(access.identify("few-key-0001", undefined) as never);
    expect(few.admit(m("eth_chainId"))).toBeUndefined();
    expect(few.admit(m("eth_blockNumber"))?.message).toContain("not allowed for this API key");
    expect(access.weight("eth_chainId")).toBe(3);
    expect(access.weight("eth_call")).toBe(26);
    expect(access.weight("nodex_unheardOf")).toBe(10);
  });
});
