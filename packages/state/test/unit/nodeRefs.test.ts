import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createMPT } from "@ethereumjs/mpt";
import { RLP } from "@ethereumjs/rlp";
import { type Address, bytesToUnprefixedHex, hexToBytes } from "@nodex/types";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { Database, EMPTY_TRIE_ROOT, NodeStore, WorldState } from "../../src/index.js";
import { forEachNodeRef, hashPrefix } from "../../src/nodeRefs.js";
import { type Decoded, type TrieKind, visitNode } from "../../src/pruner.js";

let dir: string;
let db: Database;
beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), "nodex-refs-"));
  db = await Database.open(join(dir, "db"));
});
afterEach(async () => {
  await db.close().catch(() => {});
  rmSync(dir, { recursive: true, force: true });
});

const EMPTY = `storage:${bytesToUnprefixedHex(EMPTY_TRIE_ROOT)}`;

function both(node: Uint8Array, kind: TrieKind): [string[], string[]] {
  const scanned: string[] = [];
  forEachNodeRef(node, kind, (key, k) => scanned.push(`${k}:${key}`));
  const decoded: string[] = [];
  visitNode(RLP.decode(node) as Decoded, kind, (hash, k) =>
    decoded.push(`${k}:${bytesToUnprefixedHex(hash)}`),
  );
  return [scanned, decoded];
}

describe("forEachNodeRef", () => {
  it("finds the references visitNode finds, in every node of a state with storage", async () => {
    const store = new NodeStore(db);
    const state = await WorldState.open(store);
    const address = (n: number) =>
      hexToBytes(`0x${(n * 7919).toString(16).padStart(40, "0")}`) as Address;
    for (let i = 1; i <= 300; i++) {
      await state.setBalance(address(i), BigInt(i) * 10n ** 18n);
      if (i % 10 === 0) {
        await state.setCode(address(i), Uint8Array.of(0x60, i, 0x00));
        for (let s = 0; s < 40; s++) {
          const slot = new Uint8Array(32);
          slot[31] = s;
          await state.setStorage(address(i), slot, Uint8Array.of(s + 1, i));
        }
      }
    }
    await state.commit();
    const ops = store.takeWrites();
    let refs = 0;
    const storage = new Set<string>();
    for (const op of ops) {
      if (op.type !== "put" || op.key.length !== 32) continue;
      for (const kind of ["account", "storage"] as const) {
        const [scanned, decoded] = both(op.value, kind);
        expect(scanned).toEqual(decoded);
        refs += scanned.length;
        if (kind === "account")
          for (const r of scanned) if (r.startsWith("storage:") && r !== EMPTY) storage.add(r);
      }
    }
    expect(refs).toBeGreaterThan(300);
    // The thirty contracts' storage roots.
    expect(storage.size).toBe(30);

    // Asked for some keys by their first four bytes: those, and no others, come out.
    let asked = 0;
    for (const op of ops) {
      if (op.type !== "put" || op.key.length !== 32) continue;
      for (const kind of ["account", "storage"] as const) {
        const all: string[] = [];
        forEachNodeRef(op.value, kind, (key) => all.push(key));
        const some = all.filter((_, i) => i % 3 === 0);
        const got: string[] = [];
        forEachNodeRef(op.value, kind, (key) => got.push(key), new Set(some.map(hashPrefix)));
        expect(got).toEqual(some);
        asked += some.length;
      }
    }
    expect(asked).toBeGreaterThan(100);
  });

  it("walks nodes embedded in their parent, as a trie of short keys and values has them", async () => {
    const trie = await createMPT({});
    for (let i = 0; i < 64; i++) await trie.put(Uint8Array.of(i >> 3, i & 7), Uint8Array.of(i));
    let embedded = 0;
    for await (const { node } of walk(trie)) {
      const bytes = node.serialize();
      const [scanned, decoded] = both(bytes, "storage");
      expect(scanned).toEqual(decoded);
      if ((RLP.decode(bytes) as Decoded[]).some((child) => Array.isArray(child))) embedded++;
    }
    expect(embedded).toBeGreaterThan(0);
  });

  it("gives nothing for bytes that are not a node, and does not throw", () => {
    for (const hex of ["", "80", "c0", "c180", "f8", "f90001", "e2a0", "c2c1"]) {
      const out: string[] = [];
      forEachNodeRef(hexToBytes(`0x${hex}`), "account", (k) => out.push(k));
      expect(out).toEqual([]);
    }
  });
});

/** Every node of `trie`, root first. */
async function* walk(trie: Awaited<ReturnType<typeof createMPT>>) {
  const found: { node: { serialize(): Uint8Array } }[] = [];
  await trie.walkAllNodes(async (node) => {
    found.push({ node });
  });
  yield* found;
}
