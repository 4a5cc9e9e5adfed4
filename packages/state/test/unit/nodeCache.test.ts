import { keccak256, rlpEncode } from "@nodex/types";
import { describe, expect, it } from "vitest";
import { NodeCache, TRIE_NODE_CACHE_BYTES_PER_NODE, trieNodeCost } from "../../src/index.js";
import { listItemCount } from "../../src/nodeRefs.js";

describe("NodeCache", () => {
  it("keeps the most recently used entries within its bound", () => {
    const cache = new NodeCache(2);
    cache.set("a", new Uint8Array([1]));
    cache.set("b", new Uint8Array([2]));
    expect(cache.get("a")).toEqual(new Uint8Array([1])); // a is now the most recent
    cache.set("c", new Uint8Array([3])); // evicts b
    expect(cache.get("b")).toBeUndefined();
    expect(cache.get("a")).toEqual(new Uint8Array([1]));
    expect(cache.get("c")).toEqual(new Uint8Array([3]));
    expect(cache.size).toBe(2);
  });
});

describe("NodeCache's bound in bytes", () => {
  /** A branch node of 16 hashes (532 bytes), distinct for each `seed`. */
  function branch(seed: number): Uint8Array {
    const items: Uint8Array[] = [];
    for (let i = 0; i < 16; i++) items.push(keccak256(Uint8Array.of(seed >> 8, seed, i)));
    items.push(new Uint8Array(0));
    return rlpEncode(items);
  }

  it("counts a node's items from its encoding", () => {
    expect(listItemCount(branch(1))).toBe(17);
    expect(listItemCount(rlpEncode([Uint8Array.of(0x20, 1), Uint8Array.of(7)]))).toBe(2);
    expect(listItemCount(Uint8Array.of(0x85, 1, 2, 3, 4, 5))).toBe(0);
    expect(listItemCount(new Uint8Array(0))).toBe(0);
    // A list whose header claims more than the bytes hold is not counted.
    expect(listItemCount(Uint8Array.of(0xc5, 0x01, 0x02))).toBe(0);
  });

  it("holds branch-heavy tries to the memory the count allows for", () => {
    const cache = new NodeCache(20_000);
    for (let i = 0; i < 20_000; i++) cache.set(`b${i}`, branch(i));
    const budget = 20_000 * TRIE_NODE_CACHE_BYTES_PER_NODE;
    expect(cache.bytes).toBeLessThanOrEqual(budget);
    expect(cache.size).toBe(Math.floor(budget / trieNodeCost(branch(0))));
    // The most recent are the ones kept.
    expect(cache.get("b19999")).toEqual(branch(19_999));
    expect(cache.get("b0")).toBeUndefined();
  });

  it("holds small nodes up to its count", () => {
    const cache = new NodeCache(1_000);
    for (let i = 0; i < 2_000; i++)
      cache.set(`l${i}`, rlpEncode([Uint8Array.of(0x20, i & 255), Uint8Array.of(1)]));
    expect(cache.size).toBe(1_000);
  });

  it("keeps even a one-node cache able to hold a full branch", () => {
    const cache = new NodeCache(1);
    cache.set("b", branch(3));
    expect(cache.get("b")).toEqual(branch(3));
  });
});
