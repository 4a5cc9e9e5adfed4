import { RLP } from "@ethereumjs/rlp";
import { bytesToHex, equalBytes, keccak256 } from "@nodex/types";
import { Bucket } from "../db/buckets.js";
import type { Database, WriteOp } from "../db/database.js";
import { EMPTY_TRIE_ROOT } from "../emptyTrie.js";
import { StateError, StateErrorCode } from "../errors.js";
import type { TrieKind } from "../nodeRefs.js";
import { type Decoded, visitNode } from "../pruner.js";
import { forEachLeafAccount, walk } from "../stateDump.js";
import { codeKey, type StateItemRef } from "../stateItems.js";

/** What an item is: a node of the account trie, a node of a storage trie, or contract code. */
export type StateItemKind = "account" | "storage" | "code";

/** An item of a state to download; `code` is `kind === "code"`. */
export interface StateItem extends StateItemRef {
  readonly kind: StateItemKind;
}

/** What `StateSync.deliver` did with one answer. */
export type DeliverResult =
  | {
      readonly ok: true;
      /** Answers written (the stale ones included). */
      readonly written: number;
      /** Items not answered (`undefined` or past the end of the answers): back in the frontier. */
      readonly missing: number;
      /** Bytes written. */
      readonly bytes: number;
      /**
       * Answers written that were neither in flight nor in the frontier: items of a root the
       * sync was retargeted away from, or given twice. Their children are not queued (see
       * `StateSync`).
       */
      readonly stale: number;
    }
  | {
      readonly ok: false;
      /** Which item and what was wrong with its answer. */
      readonly reason: string;
      /** The index of that item. */
      readonly index: number;
    };

/** How far a sync is, for its current root. */
export interface StateSyncProgress {
  /** Account-trie leaves held: found by the walks from the root and in delivered nodes. */
  readonly accounts: number;
  /** Storage-trie leaves held, counted the same way (a trie shared by accounts once). */
  readonly slots: number;
  /** Trie nodes held: found by the walks and delivered. */
  readonly nodes: number;
  /** Contract codes held (one per code hash). */
  readonly codes: number;
  /** Bytes this sync has written (across retargets). */
  readonly bytes: number;
  /** Items to ask for (the frontier). */
  readonly pending: number;
  /** Items taken and not yet answered or released. */
  readonly inFlight: number;
}

const KINDS: ReadonlySet<string> = new Set<StateItemKind>(["account", "storage", "code"]);

/** The key of an item in the frontier, the in-flight map and the walked set. */
function itemKey(hash: Uint8Array, code: boolean): string {
  return code ? `c${bytesToHex(hash)}` : bytesToHex(hash);
}

/**
 * An item to queue. The hash is copied: read out of a node, it is a view of the answer's bytes
 * (perhaps of a whole message), which the frontier would otherwise keep alive.
 */
function makeItem(hash: Uint8Array, kind: StateItemKind): StateItem {
  return Object.freeze({ hash: hash.slice(), kind, code: kind === "code" });
}

/**
 * Downloads the state at `root` by hash, item by item, into `db`: a pull engine driven by a
 * caller that owns the peers. The caller `take`s items, asks a peer for them (`readStateItems`
 * answers such a request), and `deliver`s the answers; each answer is checked against its
 * item's hash, so a peer can withhold items but not alter them.
 *
 * Why the frontier is complete. The sync keeps, for its root, the set of walked nodes: nodes
 * held in the database whose children have been looked at (by a walk of what the database
 * holds, or when the node was delivered). A child looked at is walked (held, not walked yet),
 * skipped (walked, in the frontier or in flight) or put in the frontier (missing); an
 * account-trie leaf's storage root (unless empty) is a "storage" child and its code hash
 * (unless the empty code's) a "code" item, which has no children. So every node reachable from
 * the root is walked or lies below an item in the frontier or in flight, and when both are
 * empty (`done`) the whole state is in the database.
 *
 * A node the database holds is either part of a complete subtree (written by the chain) or was
 * written by this sync, whose children were queued when it was written; `open` walks what the
 * database holds from the root, so a restart resumes with nothing else persisted. A held child
 * is still walked rather than trusted, once per root: after a `retarget`, or on a database
 * left by a sync of another root, a held node may have been written by this sync for the old
 * root, its children queued in a frontier since dropped. A held subtree is read once; on a
 * fresh database every held child has been walked already, and costs nothing.
 *
 * The account trie and storage tries cannot share a node (an account leaf's value is an
 * account, about 70 bytes, a storage leaf's a 32-byte word at most), so a node's hash names its
 * kind; code is keyed apart (`c` + hash), since code may equal a trie node's bytes.
 *
 * `deliver` and `retarget` run one at a time, in call order; `take` and `release` are
 * synchronous. Memory: the frontier, the in-flight items and the walked set, keyed by hex
 * hash, hold about 150 bytes an entry.
 */
