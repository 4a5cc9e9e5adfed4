import { LRUCache } from "lru-cache";

/** Trie nodes kept in memory by default. */
export const DEFAULT_TRIE_NODE_CACHE = 50_000;

/**
 * Trie nodes recently read from disk, shared by every state of a node. Nodes are keyed by
 * their hash, so an entry can never go stale; only its size is bounded (least recently used
 * out first).
 */
export class NodeCache {
  /** Stands for "not on disk": the empty trie's root, for one, is looked up on every read. */
  static readonly MISSING: Uint8Array = new Uint8Array(0);
  readonly #entries: LRUCache<string, Uint8Array>;

  constructor(maxEntries = DEFAULT_TRIE_NODE_CACHE) {
    if (!Number.isSafeInteger(maxEntries) || maxEntries < 1)
      throw new RangeError(`the trie node cache must hold at least 1 node, got ${maxEntries}`);
    this.#entries = new LRUCache({ max: maxEntries });
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
}
