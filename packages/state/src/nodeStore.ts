import type { BatchDBOp, DB } from "@ethereumjs/util";
import { bytesToUnprefixedHex, equalBytes, hexToBytes } from "@nodex/types";
import { Bucket } from "./db/buckets.js";
import type { Database, WriteOp } from "./db/database.js";
import type { ForkEntries, ForkFetcher } from "./fork/forkTypes.js";
import type { MissingNodeError } from "./missingNode.js";
import { NodeCache } from "./nodeCache.js";
import type { TrieKind } from "./nodeRefs.js";
import { forEachNodeRef, hashPrefix } from "./nodeRefs.js";

export interface NodeStoreOptions {
  /** The fork source reads go through when a node or code is not in the database. */
  readonly fork?: ForkFetcher;
}

/**
 * The trie's view of the database. Writes wait in memory until the caller takes them into the
 * atomic batch of a block (`takeWrites`), so a crash never leaves half a block's state on disk.
 * Nodes are never deleted here: pruning old state is a separate, explicit step.
 */
export class NodeStore implements DB<string, string | Uint8Array> {
  readonly #db: Database;
  readonly #cache: NodeCache | undefined;
  #pending = new Map<string, Uint8Array>();
  #inFlight = new Map<string, Uint8Array>();
  readonly #fork: ForkFetcher | undefined;

  /**
   * `cache`, shared by the stores of one node, keeps nodes read from disk. With `fork`, a
   * node or code that a state opened on this store needs and the database does not hold is
   * fetched from the fork's upstream (`ForkSource`), checked, written and read on; without it
   * nothing changes (the fork's paths run only where a node is missing).
   */
  constructor(db: Database, cache?: NodeCache, options: NodeStoreOptions = {}) {
    this.#db = db;
    this.#cache = cache;
    if (options.fork !== undefined && options.fork.db !== db)
      throw new RangeError("a fork source attached to a store must write to the store's database");
    this.#fork = options.fork;
  }

  /** The fork source reads go through, if any. */
  get fork(): ForkFetcher | undefined {
    return this.#fork;
  }

  /**
   * Fetches from the fork source the nodes that a walk for `key` (an address, or a slot of
   * `owner`'s storage) met missing (`MissingNodeError`), and makes the store see them. Throws
   * what the source throws (`STATE_FORK_*`, the upstream's errors).
   */
  async fillFromFork(
    owner: Uint8Array | undefined,
    key: Uint8Array | undefined,
    missing: MissingNodeError,
  ): Promise<void> {
    this.#learn(await this.#forkOrThrow().fill(owner, key, missing));
  }

  /** Fetches the fork block's root node; false when `root` is not the fork's or no fork is attached. */
  async fillForkRoot(root: Uint8Array): Promise<boolean> {
    if (this.#fork === undefined || !equalBytes(root, this.#fork.stateRoot)) return false;
    this.#learn(await this.#fork.fetchRoot());
    return true;
  }

  /**
   * Makes the code of hash `codeHash`, which `address` names, readable: nothing when the
   * database holds it, or no fork is attached; otherwise fetched from the fork's upstream.
   */
  async ensureCode(address: Uint8Array, codeHash: Uint8Array): Promise<void> {
    if (this.#fork === undefined) return;
    if ((await this.get(`63${bytesToUnprefixedHex(codeHash)}`)) !== undefined) return;
    this.#learn(await this.#fork.fetchCode(address, codeHash));
  }

  #forkOrThrow(): ForkFetcher {
    if (this.#fork === undefined) throw new Error("no fork source is attached to the store");
    return this.#fork;
  }

  /**
   * Entries the fork source wrote to the database: the cache, which may remember them as
   * missing, gets them.
   */
  #learn(entries: ForkEntries): void {
    if (this.#cache === undefined) return;
    for (const [key, value] of entries) this.#cache.set(key, value);
  }

  async get(hexKey: string): Promise<Uint8Array | undefined> {
    const key = unprefixed(hexKey);
    const local = this.#pending.get(key) ?? this.#inFlight.get(key) ?? this.#cache?.get(key);
    if (local !== undefined) return local === NodeCache.MISSING ? undefined : local;
    const stored = await this.#db.get(Bucket.TRIE, hexToBytes(key));
    // Absence is cached too: a node written later replaces the entry in confirmWrites().
    this.#cache?.set(key, stored ?? NodeCache.MISSING);
    return stored;
  }

  async put(key: string, value: string | Uint8Array): Promise<void> {
    this.#pending.set(unprefixed(key), typeof value === "string" ? hexToBytes(value) : value);
  }

  async del(_key: string): Promise<void> {}

  async batch(ops: BatchDBOp<string, string | Uint8Array>[]): Promise<void> {
    for (const op of ops) if (op.type === "put") await this.put(op.key, op.value as Uint8Array);
  }

  shallowCopy(): DB<string, string | Uint8Array> {
    return this;
  }

  async open(): Promise<void> {}

  /**
   * The nodes written since the last call, as database operations. They stay readable from
   * memory until `confirmWrites()` says the batch holding them is on disk. With `roots` (the
   * state roots the batch commits), nodes none of them reaches are left out: the trie writes a
   * node for every intermediate version of a path within a block, and only the last one counts.
   */
  takeWrites(roots?: readonly Uint8Array[]): WriteOp[] {
    const keep = roots === undefined ? undefined : this.#reachable(roots);
    const ops: WriteOp[] = [];
    for (const [key, value] of this.#pending) {
      // Trie nodes are keyed by their hash; code (a prefix byte and its hash) is always kept.
      if (keep !== undefined && key.length === 64 && !keep.has(key)) continue;
      ops.push({ type: "put", bucket: Bucket.TRIE, key: hexToBytes(key), value });
      this.#inFlight.set(key, value);
    }
    this.#pending = new Map();
    return ops;
  }

  /** The waiting nodes that `roots` reach through waiting nodes (storage tries included). */
  #reachable(roots: readonly Uint8Array[]): Set<string> {
    const waiting = this.#pending;
    const prefixes = new Set<number>();
    for (const key of waiting.keys()) if (key.length === 64) prefixes.add(hashPrefix(key));
    const reached = new Set<string>();
    const stack: { key: string; kind: TrieKind }[] = roots.map((root) => ({
      key: bytesToUnprefixedHex(root),
      kind: "account",
    }));
    // Only waiting nodes are followed: one on disk already (or the empty trie) has everything
    // below it on disk too.
    const push = (key: string, kind: TrieKind) => {
      if (!reached.has(key) && waiting.has(key)) stack.push({ key, kind });
    };
    while (stack.length > 0) {
      const { key, kind } = stack.pop()!;
      if (reached.has(key)) continue;
      const bytes = waiting.get(key);
      if (bytes === undefined) continue;
      reached.add(key);
      forEachNodeRef(bytes, kind, push, prefixes);
    }
    return reached;
  }

  /** The batch from the last `takeWrites()` is on disk; its nodes move to the shared cache. */
  confirmWrites(): void {
    if (this.#cache !== undefined)
      for (const [key, value] of this.#inFlight) this.#cache.set(key, value);
    this.#inFlight = new Map();
  }

  /** Nodes waiting to be written. */
  get pendingCount(): number {
    return this.#pending.size;
  }
}

/**
 * A key as the trie gives it, lowercase hex without `0x` (\`bytesToUnprefixedHex\`); a `0x`
 * prefix is dropped so a key reads the same either way.
 */
function unprefixed(key: string): string {
  return key.charCodeAt(1) === 120 && key.charCodeAt(0) === 48 ? key.slice(2) : key;
}