export class StateSync {
  readonly #db: Pick<Database, "get" | "write">;
  #root: Uint8Array;
  /** Items to ask for, by key. */
  #frontier = new Map<string, StateItem>();
  /** Most recent last, per kind; entries no longer in the frontier are skipped by `take`. */
  #stacks: Record<StateItemKind, StateItem[]> = { account: [], storage: [], code: [] };
  /** Items taken, by key. */
  #inFlight = new Map<string, StateItem>();
  /** Items a `deliver` is working on (they count as in flight). */
  #claimed = new Map<string, StateItem>();
  /** Keys of walked nodes and held codes, for the current root. */
  #walked = new Set<string>();
  #counts = { accounts: 0, slots: 0, nodes: 0, codes: 0 };
  #bytes = 0;
  /** The last `deliver` or `retarget` queued: the next runs after it. */
  #queue: Promise<unknown> = Promise.resolve();

  private constructor(db: Pick<Database, "get" | "write">, root: Uint8Array) {
    this.#db = db;
    this.#root = root;
  }

  /**
   * A sync of the state at `root` into `db`: walks what `db` holds from `root`, and every
   * missing item it meets is the frontier. Rejects with `STATE_SYNC_INVALID` for a root that
   * is not 32 bytes.
   */
  static async open(db: Pick<Database, "get" | "write">, root: Uint8Array): Promise<StateSync> {
    const sync = new StateSync(db, checkRoot(root));
    await sync.#walkFrom(sync.#root, "account");
    return sync;
  }

  get root(): Uint8Array {
    return this.#root;
  }

  /** The whole state at `root` is in the database: nothing to ask for, nothing in flight. */
  get done(): boolean {
    return this.#frontier.size === 0 && this.#inFlight.size === 0 && this.#claimed.size === 0;
  }

