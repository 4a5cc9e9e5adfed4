import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { Bucket, Database } from "../../../src/index.js";

const dirs: string[] = [];
const dbs: Database[] = [];
afterEach(async () => {
  for (const db of dbs.splice(0)) await db.close().catch(() => {});
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

async function open(): Promise<Database> {
  const dir = mkdtempSync(join(tmpdir(), "nodex-db-test-"));
  dirs.push(dir);
  const db = await Database.open(join(dir, "db"));
  dbs.push(db);
  return db;
}

async function collect(keys: AsyncGenerator<Uint8Array>): Promise<number[][]> {
  const out: number[][] = [];
  for await (const key of keys) out.push([...key]);
  return out;
}

describe("Database.keys and keyList", () => {
  it("lists a bucket's keys in order, without the bucket byte, within a range when given", async () => {
    const db = await open();
    const put = (bucket: Bucket, key: number[]) =>
      ({ type: "put", bucket, key: Uint8Array.from(key), value: new Uint8Array() }) as const;
    await db.write([
      put(Bucket.LOG_INDEX, [1, 5]),
      put(Bucket.LOG_INDEX, [1, 2]),
      put(Bucket.LOG_INDEX, [2, 0]),
      put(Bucket.LOG_INDEX, [0xff, 0xff]),
      put(Bucket.SENDERS, [1, 3]),
      put(Bucket.META, [1, 4]),
    ]);
    expect(await collect(db.keys(Bucket.LOG_INDEX))).toEqual([
      [1, 2],
      [1, 5],
      [2, 0],
      [0xff, 0xff],
    ]);
    const gte = Uint8Array.of(1, 3);
    const lt = Uint8Array.of(2, 0);
    expect(await collect(db.keys(Bucket.LOG_INDEX, { gte, lt }))).toEqual([[1, 5]]);
    expect(await collect(db.keys(Bucket.LOG_INDEX, { gte }))).toEqual([
      [1, 5],
      [2, 0],
      [0xff, 0xff],
    ]);
    expect(await collect(db.keys(Bucket.LOG_INDEX, { lt }))).toEqual([
      [1, 2],
      [1, 5],
    ]);
    expect(await collect(db.keys(Bucket.SENDERS, { gte: Uint8Array.of(1, 4) }))).toEqual([]);
    const list = (limit: number) =>
      db
        .keyList(Bucket.LOG_INDEX, { gte: Uint8Array.of(1), lt: Uint8Array.of(0xff), limit })
        .then((keys) => keys.map((key) => [...key]));
    expect(await list(10)).toEqual([
      [1, 2],
      [1, 5],
      [2, 0],
    ]);
    expect(await list(2)).toEqual([
      [1, 2],
      [1, 5],
    ]);
  });
});

describe("Database.write", () => {
  const put = (key: number, value: number) =>
    ({
      type: "put",
      bucket: Bucket.META,
      key: Uint8Array.of(key),
      value: Uint8Array.of(value),
    }) as const;
  const del = (key: number) =>
    ({ type: "del", bucket: Bucket.META, key: Uint8Array.of(key) }) as const;
  const read = async (db: Database, key: number) => {
    const value = await db.get(Bucket.META, Uint8Array.of(key));
    return value === undefined ? undefined : [...value];
  };

  it("makes a write readable as soon as it is issued, deletes included", async () => {
    const db = await open();
    await db.write([put(1, 10), put(2, 20)]);
    const writing = db.write([put(1, 11), del(2), put(3, 30)]);
    // Not awaited: the batch is still on its way to LevelDB.
    expect(await read(db, 1)).toEqual([11]);
    expect(await read(db, 2)).toBeUndefined();
    expect(await read(db, 3)).toEqual([30]);
    await writing;
    expect(await read(db, 1)).toEqual([11]);
    expect(await read(db, 2)).toBeUndefined();
    expect(await read(db, 3)).toEqual([30]);
  });

  it("lands writes in the order they were issued, and lists keys once they have landed", async () => {
    const dir = mkdtempSync(join(tmpdir(), "nodex-db-test-"));
    dirs.push(dir);
    let db = await Database.open(join(dir, "db"));
    const writes: Promise<void>[] = [];
    for (let i = 0; i < 50; i++) writes.push(db.write([put(7, i), put(100 + i, i)]));
    expect(await read(db, 7)).toEqual([49]);
    const keys = await collect(db.keys(Bucket.META));
    expect(keys).toHaveLength(51);
    await Promise.all(writes);
    await db.close();
    db = await Database.open(join(dir, "db"));
    dbs.push(db);
    expect(await read(db, 7)).toEqual([49]);
    expect(await read(db, 149)).toEqual([49]);
  });

  it("stores each operation's own key and value, short or long, as written", async () => {
    // Keys and short values cross to LevelDB through one staging buffer: one operation's bytes
    // must not show up in another's, nor a caller's array change.
    const dir = mkdtempSync(join(tmpdir(), "nodex-db-test-"));
    dirs.push(dir);
    let db = await Database.open(join(dir, "db"));
    const bytes = (length: number, seed: number) =>
      Uint8Array.from({ length }, (_, i) => (seed * 31 + i * 7) & 0xff);
    const ops = [0, 1, 31, 32, 33, 63, 64, 65, 200, 600].flatMap((valueLength, i) =>
      [1, 32, 40, 511, 512, 700].map(
        (keyLength, j) =>
          ({
            type: "put",
            bucket: Bucket.TRIE,
            key: bytes(keyLength, i * 10 + j + 1),
            value: bytes(valueLength, i * 10 + j + 100),
          }) as const,
      ),
    );
    const copies = ops.map((op) => ({ key: op.key.slice(), value: op.value.slice() }));
    await db.write(ops);
    const check = async () => {
      for (const { key, value } of copies) expect(await db.get(Bucket.TRIE, key)).toEqual(value);
    };
    for (const [i, op] of ops.entries()) expect(op).toMatchObject(copies[i]!);
    await check();
    await db.close();
    db = await Database.open(join(dir, "db"));
    dbs.push(db);
    await check();
    expect(await db.get(Bucket.TRIE, bytes(32, 9999))).toBeUndefined();
  });
});
