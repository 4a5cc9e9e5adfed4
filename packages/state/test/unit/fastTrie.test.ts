import { createMPT, MerklePatriciaTrie } from "@ethereumjs/mpt";
import { MapDB, ValueEncoding } from "@ethereumjs/util";
import { bytesToHex, keccak256 } from "@nodex/types";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { FastTrie } from "../../src/fastTrie.js";

type Op = { key: Uint8Array; value: Uint8Array };

/** Both tries, each over a database of its own, with the same options. */
function pair(hashed: boolean) {
  const opts = {
    useKeyHashing: hashed,
    useKeyHashingFunction: keccak256,
    valueEncoding: ValueEncoding.Bytes,
  };
  const fastDb = new MapDB<string, Uint8Array>();
  return {
    library: new MerklePatriciaTrie({ ...opts, db: new MapDB<string, Uint8Array>() }),
    fast: new FastTrie({ ...opts, db: fastDb }),
    fastDb,
    opts,
  };
}

/** The root of a trie built afresh, writes only, from `entries`: one trie per set of keys and values. */
async function canonicalRoot(entries: Map<string, Op>, opts: ReturnType<typeof pair>["opts"]) {
  const trie = new MerklePatriciaTrie({ ...opts, db: new MapDB<string, Uint8Array>() });
  for (const { key, value } of entries.values()) await trie.put(key, value);
  return bytesToHex(trie.root());
}

/**
 * Applies the ops (an empty value deletes) to a `FastTrie`, checking after each the value it
 * reads, and every `every` ops and at the end its root against a trie built afresh from what
 * is left. With hashed keys, the library's trie takes the same ops and its root is checked
 * after each. (With keys that are prefixes of one another, the library's own deletions can
 * lose entries: deleting the empty key under a branch empties the trie.)
 */
async function replay(ops: readonly Op[], hashed: boolean, every = 1) {
  const tries = pair(hashed);
  const { library, fast, opts } = tries;
  const model = new Map<string, Op>();
  for (const [i, op] of ops.entries()) {
    await fast.put(op.key, op.value);
    if (op.value.length === 0) model.delete(bytesToHex(op.key));
    else model.set(bytesToHex(op.key), op);
    const got = await fast.get(op.key);
    if (
      (got === null ? "" : bytesToHex(got)) !== (op.value.length === 0 ? "" : bytesToHex(op.value))
    )
      throw new Error(`op ${i}: reads ${got === null ? "null" : bytesToHex(got)} after writing it`);
    if (hashed) {
      await library.put(op.key, op.value);
      if (bytesToHex(fast.root()) !== bytesToHex(library.root()))
        throw new Error(`roots part at op ${i} (${bytesToHex(op.key)} = ${bytesToHex(op.value)})`);
    }
    if (i % every === every - 1 || i === ops.length - 1) {
      const want = await canonicalRoot(model, opts);
      if (bytesToHex(fast.root()) !== want)
        throw new Error(`root after op ${i} is not the trie of what is left`);
    }
  }
  for (const op of ops) {
    const got = await fast.get(op.key);
    const want = model.get(bytesToHex(op.key))?.value;
    expect(got === null ? null : bytesToHex(got)).toBe(
      want === undefined ? null : bytesToHex(want),
    );
  }
  return tries;
}

/** A seeded sequence: `keys` keys, each op a write (or, one in `delEvery`, a deletion). */
function randomOps(seed: number, count: number, key: (r: () => number) => Uint8Array) {
  let s = seed >>> 0;
  const r = () => {
    s = (Math.imul(s ^ (s >>> 15), 0x2c1b3c6d) + 0x9e3779b9) >>> 0;
    return s / 2 ** 32;
  };
  const ops: Op[] = [];
  for (let i = 0; i < count; i++) {
    const value =
      r() < 0.3
        ? new Uint8Array()
        : Uint8Array.from({ length: 1 + Math.floor(r() * 40) }, () => Math.floor(r() * 256));
    ops.push({ key: key(r), value });
  }
  return ops;
}

/**
 * The tests that replay thousands of ops are bounded by their count; they take 0.4 to 1.6 s on a
 * quiet 2-core machine and can take ten times that on a busy one.
 */
const REPLAY_TIMEOUT_MS = 60_000;