  /**
   * Up to `max` items to ask for, now in flight: account-trie nodes first, then storage-trie
   * nodes, then code, most recently queued first (deepest first, which keeps the frontier
   * small).
   */
  take(max: number): StateItem[] {
    if (!Number.isSafeInteger(max) || max < 0)
      throw invalid(`take(max): max must be a non-negative integer, got ${String(max)}`);
    const out: StateItem[] = [];
    for (const kind of ["account", "storage", "code"] as const) {
      const stack = this.#stacks[kind];
      while (out.length < max && stack.length > 0) {
        const item = stack.pop()!;
        const key = itemKey(item.hash, item.code);
        if (this.#frontier.get(key) !== item) continue;
        this.#frontier.delete(key);
        this.#inFlight.set(key, item);
        out.push(item);
      }
    }
    return out;
  }

  /** Gives items in flight back to the frontier unanswered (a peer failed or timed out). */
  release(items: readonly StateItem[]): void {
    checkItems(items, "release");
    for (const item of items) {
      const key = itemKey(item.hash, item.code);
      const held = this.#inFlight.get(key);
      if (held === undefined) continue;
      this.#inFlight.delete(key);
      this.#queueItem(key, held);
    }
  }

  /**
   * Takes a peer's answers: `answers[i]` is the bytes of `items[i]`, `undefined` when the peer
   * has not got it; a shorter array leaves the rest unanswered. An answer that does not hash to
   * its item's hash, or a trie node that does not decode as one, refuses the whole delivery
   * (`ok: false`, the reason naming the item): nothing of it is written and its items go back
   * to the frontier. Otherwise the answers are written in one batch and their children queued;
   * unanswered items go back to the frontier (`missing`), to ask another peer.
   *
   * Rejects with `STATE_SYNC_INVALID`, before anything changes, for arguments that are not
   * items and answers (more answers than items, an answer that is not a `Uint8Array`).
   */
  async deliver(
    items: readonly StateItem[],
    answers: readonly (Uint8Array | undefined)[],
  ): Promise<DeliverResult> {
    checkItems(items, "deliver");
    checkAnswers(items, answers);
    return this.#exclusive(() => this.#deliver(items, answers));
  }

  /**
   * Moves the sync to `root` (the pivot moved): the frontier is recomputed by a walk from it of
   * what the database holds. Items of the old root still in flight may be delivered later:
   * verified answers are written (they are content-addressed) and counted as `stale`. Rejects
   * with `STATE_SYNC_INVALID` for a root that is not 32 bytes.
   */
  async retarget(root: Uint8Array): Promise<void> {
    const next = checkRoot(root);
    return this.#exclusive(async () => {
      this.#root = next;
      this.#frontier = new Map();
      this.#stacks = { account: [], storage: [], code: [] };
      this.#inFlight = new Map();
      this.#walked = new Set();
      this.#counts = { accounts: 0, slots: 0, nodes: 0, codes: 0 };
      await this.#walkFrom(next, "account");
    });
  }

  progress(): StateSyncProgress {
    return {
      ...this.#counts,
      bytes: this.#bytes,
      pending: this.#frontier.size,
      inFlight: this.#inFlight.size + this.#claimed.size,
    };
  }

  #exclusive<T>(run: () => Promise<T>): Promise<T> {
    const result = this.#queue.then(run);
    this.#queue = result.catch(() => {});
    return result;
  }

  async #deliver(
    items: readonly StateItem[],
    answers: readonly (Uint8Array | undefined)[],
  ): Promise<DeliverResult> {
    // Claim the items of this root: from here they are this delivery's to finish.
    const claimed: (StateItem | undefined)[] = items.map((item) => {
      const key = itemKey(item.hash, item.code);
      const held = this.#inFlight.get(key) ?? this.#frontier.get(key);
      if (held === undefined || this.#claimed.has(key)) return undefined;
      this.#inFlight.delete(key);
      this.#frontier.delete(key);
      this.#claimed.set(key, held);
      return held;
    });
    try {
      for (let i = 0; i < answers.length; i++) {
        const answer = answers[i];
        if (answer === undefined) continue;
        const reason = answerError(claimed[i] ?? items[i]!, answer);
        if (reason !== undefined) {
          this.#unclaim(claimed);
          return { ok: false, reason: `item ${i} (${describe(items[i]!)}): ${reason}`, index: i };
        }
      }
      return await this.#accept(items, answers, claimed);
    } catch (err) {
      this.#unclaim(claimed);
      throw err;
    }
  }

  /** Writes verified answers, queues their children and gives the unanswered items back. */
  async #accept(
    items: readonly StateItem[],
    answers: readonly (Uint8Array | undefined)[],
    claimed: readonly (StateItem | undefined)[],
  ): Promise<DeliverResult> {
    const ops: WriteOp[] = [];
    const keys = new Set<string>();
    let bytes = 0;
    let stale = 0;
    for (let i = 0; i < answers.length; i++) {
      const answer = answers[i];
      const item = items[i]!;
      const key = itemKey(item.hash, item.code);
      if (answer === undefined || keys.has(key)) continue;
      keys.add(key);
      ops.push({
        type: "put",
        bucket: Bucket.TRIE,
        key: item.code ? codeKey(item.hash) : item.hash,
        value: answer,
      });
      bytes += answer.length;
      if (claimed[i] === undefined) stale++;
    }
    await this.#db.write(ops);
    this.#bytes += bytes;
    let missing = 0;
    const delivered: { key: string; item: StateItem; bytes: Uint8Array }[] = [];
    for (let i = 0; i < items.length; i++) {
      const item = claimed[i];
      if (item === undefined) continue;
      const key = itemKey(item.hash, item.code);
      const answer = answers[i];
      if (answer !== undefined) {
        delivered.push({ key, item, bytes: answer });
        continue;
      }
      // Claimed and unanswered: back to the frontier for another peer.
      this.#claimed.delete(key);
      this.#queueItem(key, item);
      missing++;
    }
    // The delivered items stay claimed (known) until their children are queued.
    await this.#handled(delivered);
    for (const { key } of delivered) this.#claimed.delete(key);
    return { ok: true, written: ops.length, missing, bytes, stale };
  }

  /** Gives claimed items back to the frontier, after a refused delivery or a failure. */
  #unclaim(claimed: readonly (StateItem | undefined)[]): void {
    for (const item of claimed) {
      if (item === undefined) continue;
      const key = itemKey(item.hash, item.code);
      if (this.#claimed.delete(key)) this.#queueItem(key, item);
    }
  }

  /**
   * Counts the delivered items of this root and looks at what their nodes refer to: the
   * children not known yet are looked up in the database together, then walked when held or
   * queued when missing.
   */
  async #handled(
    delivered: readonly { key: string; item: StateItem; bytes: Uint8Array }[],
  ): Promise<void> {
    const refs = new Map<string, { hash: Uint8Array; kind: StateItemKind }>();
    for (const { key, item, bytes } of delivered) {
      if (this.#walked.has(key)) continue;
      this.#walked.add(key);
      if (item.kind === "code") {
        this.#counts.codes++;
        continue;
      }
      const decoded = RLP.decode(bytes) as Decoded;
      for (const codeHash of this.#looked(decoded, item.kind))
        refs.set(itemKey(codeHash, true), { hash: codeHash, kind: "code" });
      visitNode(decoded, item.kind, (hash, kind) => {
        if (!equalBytes(hash, EMPTY_TRIE_ROOT)) refs.set(itemKey(hash, false), { hash, kind });
      });
    }
    const unknown = [...refs].filter(([key]) => !this.#known(key));
    const held = await Promise.all(
      unknown.map(([, ref]) =>
        this.#db.get(Bucket.TRIE, ref.kind === "code" ? codeKey(ref.hash) : ref.hash),
      ),
    );
    for (let i = 0; i < unknown.length; i++) {
      const [key, ref] = unknown[i]!;
      if (this.#known(key)) continue;
      if (held[i] === undefined) this.#queueItem(key, makeItem(ref.hash, ref.kind));
      else if (ref.kind === "code") this.#heldCode(key);
      else await this.#walkFrom(ref.hash, ref.kind);
    }
  }

  /**
   * Counts a node walked or delivered (and its leaves); returns the code hashes of the accounts
   * in it (account trie).
   */
  #looked(decoded: Decoded, kind: TrieKind): Uint8Array[] {
    this.#counts.nodes++;
    const leaves = countLeaves(decoded);
    if (kind === "account") this.#counts.accounts += leaves;
    else this.#counts.slots += leaves;
    const codes: Uint8Array[] = [];
    if (kind === "account") forEachLeafAccount(decoded, (codeHash) => codes.push(codeHash));
    return codes;
  }

  /** Code an account of this root has, met by a walk: counted if held, queued otherwise. */
  async #code(hash: Uint8Array): Promise<void> {
    const key = itemKey(hash, true);
    if (this.#known(key)) return;
    const held = await this.#db.get(Bucket.TRIE, codeKey(hash));
    if (this.#known(key)) return;
    if (held === undefined) this.#queueItem(key, makeItem(hash, "code"));
    else this.#heldCode(key);
  }

  #heldCode(key: string): void {
    this.#walked.add(key);
    this.#counts.codes++;
  }

  /** Walks what the database holds from `hash`; each missing node met joins the frontier. */
  async #walkFrom(hash: Uint8Array, kind: TrieKind): Promise<void> {
    const visit = async (_bytes: Uint8Array, decoded: Decoded, nodeKind: TrieKind) => {
      for (const codeHash of this.#looked(decoded, nodeKind)) await this.#code(codeHash);
    };
    await walk(this.#db, hash, visit, {
      seen: this.#walked,
      onMissing: (missing, missingKind) => {
        const key = itemKey(missing, false);
        if (!this.#known(key)) this.#queueItem(key, makeItem(missing, missingKind));
      },
      kind,
    });
  }

  /** Walked, held code, in the frontier or in flight. */
  #known(key: string): boolean {
    return (
      this.#walked.has(key) ||
      this.#frontier.has(key) ||
      this.#inFlight.has(key) ||
      this.#claimed.has(key)
    );
  }

  #queueItem(key: string, item: StateItem): void {
    this.#frontier.set(key, item);
    this.#stacks[item.kind].push(item);
  }
}

