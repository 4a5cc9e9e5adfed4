import { MerklePatriciaTrie, type MPTOpts } from "@ethereumjs/mpt";
import { RLP } from "@ethereumjs/rlp";
import { type DB, ValueEncoding } from "@ethereumjs/util";
import { bytesToHex, bytesToUnprefixedHex, equalBytes } from "@nodex/types";
import { StateError, StateErrorCode } from "./errors.js";
import { MISSING_NODE, MissingNodeError, nodePosition } from "./missingNode.js";
import { commonLength, decodePath, encodePath, nibbles } from "./triePaths.js";

/**
 * A node as RLP decodes it: a branch is 17 items (16 children, then the value), a leaf or an
 * extension 2 (its path in compact form, then the value or the child). A child is a 32-byte
 * hash, a node of its own when its encoding is shorter than 32 bytes, or empty.
 */
export type RawNode = Ref[];
export type Ref = Uint8Array | RawNode;

const EMPTY = new Uint8Array(0);
const MISSING = MISSING_NODE;

/**
 * What a trie reads missing nodes through when its store has a fork source attached
 * (`NodeStore.fillFromFork`): the store fetches the nodes of the fork block's trie on the path of
 * `key` (or of a key found to lead to the node's position) from the upstream.
 */
export interface ForkFiller {
  readonly fork: unknown;
  fillFromFork(
    owner: Uint8Array | undefined,
    key: Uint8Array | undefined,
    missing: MissingNodeError,
  ): Promise<void>;
}

/** How `findValue` names the node of a child reference met at `depth` nibbles of `path`. */
export type Resolver = (ref: Ref, path: Uint8Array, depth: number) => Promise<RawNode | null>;

/**
 * Nodes as decoded, by the encoded bytes the database handed out or the trie wrote: the store
 * hands out the same array for a node each time (its pending writes, its cache), so a node is
 * decoded once while its bytes are kept there, and an entry lives no longer than its bytes.
 * Nodes are never changed once made (a change makes new ones), so every trie may share them.
 */
const decoded = new WeakMap<Uint8Array, RawNode>();

/** The node encoded in `bytes`, decoded once while the store keeps them; throws on a malformed one. */
export function decodeNode(bytes: Uint8Array): RawNode {
  const known = decoded.get(bytes);
  if (known !== undefined) return known;
  const node = RLP.decode(bytes);
  if (!Array.isArray(node) || (node.length !== 17 && node.length !== 2))
    throw new Error("Invalid node");
  decoded.set(bytes, node as RawNode);
  return node as RawNode;
}

/**
 * The value stored at `path` (nibbles) below `root`, as the node holds it (empty for none), or
 * `null` where the path leads nowhere; `resolve` names the node of a child reference.
 */
export async function findValue(
  root: RawNode | null,
  path: Uint8Array,
  resolve: Resolver,
): Promise<Uint8Array | null> {
  let node = root;
  let at = 0;
  while (node !== null) {
    if (node.length === 17) {
      if (at === path.length) return node[16] as Uint8Array;
      const i = path[at++]!;
      node = await resolve(node[i]!, path, at);
      continue;
    }
    const [isLeaf, part] = decodePath(node[0] as Uint8Array);
    if (!startsWith(path, at, part)) return null;
    at += part.length;
    if (isLeaf) return at === path.length ? (node[1] as Uint8Array) : null;
    node = await resolve(node[1]!, path, at);
  }
  return null;
}

/**
 * `@ethereumjs/mpt`'s trie with reads, writes and deletions that walk the nodes as RLP decodes
 * them, instead of through the library's node classes and its walk controller. The trie is the
 * same (an Ethereum trie is one shape for one set of keys and values): same root, same node
 * bytes, written through the same checkpointing database; everything else (proofs, walks,
 * checkpoints, copies) is the library's. Tries with options it does not cover (a key prefix,
 * pruning, a persisted root) keep the library's reads and writes.
 *
 * The library's write finds the path through its walk controller, makes an object per node,
 * then encodes and hashes the path: in a node's profile of ERC-20 transfers, 192 µs of writes
 * a transfer (about four writes, tries of a few thousand entries), against 83 µs here.
 */
export class FastTrie extends MerklePatriciaTrie {
  readonly #plain: boolean;
  /**
   * Whether nodes may be read from and written to the store under the trie's checkpointing
   * database directly while no checkpoint is open: values as stored (bytes), no cache of the
   * database's own. Its keys are then made by Node's hex encoder rather than the library's
   * (which builds each string a character pair at a time, about 1 kB of garbage a hash).
   */
  readonly #direct: boolean;
  /**
   * The account whose storage trie this is (its address), `undefined` for the account trie:
   * what a fork source asks the upstream for when a node is missing. The state manager sets it
   * on the storage tries it opens.
   */
  forkOwner: Uint8Array | undefined;