describe("FastTrie", () => {
  it(
    "has the library's root after each of 4,000 writes and deletions of 400 hashed keys",
    async () => {
      const ops = randomOps(7, 4000, (r) =>
        Uint8Array.of(Math.floor(r() * 400) & 255, Math.floor(r() * 400) >> 8),
      );
      await replay(ops, true, 200);
    },
    REPLAY_TIMEOUT_MS,
  );

  it(
    "has the root of the same entries for keys of any length, prefixes of one another, and short (inlined) nodes",
    async () => {
      // Keys of 0 to 3 bytes from a small alphabet: branch values, extensions, nodes under 32 bytes.
      const ops = randomOps(11, 3000, (r) =>
        Uint8Array.from(
          { length: Math.floor(r() * 4) },
          () => [0x00, 0x01, 0x10, 0x11, 0xff][Math.floor(r() * 5)]!,
        ),
      );
      await replay(ops, false, 15);
    },
    REPLAY_TIMEOUT_MS,
  );

  it(
    "has the root of the same entries for any sequence of writes and deletions (property)",
    async () => {
      const key = fc.uint8Array({ minLength: 0, maxLength: 3, max: 3 });
      const value = fc.oneof(
        fc.constant(new Uint8Array()),
        fc.uint8Array({ minLength: 1, maxLength: 36 }),
      );
      await fc.assert(
        fc.asyncProperty(
          fc.array(fc.record({ key, value }), { maxLength: 60 }),
          fc.boolean(),
          async (ops, hashed) => {
            await replay(ops, hashed);
          },
        ),
        { numRuns: 300 },
      );
    },
    REPLAY_TIMEOUT_MS,
  );

  it(
    "writes every node it reaches: the library reads its trie back from the database alone",
    async () => {
      const ops = randomOps(3, 1500, (r) =>
        Uint8Array.of(Math.floor(r() * 256), Math.floor(r() * 3)),
      );
      const { fast, fastDb, opts } = await replay(ops, true, 500);
      const reader = await createMPT({ ...opts, db: fastDb, root: fast.root() });
      let nodes = 0;
      await reader.walkAllNodes(async () => {
        nodes++;
      });
      expect(nodes).toBeGreaterThan(100);
      for (const op of ops) {
        const [want, got] = [await fast.get(op.key), await reader.get(op.key)];
        expect(got === null ? null : bytesToHex(got)).toBe(want === null ? null : bytesToHex(want));
      }
    },
    REPLAY_TIMEOUT_MS,
  );

  it("writes nothing when a key gets the value it has (the state manager writes back what it read)", async () => {
    const { fast, fastDb } = pair(true);
    for (let n = 0; n < 50; n++) await fast.put(Uint8Array.of(n), Uint8Array.of(n, 1));
    const root = fast.root();
    let writes = 0;
    const put = fastDb.put.bind(fastDb);
    const batch = fastDb.batch.bind(fastDb);
    fastDb.put = async (...args) => {
      writes++;
      return put(...args);
    };
    fastDb.batch = async (ops) => {
      writes += ops.length;
      return batch(ops);
    };
    for (let n = 0; n < 50; n++) await fast.put(Uint8Array.of(n), Uint8Array.of(n, 1));
    expect(writes).toBe(0);
    expect(fast.root()).toEqual(root);
    await fast.put(Uint8Array.of(7), Uint8Array.of(7, 2));
    expect(writes).toBeGreaterThan(1);
    expect(fast.root()).not.toEqual(root);
  });

  it("deletes to the empty trie and ignores a deletion of an absent key", async () => {
    const { fast, library } = pair(true);
    const keys = [1, 2, 3, 4, 5].map((n) => Uint8Array.of(n));
    for (const k of keys) await fast.put(k, Uint8Array.of(9, 9));
    const full = fast.root();
    await fast.del(Uint8Array.of(77));
    expect(fast.root()).toEqual(full);
    for (const k of keys) await fast.del(k);
    expect(fast.root()).toEqual(library.EMPTY_TRIE_ROOT);
    expect(await fast.get(keys[0]!)).toBeNull();
  });

  it("keeps the library's checkpoints: a reverted write is gone, a committed one stays", async () => {
    const { fast } = pair(true);
    await fast.put(Uint8Array.of(1), Uint8Array.of(1));
    const before = fast.root();
    fast.checkpoint();
    await fast.put(Uint8Array.of(2), Uint8Array.of(2));
    await fast.revert();
    expect(fast.root()).toEqual(before);
    expect(await fast.get(Uint8Array.of(2))).toBeNull();
    fast.checkpoint();
    await fast.put(Uint8Array.of(3), Uint8Array.of(3));
    await fast.commit();
    expect(await fast.get(Uint8Array.of(3))).toEqual(Uint8Array.of(3));
  });

  it("copies into a FastTrie over the same database", async () => {
    const { fast } = pair(true);
    await fast.put(Uint8Array.of(1), Uint8Array.of(5));
    const copy = fast.shallowCopy(false);
    expect(copy).toBeInstanceOf(FastTrie);
    expect(await copy.get(Uint8Array.of(1))).toEqual(Uint8Array.of(5));
  });

  it("answers null for a key under a missing node, or throws when asked to, and refuses to write there", async () => {
    const { fast } = pair(true);
    fast.root(keccak256(Uint8Array.of(1, 2, 3)));
    expect(await fast.get(Uint8Array.of(1))).toBeNull();
    await expect(fast.get(Uint8Array.of(1), true)).rejects.toThrow("Missing node in DB");
    await expect(fast.put(Uint8Array.of(1), Uint8Array.of(1))).rejects.toThrow(
      "Missing node in DB",
    );
  });

  it("gives a copy of the value: changing it leaves the trie as it was", async () => {
    const { fast } = pair(true);
    await fast.put(Uint8Array.of(1), Uint8Array.of(5, 6));
    const value = (await fast.get(Uint8Array.of(1)))!;
    value[0] = 0;
    expect(await fast.get(Uint8Array.of(1))).toEqual(Uint8Array.of(5, 6));
  });
});