/** Why `answer` is not `item`'s bytes, or `undefined` when it is. */
function answerError(item: StateItem, answer: Uint8Array): string | undefined {
  const hash = keccak256(answer);
  if (!equalBytes(hash, item.hash))
    return `the answer (${answer.length} bytes) hashes to ${bytesToHex(hash)}`;
  if (item.code) return undefined;
  let decoded: Decoded;
  try {
    decoded = RLP.decode(answer) as Decoded;
  } catch (err) {
    return `not RLP: ${err instanceof Error ? err.message : String(err)}`;
  }
  return nodeShapeError(decoded, item.kind);
}

/**
 * Why `node` is not a trie node of `kind`, or `undefined`: a branch (16 children and a
 * value) or a leaf or extension (a hex-prefix path and a value or child); children are empty,
 * a 32-byte hash or an embedded node; account-trie leaves hold an account (nonce, balance,
 * storage root, code hash).
 */
function nodeShapeError(node: Decoded, kind: StateItemKind): string | undefined {
  if (!Array.isArray(node)) return "a trie node is a list, and this is a byte string";
  if (node.length === 17) {
    for (let i = 0; i < 16; i++) {
      const error = childError(node[i]!, kind);
      if (error !== undefined) return `branch child ${i}: ${error}`;
    }
    return node[16] instanceof Uint8Array ? undefined : "a branch's value is a list";
  }
  if (node.length !== 2) return `a trie node has 2 or 17 items, this one ${node.length}`;
  const [path, value] = node as [Decoded, Decoded];
  if (!(path instanceof Uint8Array) || path.length === 0)
    return "a leaf or extension starts with a non-empty path";
  const flag = path[0]! >> 4;
  if (flag > 3 || (flag % 2 === 0 && (path[0]! & 0x0f) !== 0))
    return `path ${bytesToHex(path)} is not hex-prefix encoded`;
  if (flag < 2) {
    if (value instanceof Uint8Array && value.length === 0) return "an extension without child";
    const error = childError(value, kind);
    return error === undefined ? undefined : `extension child: ${error}`;
  }
  if (!(value instanceof Uint8Array)) return "a leaf's value is a list";
  return kind === "account" ? accountError(value) : undefined;
}

