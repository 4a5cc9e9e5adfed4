/**
 * Trie nodes recently read from disk, shared by every state of a node. Nodes are keyed by
 * their hash, so an entry can never go stale; only its size is bounded.
 */
export class NodeCache {
  /** Stands for "not on disk": the empty trie's root, for one, is looked up on every read. */
  static readonly MISSING: Uint8Array = new Uint8Array(0);
  readonly #entries = new Map<string, Uint8Array>();
  readonly #max: number;

  constructor(maxEntries = 50_000) {
    this.#max = maxEntries;
  }

  get(key: string): Uint8Array | undefined {
    const value = this.#entries.get(key);
    if (value !== undefined) {
      // most recently used last
      this.#entries.delete(key);
      this.#entries.set(key, value);
    }
    return value;
  }

  set(key: string, value: Uint8Array): void {
    if (this.#entries.size >= this.#max)
      this.#entries.delete(this.#entries.keys().next().value as string);
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
