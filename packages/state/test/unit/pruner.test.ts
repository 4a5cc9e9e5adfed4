import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Address, bytesToHex, hexToBytes } from "@nodex/types";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  Bucket,
  Database,
  NodeCache,
  NodeStore,
  pruneTrieNodes,
  WorldState,
} from "../../src/index.js";

const address = (n: number) => hexToBytes(`0x${n.toString(16).padStart(40, "0")}`) as Address;
const slot = (n: number) => {
  const s = new Uint8Array(32);
  s[31] = n;
  return s;
};
const CODE = new Uint8Array([0x60, 0x01, 0x60, 0x00, 0x55, 0x00]);

let dir: string;
let db: Database;
beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), "nodex-prune-"));
  db = await Database.open(join(dir, "db"));
});
afterEach(async () => {
  await db.close().catch(() => {});
  rmSync(dir, { recursive: true, force: true });
});

async function trieKeys(): Promise<string[]> {
  const keys: string[] = [];
  for await (const key of db.keys(Bucket.TRIE)) keys.push(bytesToHex(key));
  return keys;
}

/** Twenty accounts, each a contract with storage; then `rounds` blocks changing some of them. */
async function buildHistory(rounds: number): Promise<Uint8Array[]> {
  const store = new NodeStore(db);
  const state = await WorldState.open(store);
  const roots: Uint8Array[] = [];
  for (let i = 1; i <= 20; i++) {
    await state.setBalance(address(i), BigInt(i) * 1000n);
    await state.setCode(address(i), CODE);
    for (let s = 0; s < 5; s++)
      await state.setStorage(address(i), slot(s), Uint8Array.of(i, s + 1));
  }
  for (let round = 0; round <= rounds; round++) {
    if (round > 0) {
      const who = address((round % 20) + 1);
      await state.setBalance(who, BigInt(round));
      await state.setStorage(who, slot(round % 5), Uint8Array.of(0xee, round));
    }
    roots.push(await state.commit());
    await db.write(store.takeWrites());
    store.confirmWrites();
  }
  return roots;
}

/** Reads every account, storage slot and code of a state, so any missing node shows. */
async function readAll(root: Uint8Array): Promise<string[]> {
  const state = await WorldState.open(new NodeStore(db), root);
  const out: string[] = [];
  for (let i = 1; i <= 20; i++) {
    out.push(String(await state.getBalance(address(i))));
    out.push(bytesToHex(await state.getCode(address(i))));
    for (let s = 0; s < 5; s++) out.push(bytesToHex(await state.getStorage(address(i), slot(s))));
  }
  return out;
}

describe("pruneTrieNodes", () => {
  it("keeps every node of the kept states and deletes the rest", async () => {
    const roots = await buildHistory(12);
    const kept = roots.slice(-3);
    const before = await Promise.all(kept.map(readAll));
    const keysBefore = (await trieKeys()).length;

    const result = await pruneTrieNodes(db, kept);

    expect(result.deleted).toBeGreaterThan(0);
    expect((await trieKeys()).length).toBe(keysBefore - result.deleted);
    // Every kept state reads the same, down to each storage slot and each code.
    expect(await Promise.all(kept.map(readAll))).toEqual(before);
    // Old roots are gone.
    await expect(WorldState.open(new NodeStore(db), roots[0])).rejects.toThrow(
      /not in the database/,
    );
    // A second run finds nothing more to delete, and the live count is exact.
    const again = await pruneTrieNodes(db, kept);
    expect(again).toEqual({ live: result.live, deleted: 0 });
  });

  it("keeps contract code, shared by old and new states", async () => {
    const roots = await buildHistory(3);
    await pruneTrieNodes(db, [roots[3]!]);
    const codeKeys = (await trieKeys()).filter((k) => k.length === 2 + 33 * 2);
    expect(codeKeys.length).toBe(1);
  });

  it("keeps every state whose root is kept; deletes only the nodes no root reaches", async () => {
    // Nodes written for intermediate tries within a block reach no root: they go too.
    const roots = await buildHistory(4);
    const before = await Promise.all(roots.map(readAll));
    const { live } = await pruneTrieNodes(db, roots);
    expect(await Promise.all(roots.map(readAll))).toEqual(before);
    expect((await trieKeys()).filter((k) => k.length === 2 + 32 * 2).length).toBe(live);
  });

  it("empties the shared cache when it deleted nodes", async () => {
    const roots = await buildHistory(3);
    const cache = new NodeCache();
    const state = await WorldState.open(new NodeStore(db, cache), roots[0]);
    await state.getBalance(address(1));
    expect(cache.size).toBeGreaterThan(0);
    await pruneTrieNodes(db, [roots[3]!], cache);
    expect(cache.size).toBe(0);
  });

  it("is not needed for the nodes of a block's intermediate tries: takeWrites(roots) leaves them out", async () => {
    const build = async (store: NodeStore) => {
      const state = await WorldState.open(store);
      for (let i = 1; i <= 20; i++) {
        await state.setBalance(address(i), BigInt(i));
        await state.setCode(address(i), CODE);
        for (let s = 0; s < 5; s++)
          await state.setStorage(address(i), slot(s), Uint8Array.of(i, s));
      }
      return state.commit();
    };
    const all = new NodeStore(db);
    const root = await build(all);
    const everything = all.takeWrites().length;
    const filtered = new NodeStore(db);
    expect(await build(filtered)).toEqual(root);
    const ops = filtered.takeWrites([root]);
    expect(ops.length).toBeLessThan(everything);
    await db.write(ops);
    filtered.confirmWrites();
    // Read back from disk alone: every account, slot and code is there.
    await db.close();
    db = await Database.open(join(dir, "db"));
    const reopened = await WorldState.open(new NodeStore(db), root);
    for (let i = 1; i <= 20; i++) {
      expect(await reopened.getBalance(address(i))).toBe(BigInt(i));
      expect(await reopened.getCode(address(i))).toEqual(CODE);
      for (let s = 0; s < 5; s++)
        expect(bytesToHex(await reopened.getStorage(address(i), slot(s)))).toBe(
          `0x${"00".repeat(30)}${i.toString(16).padStart(2, "0")}${s.toString(16).padStart(2, "0")}`,
        );
    }
    // And a sweep keeping this root finds nothing to delete.
    expect((await pruneTrieNodes(db, [root])).deleted).toBe(0);
  });
});
