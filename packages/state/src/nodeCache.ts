import { LRUCache } from "lru-cache";
import { listItemCount } from "./nodeRefs.js";

/** Trie nodes kept in memory by default. */
export const DEFAULT_TRIE_NODE_CACHE = 50_000;

/**
 * The memory a cache of `n` nodes may take, estimated: 1,344 bytes a node (64 MiB at the
 * default), and at least 1 MiB. A branch of 16 hashes takes about 4.7 KB with its decoded form
 * by `trieNodeCost`, a leaf well under 1 KB, so the bound in bytes holds a cache of
 * branch-heavy tries to the memory the count was chosen for, where a count alone would let it
 * take three times as much.
 */
export const TRIE_NODE_CACHE_BYTES_PER_NODE = 1344;

/**
 * What a cached node costs the heap, estimated: the key (64 hex digits), the cache's entry, the
 * encoded bytes in their array, and the node as `decodeNode` keeps it beside them for as long
 * as they are cached (an array of items, each a byte array of its own, 184 bytes of objects).
 */
export function trieNodeCost(bytes: Uint8Array): number {
  return 360 + 2 * bytes.length + 192 * listItemCount(bytes);
}

/**
 * Trie nodes recently read from disk, shared by every state of a node. Nodes are keyed by
 * their hash, so an entry can never go stale; only its size is bounded (least recently used
 * out first): at most `maxEntries` nodes and `maxEntries` × `TRIE_NODE_CACHE_BYTES_PER_NODE`
 * bytes (at least 1 MiB) as `trieNodeCost` estimates them.
 */
export class NodeCache {
  /** Stands for "not on disk": the empty trie's root, for one, is looked up on every read. */
  static readonly MISSING: Uint8Array = new Uint8Array(0);
  readonly #entries: LRUCache<string, Uint8Array>;

  constructor(maxEntries = DEFAULT_TRIE_NODE_CACHE) {
    if (!Number.isSafeInteger(maxEntries) || maxEntries < 1)
      throw new RangeError(`the trie node cache must hold at least 1 node, got ${maxEntries}`);
    this.#entries = new LRUCache({
      max: maxEntries,
      maxSize: Math.max(maxEntries * TRIE_NODE_CACHE_BYTES_PER_NODE, 1 << 20),
      sizeCalculation: trieNodeCost,
    });
  }

  get(key: string): Uint8Array | undefined {
    return this.#entries.get(key);
  }

  set(key: string, value: Uint8Array): void {
    this.#entries.set(key, value);
  }

  /** Forgets every entry (after nodes were deleted from the database). */
  clear(): void {
    this.#entries.clear();
  }

  get size(): number {
    return this.#entries.size;
  }

  /** The estimated bytes the entries take (`trieNodeCost`). */
  get bytes(): number {
    return this.#entries.calculatedSize;
  }
}