function childError(child: Decoded, kind: StateItemKind): string | undefined {
  if (Array.isArray(child)) return nodeShapeError(child, kind);
  if (child.length === 0 || child.length === 32) return undefined;
  return `a child reference of ${child.length} bytes (a hash has 32)`;
}

function accountError(value: Uint8Array): string | undefined {
  let account: Decoded;
  try {
    account = RLP.decode(value) as Decoded;
  } catch {
    return "an account leaf whose value is not RLP";
  }
  if (
    !Array.isArray(account) ||
    account.length !== 4 ||
    !account.every((field) => field instanceof Uint8Array) ||
    account[2]!.length !== 32 ||
    account[3]!.length !== 32
  )
    return "an account leaf whose value is not [nonce, balance, storage root, code hash]";
  return undefined;
}

/** The leaves in `node`, embedded ones included (a storage trie embeds small leaves). */
function countLeaves(node: Decoded): number {
  if (!Array.isArray(node)) return 0;
  if (node.length === 17) {
    let leaves = 0;
    for (let i = 0; i < 16; i++) leaves += countLeaves(node[i]!);
    return leaves;
  }
  const path = node[0];
  if (node.length !== 2 || !(path instanceof Uint8Array) || path.length === 0) return 0;
  return path[0]! >> 4 >= 2 ? 1 : countLeaves(node[1]!);
}

function describe(item: StateItem): string {
  return `${item.kind} ${bytesToHex(item.hash)}`;
}

function invalid(message: string): StateError {
  return new StateError(StateErrorCode.SYNC_INVALID, message);
}

function checkRoot(root: unknown): Uint8Array {
  if (!(root instanceof Uint8Array) || root.length !== 32)
    throw invalid(
      `a state root is 32 bytes, got ${root instanceof Uint8Array ? `${root.length} bytes` : typeof root}`,
    );
  return root;
}

function checkItems(items: unknown, where: string): void {
  if (!Array.isArray(items)) throw invalid(`${where}: items must be an array`);
  for (let i = 0; i < items.length; i++) {
    const item = items[i] as Partial<StateItem> | null;
    if (typeof item !== "object" || item === null)
      throw invalid(`${where}: item ${i} is not a state item`);
    if (!(item.hash instanceof Uint8Array) || item.hash.length !== 32)
      throw invalid(`${where}: item ${i} has no 32-byte hash`);
    if (typeof item.kind !== "string" || !KINDS.has(item.kind))
      throw invalid(
        `${where}: item ${i} has kind ${String(item.kind)}, not account, storage or code`,
      );
    if (item.code !== (item.kind === "code"))
      throw invalid(`${where}: item ${i} has kind ${item.kind} and code ${String(item.code)}`);
  }
}

function checkAnswers(items: readonly StateItem[], answers: unknown): void {
  if (!Array.isArray(answers)) throw invalid("deliver: answers must be an array");
  if (answers.length > items.length)
    throw invalid(`deliver: ${answers.length} answers for ${items.length} items`);
  for (let i = 0; i < answers.length; i++) {
    const answer: unknown = answers[i];
    if (answer !== undefined && !(answer instanceof Uint8Array))
      throw invalid(`deliver: answer ${i} is neither bytes nor undefined`);
  }
}