  constructor(opts: MPTOpts) {
    super(opts);
    this.#plain =
      this._opts.keyPrefix === undefined &&
      !this._opts.useNodePruning &&
      !this._opts.useRootPersistence;
    const checkpoints = this._db as unknown as { _cache?: unknown };
    this.#direct =
      opts.db !== undefined &&
      opts.valueEncoding === ValueEncoding.Bytes &&
      checkpoints._cache === undefined;
  }

  /** The store itself when the trie may use it directly now (see `#direct`). */
  #store(): DB<string, string | Uint8Array> | undefined {
    return this.#direct && !this._db.hasCheckpoints() ? this._db.db : undefined;
  }

  /** A copy over the same database (as the library's), itself a `FastTrie`. */
  override shallowCopy(includeCheckpoints = true, opts?: MPTOpts): FastTrie {
    const trie = new FastTrie(
      Object.assign(
        {},
        this._opts,
        {
          db: this._db.db.shallowCopy(),
          root: this.root(),
          cacheSize: 0,
        },
        opts,
      ),
    );
    if (includeCheckpoints && this.hasCheckpoints()) trie._db.setCheckpoints(this._db.checkpoints);
    trie.forkOwner = this.forkOwner;
    return trie;
  }

  override async get(key: Uint8Array, throwIfMissing = false): Promise<Uint8Array | null> {
    if (!this.#plain) return super.get(key, throwIfMissing);
    const path = nibbles(this.appliedKey(key));
    const resolve: Resolver = (ref, walked, depth) => this.#resolve(ref, walked, depth);
    let filled: Set<string> | undefined;
    for (;;) {
      try {
        const value = await findValue(await this.#rootNode(), path, resolve);
        return value === null ? null : storedValue(value);
      } catch (error) {
        filled = await this.#fill(error, key, filled);
        if (filled !== undefined) continue;
        if (!throwIfMissing && (error as Error).message === MISSING) return null;
        throw error;
      }
    }
  }

  /**
   * After a walk for `key` met a missing node: `undefined` when the store has no fork source
   * (the caller goes on as without one), otherwise the node's fetch from the upstream, and the
   * nodes fetched for this walk so far (`filled`, made on the first) once it is in the store,
   * so that the walk may run again. A node met missing again after its fetch is an error, not
   * another fetch: the walk would never end.
   */
  async #fill(
    error: unknown,
    key: Uint8Array | undefined,
    filled: Set<string> | undefined,
  ): Promise<Set<string> | undefined> {
    if (!(error instanceof MissingNodeError)) return undefined;
    const store = this._db.db as unknown as Partial<ForkFiller>;
    if (store.fork === undefined || store.fillFromFork === undefined) return undefined;
    const hex = bytesToUnprefixedHex(error.hash);
    if (filled?.has(hex)) throw forkNodeStillMissing(hex, this.forkOwner);
    const fetched = filled ?? new Set<string>();
    fetched.add(hex);
    await store.fillFromFork(this.forkOwner, key, error);
    // An open checkpoint remembers a node it found missing (as a deletion): forget that.
    for (const checkpoint of this._db.checkpoints)
      if (checkpoint.keyValueMap.has(hex) && checkpoint.keyValueMap.get(hex) === undefined)
        checkpoint.keyValueMap.delete(hex);
    return fetched;
  }

  override async put(key: Uint8Array, value: Uint8Array | null, skipKeyTransform = false) {
    if (!this.#plain) return super.put(key, value, skipKeyTransform);
    if (value === null || value.length === 0) return this.del(key, skipKeyTransform);
    const path = nibbles(skipKeyTransform ? key : this.appliedKey(key));
    await this.#changeFilling(skipKeyTransform ? undefined : key, (root, writes) =>
      this.#insert(root, path, 0, value, writes),
    );
  }

  override async del(key: Uint8Array, skipKeyTransform = false) {
    if (!this.#plain) return super.del(key, skipKeyTransform);
    const path = nibbles(skipKeyTransform ? key : this.appliedKey(key));
    await this.#changeFilling(skipKeyTransform ? undefined : key, (root, writes) =>
      this.#remove(root, path, 0, writes),
    );
  }

  /** `#change`, run again after each missing node a fork source fetched (`#fill`). */
  async #changeFilling(
    key: Uint8Array | undefined,
    change: (root: RawNode | null, writes: Write[]) => Promise<RawNode | null>,
  ): Promise<void> {
    let filled: Set<string> | undefined;
    for (;;) {
      try {
        return await this.#change(change);
      } catch (error) {
        filled = await this.#fill(error, key, filled);
        if (filled === undefined) throw error;
      }
    }
  }

  /**
   * Applies `change` to the root node under the trie's lock; a new root and the nodes made for
   * it are written, an unchanged root (the same object back) writes nothing.
   */
  async #change(
    change: (root: RawNode | null, writes: Write[]) => Promise<RawNode | null>,
  ): Promise<void> {
    await this._lock.acquire();
    try {
      const writes: Write[] = [];
      const before = await this.#rootNode();
      const after = await change(before, writes);
      if (after === before) return;
      this.root(after === null ? this.EMPTY_TRIE_ROOT : this.#storeRoot(after, writes));
      const store = this.#store();
      if (store !== undefined) {
        for (const write of writes) await store.put(bytesToUnprefixedHex(write.key), write.value);
      } else await this._db.batch(writes);
    } finally {
      this._lock.release();
    }
  }

  async #rootNode(): Promise<RawNode | null> {
    const root = this.root();
    return equalBytes(root, this.EMPTY_TRIE_ROOT) ? null : this.#resolve(root, EMPTY, 0);
  }

  /**
   * The node a child reference names (null for none), met at `depth` nibbles of `path` (then at
   * nibble `extra` when given); a missing node throws as the library does, with its hash and
   * position (`MissingNodeError`).
   */
  async #resolve(ref: Ref, path: Uint8Array, depth: number, extra = -1): Promise<RawNode | null> {
    if (!(ref instanceof Uint8Array)) return ref;
    if (ref.length === 0) return null;
    const store = this.#store();
    const bytes =
      store !== undefined ? await store.get(bytesToUnprefixedHex(ref)) : await this._db.get(ref);
    if (bytes === undefined) throw new MissingNodeError(ref, nodePosition(path, depth, extra));
    if (!(bytes instanceof Uint8Array)) throw new Error("Invalid node");
    return decodeNode(bytes);
  }

  /** The reference to `node` in its parent: its hash once written, or itself when short. */
  #ref(node: RawNode, writes: Write[]): Ref {
    const encoded = RLP.encode(node);
    return encoded.length < 32 ? node : this.#write(node, encoded, writes);
  }

  /** The root is written and named by its hash whatever its length. */
  #storeRoot(node: RawNode, writes: Write[]): Uint8Array {
    return this.#write(node, RLP.encode(node), writes);
  }

  /** `node`, encoded, written under its hash (and known decoded while its bytes are kept). */
  #write(node: RawNode, encoded: Uint8Array, writes: Write[]): Uint8Array {
    decoded.set(encoded, node);
    const hash = this.hash(encoded);
    writes.push({ type: "put", key: hash, value: encoded });
    return hash;
  }

  /**
   * `node` with `path[at..]` set to `value`: the same object when the key has that value
   * already (the state manager writes back every slot and account it read).
   */
  async #insert(
    node: RawNode | null,
    path: Uint8Array,
    at: number,
    value: Uint8Array,
    writes: Write[],
  ): Promise<RawNode> {
    if (node === null) return [encodePath(path.subarray(at), true), value];
    if (node.length === 17) {
      const out = node.slice();
      if (at === path.length) {
        if (equalBytes(node[16] as Uint8Array, value)) return node;
        out[16] = value;
      } else {
        const i = path[at]!;
        const child = await this.#resolve(node[i]!, path, at + 1);
        const updated = await this.#insert(child, path, at + 1, value, writes);
        if (updated === child) return node;
        out[i] = this.#ref(updated, writes);
      }
      return out;
    }
    const [isLeaf, part] = decodePath(node[0] as Uint8Array);
    const common = commonLength(part, path, at);
    if (common === part.length) {
      if (isLeaf && at + common === path.length)
        return equalBytes(node[1] as Uint8Array, value) ? node : [node[0]!, value];
      if (!isLeaf) {
        const child = await this.#resolve(node[1]!, path, at + common);
        const updated = await this.#insert(child, path, at + common, value, writes);
        if (updated === child) return node;
        return [node[0]!, this.#ref(updated, writes)];
      }
    }
    // The paths part at `common`: a branch there holds both.
    const branch: RawNode = new Array<Ref>(17).fill(EMPTY);
    if (common === part.length) {
      branch[16] = node[1]!;
    } else {
      const rest = part.subarray(common + 1);
      branch[part[common]!] =
        isLeaf || rest.length > 0
          ? this.#ref([encodePath(rest, isLeaf), node[1]!], writes)
          : node[1]!;
    }
    const split = at + common;
    if (split === path.length) {
      branch[16] = value;
    } else {
      branch[path[split]!] = this.#ref([encodePath(path.subarray(split + 1), true), value], writes);
    }
    if (common === 0) return branch;
    return [encodePath(path.subarray(at, split), false), this.#ref(branch, writes)];
  }

  /** `node` without `path[at..]`: the same object when the key is absent, null when none is left. */
  async #remove(
    node: RawNode | null,
    path: Uint8Array,
    at: number,
    writes: Write[],
  ): Promise<RawNode | null> {
    if (node === null) return null;
    if (node.length === 17) {
      const out = node.slice();
      if (at === path.length) {
        if ((node[16] as Uint8Array).length === 0) return node;
        out[16] = EMPTY;
      } else {
        const i = path[at]!;
        const child = await this.#resolve(node[i]!, path, at + 1);
        if (child === null) return node;
        const updated = await this.#remove(child, path, at + 1, writes);
        if (updated === child) return node;
        out[i] = updated === null ? EMPTY : this.#ref(updated, writes);
      }
      return this.#collapse(out, path, at, writes);
    }
    const [isLeaf, part] = decodePath(node[0] as Uint8Array);
    if (!startsWith(path, at, part)) return node;
    if (isLeaf) return at + part.length === path.length ? null : node;
    const child = await this.#resolve(node[1]!, path, at + part.length);
    const updated = await this.#remove(child, path, at + part.length, writes);
    if (updated === child) return node;
    return updated === null ? null : this.#join(part, updated, writes);
  }

  /**
   * A branch (at `depth` nibbles of `path`) left with one entry becomes a leaf or joins its one
   * child: the child, a sibling of the removed key's path, is read.
   */
  async #collapse(
    branch: RawNode,
    path: Uint8Array,
    depth: number,
    writes: Write[],
  ): Promise<RawNode | null> {
    let only = -1;
    let count = (branch[16] as Uint8Array).length > 0 ? 1 : 0;
    for (let i = 0; i < 16; i++) {
      const child = branch[i]!;
      if (!(child instanceof Uint8Array) || child.length > 0) {
        only = i;
        count++;
      }
    }
    if (count >= 2) return branch;
    if (count === 0) return null;
    if (only === -1) return [encodePath(EMPTY, true), branch[16]!];
    const ref = branch[only]!;
    const child = await this.#resolve(ref, path, depth, only);
    if (child === null) throw new Error(MISSING);
    // A branch below keeps its reference: it is unchanged.
    if (child.length === 17) return [encodePath(Uint8Array.of(only), false), ref];
    return this.#join(Uint8Array.of(only), child, writes);
  }

  /** The node for `prefix` followed by `node`: one leaf or extension where both are short nodes. */
  #join(prefix: Uint8Array, node: RawNode, writes: Write[]): RawNode {
    if (node.length === 17) return [encodePath(prefix, false), this.#ref(node, writes)];
    const [isLeaf, part] = decodePath(node[0] as Uint8Array);
    const joined = new Uint8Array(prefix.length + part.length);
    joined.set(prefix);
    joined.set(part, prefix.length);
    return [encodePath(joined, isLeaf), node[1]!];
  }
}

interface Write {
  type: "put";
  key: Uint8Array;
  value: Uint8Array;
}

/** A stored value, copied: the caller may keep or change it without touching the node. */
function storedValue(value: Uint8Array): Uint8Array | null {
  return value.length === 0 ? null : value.slice();
}

function startsWith(path: Uint8Array, at: number, part: Uint8Array): boolean {
  if (path.length - at < part.length) return false;
  for (let i = 0; i < part.length; i++) if (path[at + i] !== part[i]) return false;
  return true;
}

/** A node a fork source fetched and the store still lacks: the upstream's proof left it out. */
function forkNodeStillMissing(hex: string, owner: Uint8Array | undefined): StateError {
  const trie =
    owner === undefined ? "the account trie" : `the storage trie of ${bytesToHex(owner)}`;
  return new StateError(
    StateErrorCode.FORK_NODE_UNAVAILABLE,
    `trie node ${hex} of ${trie} is still missing after its fetch from the fork's upstream`,
    { node: hex },
  );
}
