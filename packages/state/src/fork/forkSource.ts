import { bytesToHex, bytesToUnprefixedHex, equalBytes, hexToBytes, keccak256 } from "@nodex/types";
import { decodeAccount } from "../accountReader.js";
import { Bucket } from "../db/buckets.js";
import type { Database, WriteOp } from "../db/database.js";
import { StateError, StateErrorCode } from "../errors.js";
import { decodeNode, findValue, type RawNode, type Ref } from "../fastTrie.js";
import type { MissingNodeError } from "../missingNode.js";
import { nibbles } from "../triePaths.js";
import type { AccountState } from "../worldState.js";
import type { ForkEntries, ForkFetcher } from "./forkTypes.js";
import { type CheckedProof, checkProof, unverified } from "./proofCheck.js";
import type { UpstreamCalls } from "./upstreamCalls.js";

export type { ForkEntries };

/** Code is stored under this byte and its hash (as `@ethereumjs/statemanager` keys it). */
const CODE_PREFIX = "63";

/**
 * Candidate keys tried, at most, to find one leading to a sibling node's position: 2^22, about
 * 3 s at 1.3 million hashes a second; a position of n nibbles takes 16^n tries on average, so
 * this finds 98 % of those of 5 nibbles, 23 % of those of 6.
 */
export const DEFAULT_FORK_SEARCH_LIMIT = 1 << 22;

export interface ForkSourceOptions {
  readonly upstream: UpstreamCalls;
  /** The database of the store the source is attached to: fetched nodes and code go there. */
  readonly db: Database;
  /** The fork block, as the upstream's methods take it (`0x10`, a quantity). */
  readonly blockTag: string;
  /** The fork block header's state root: everything fetched is checked against it. */
  readonly stateRoot: Uint8Array;
  /** Check every answer against `stateRoot` (the default); `false` is not supported yet. */
  readonly verify?: boolean;
  /** Candidate keys tried at most to reach a sibling node (`DEFAULT_FORK_SEARCH_LIMIT`). */
  readonly searchLimit?: number;
}

/** What a source has fetched and written since it was made. */
export interface ForkStats {
  /** Account proofs fetched (`eth_getProof` answers checked). */
  readonly accounts: number;
  /** Storage proofs fetched. */
  readonly slots: number;
  /** Contract codes fetched. */
  readonly codes: number;
  /** Trie nodes written that the database did not hold. */
  readonly nodes: number;
  /** Calls made to the upstream. */
  readonly calls: number;
  /** Sibling nodes the upstream gave by their hash (`nodex_getTrieNodes`). */
  readonly nodesByHash: number;
  /** Keys found by search to reach a sibling node, and the candidates tried for them. */
  readonly searches: number;
  readonly searchAttempts: number;
}

/**
 * The state of a live network at one block (the fork block), read lazily from an upstream node
 * and verified, not trusted. Attached to a `NodeStore` (`new NodeStore(db, cache, {fork})`),
 * it is asked for a trie node each time a state opened on that store walks to one the database
 * does not hold, and for code whose hash an account names and the database does not hold.
 *
 * Nodex's state trie is geth's (secure tries, same node encoding), so the nodes of an
 * `eth_getProof` answer are nodes of the local trie: the state at the fork block has the
 * upstream's state root, and the roots after local blocks are real roots too. Each answer is
 * checked against the fork block's state root (`checkProof`) before anything of it is written;
 * code against the code hash the fork block's account has. What was fetched is in the database
 * (nodes keyed by hash, content-addressed, so written at once), and never fetched again, also
 * after a restart.
 *
 * Why a node missing on a walk for key K is in the proof of K: a local change rewrites only the
 * nodes on its key's path and keeps every other node by reference at the same position (nibble
 * path from the root), since a trie's shape is a function of its keys; so each node a post-fork
 * trie refers to is either made locally (and stored) or a node of the fork block's trie at the
 * same position. A walk for K meets nodes at positions that are prefixes of K's path; a node
 * there that is missing is the fork trie's node at that position, on K's path in the fork trie,
 * and a proof of K holds every node from the root along K's path. The exception is a deletion
 * that collapses a branch: it reads the branch's one remaining child, off K's path. For that
 * node, the source searches for a key whose hash starts with the node's position (candidate
 * addresses or slots, at most `searchLimit`), whose proof then holds it.
 */
export class ForkSource implements ForkFetcher {
  readonly upstream: UpstreamCalls;
  readonly db: Database;
  readonly blockTag: string;
  readonly stateRoot: Uint8Array;
  readonly #searchLimit: number;
  /** Fetches under way, by what they fetch: concurrent walks meeting the same node share one. */
  readonly #inFlight = new Map<string, Promise<ForkEntries>>();
  #stats = {
    accounts: 0,
    slots: 0,
    codes: 0,
    nodes: 0,
    calls: 0,
    nodesByHash: 0,
    searches: 0,
    searchAttempts: 0,
  };
  /** Whether the upstream serves trie nodes by hash; unknown until asked. */
  #nodesByHash: boolean | undefined;

  constructor(options: ForkSourceOptions) {
    if (options.verify === false)
      throw new StateError(
        StateErrorCode.FORK_UNSUPPORTED,
        "a fork without verification (verify: false, for an upstream without eth_getProof) is not supported yet",
        { upstream: options.upstream.describe() },
      );
    if (options.stateRoot.length !== 32)
      throw new RangeError(`a fork's state root is 32 bytes, got ${options.stateRoot.length}`);
    const limit = options.searchLimit ?? DEFAULT_FORK_SEARCH_LIMIT;
    if (!Number.isSafeInteger(limit) || limit < 0)
      throw new RangeError(`a fork's search limit is a count, got ${limit}`);
    this.upstream = options.upstream;
    this.db = options.db;
    this.blockTag = options.blockTag;
    this.stateRoot = options.stateRoot;
    this.#searchLimit = limit;
  }

  stats(): ForkStats {
    return { ...this.#stats };
  }

  /**
   * The nodes on the path of `key` in the fork block's trie (the account trie when `owner` is
   * undefined, else `owner`'s storage trie) holding the node `missing` names, fetched, checked
   * and written. `key` is the trie's key before hashing (an address, a slot), `undefined` when
   * unknown; when the node is not on its path (a sibling), a key leading there is searched for.
   */
  async fill(
    owner: Uint8Array | undefined,
    key: Uint8Array | undefined,
    missing: MissingNodeError,
  ): Promise<ForkEntries> {
    const onPath = key !== undefined && startsWith(nibbles(keccak256(key)), missing.position);
    if (!onPath) {
      // A sibling: asked for by its hash where the upstream serves nodes so (a Nodex node),
      // searched for by a key leading to it otherwise.
      const byHash = await this.#nodeByHash(missing.hash);
      if (byHash !== undefined) return byHash;
    }
    const target = onPath ? key : this.#search(missing, owner === undefined ? 20 : 32, owner);
    return owner === undefined ? this.fetchAccount(target) : this.fetchStorage(owner, target);
  }

  /** The fork block's root node (with the path of the zero address). */
  fetchRoot(): Promise<ForkEntries> {
    return this.fetchAccount(new Uint8Array(20));
  }

  /** The nodes of `address`'s path in the fork block's account trie. */
  fetchAccount(address: Uint8Array): Promise<ForkEntries> {
    return this.#once(`a${bytesToUnprefixedHex(address)}`, async () => {
      const { nodes } = await this.#proof(address, []);
      return this.#write(nodes);
    });
  }

  /** The nodes of `slot`'s path in `address`'s fork-block storage trie, and of its account's. */
  fetchStorage(address: Uint8Array, slot: Uint8Array): Promise<ForkEntries> {
    return this.#once(
      `s${bytesToUnprefixedHex(address)}${bytesToUnprefixedHex(slot)}`,
      async () => {
        const { nodes } = await this.#proof(address, [slot]);
        return this.#write(nodes);
      },
    );
  }

  /**
   * The code of hash `codeHash`, which `address` has at the fork block (`STATE_FORK_NODE_UNAVAILABLE`
   * otherwise: an account's code is fetched only for the hash it had there), fetched with
   * `eth_getCode`, checked against the hash and written as local code is.
   */
  fetchCode(address: Uint8Array, codeHash: Uint8Array): Promise<ForkEntries> {
    return this.#once(`c${bytesToUnprefixedHex(codeHash)}`, async () => {
      const { account, entries } = await this.#forkAccount(address);
      if (account === undefined || !equalBytes(account.codeHash, codeHash))
        throw new StateError(
          StateErrorCode.FORK_NODE_UNAVAILABLE,
          `code ${bytesToHex(codeHash)} of ${bytesToHex(address)} is not in the database and is not the fork block's code of that account`,
          { address: bytesToHex(address), codeHash: bytesToHex(codeHash) },
        );
      const upstream = this.upstream.describe();
      const answer = await this.#call("eth_getCode", [bytesToHex(address), this.blockTag]);
      const code =
        typeof answer === "string" && /^0x(?:[0-9a-fA-F]{2})*$/.test(answer)
          ? hexToBytes(answer)
          : undefined;
      const where = { address: bytesToHex(address), codeHash: bytesToHex(codeHash) };
      if (code === undefined)
        throw unverified(upstream, `code of ${where.address}: the answer is not hex data`, where);
      const hash = keccak256(code);
      if (!equalBytes(hash, codeHash))
        throw unverified(
          upstream,
          `code of ${where.address}: its hash is ${bytesToHex(hash)}, the account's ${where.codeHash}`,
          where,
        );
      const key = CODE_PREFIX + bytesToUnprefixedHex(codeHash);
      await this.db.write([
        { type: "put", bucket: Bucket.TRIE, key: hexToBytes(key), value: code },
      ]);
      this.#stats.codes++;
      return new Map([...entries, [key, code]]);
    });
  }

  /**
   * `address`'s account at the fork block, read from the fork root's nodes in the database, or
   * from a checked proof when a node on its path is not there yet (then its nodes are written).
   */
  async #forkAccount(
    address: Uint8Array,
  ): Promise<{ account: AccountState | undefined; entries: ForkEntries }> {
    const resolve = async (ref: Ref): Promise<RawNode | null> => {
      if (!(ref instanceof Uint8Array)) return ref;
      if (ref.length === 0) return null;
      const bytes = await this.db.get(Bucket.TRIE, ref);
      if (bytes === undefined) throw new NotHeld();
      return decodeNode(bytes);
    };
    try {
      const value = await findValue(
        await resolve(this.stateRoot),
        nibbles(keccak256(address)),
        resolve,
      );
      if (value === null || value.length === 0) return { account: undefined, entries: new Map() };
      return { account: decodeAccount(value), entries: new Map() };
    } catch (error) {
      if (!(error instanceof NotHeld)) throw error;
    }
    const proof = await this.#proof(address, []);
    return { account: proof.account, entries: await this.#write(proof.nodes) };
  }

  /** `eth_getProof(address, slots)` at the fork block, checked against its state root. */
  async #proof(address: Uint8Array, slots: readonly Uint8Array[]): Promise<CheckedProof> {
    let answer: unknown;
    try {
      answer = await this.#call("eth_getProof", [
        bytesToHex(address),
        slots.map((s) => bytesToHex(s)),
        this.blockTag,
      ]);
    } catch (error) {
      throw noProofs(error, this.upstream.describe()) ?? error;
    }
    const checked = await checkProof(
      answer,
      address,
      slots,
      this.stateRoot,
      this.upstream.describe(),
    );
    this.#stats.accounts++;
    this.#stats.slots += slots.length;
    return checked;
  }

  /** Writes checked nodes (in one batch: they are keyed by their hash, so any order is safe). */
  async #write(nodes: ReadonlyMap<string, Uint8Array>): Promise<ForkEntries> {
    const ops: WriteOp[] = [];
    for (const [hex, bytes] of nodes) {
      const key = hexToBytes(hex);
      if ((await this.db.get(Bucket.TRIE, key)) !== undefined) continue;
      ops.push({ type: "put", bucket: Bucket.TRIE, key, value: bytes });
    }
    if (ops.length > 0) await this.db.write(ops);
    this.#stats.nodes += ops.length;
    return nodes;
  }

  /**
   * The node of `hash` from an upstream that serves trie nodes by hash (`nodex_getTrieNodes`),
   * checked against its hash and written; `undefined` when the upstream has no such method (it is
   * not asked again) or not that node.
   */
  async #nodeByHash(hash: Uint8Array): Promise<ForkEntries | undefined> {
    if (this.#nodesByHash === false) return undefined;
    const hex = bytesToUnprefixedHex(hash);
    return this.#once(`n${hex}`, async () => {
      let answer: unknown;
      try {
        answer = await this.#call("nodex_getTrieNodes", [[bytesToHex(hash)]]);
      } catch (err) {
        if (err instanceof StateError && err.code === StateErrorCode.UPSTREAM_ERROR) {
          this.#nodesByHash = false;
          return new Map();
        }
        throw err;
      }
      this.#nodesByHash = true;
      const node = Array.isArray(answer) ? answer[0] : undefined;
      if (typeof node !== "string" || !/^0x(?:[0-9a-fA-F]{2})+$/.test(node)) return new Map();
      const bytes = hexToBytes(node);
      if (!equalBytes(keccak256(bytes), hash))
        throw unverified(
          this.upstream.describe(),
          `trie node ${bytesToHex(hash)}: the answer's hash is ${bytesToHex(keccak256(bytes))}`,
          { node: bytesToHex(hash) },
        );
      this.#stats.nodesByHash++;
      return this.#write(new Map([[hex, bytes]]));
    }).then((entries) => (entries.size === 0 ? undefined : entries));
  }

  async #call(method: string, params: unknown[]): Promise<unknown> {
    this.#stats.calls++;
    return this.upstream.call(method, params);
  }

  /** One fetch at a time for `key`: a second caller waits for the first's. */
  #once(key: string, fetch: () => Promise<ForkEntries>): Promise<ForkEntries> {
    const running = this.#inFlight.get(key);
    if (running !== undefined) return running;
    const started = fetch().finally(() => this.#inFlight.delete(key));
    this.#inFlight.set(key, started);
    return started;
  }

  /**
   * A key of `size` bytes whose hash starts with the position of the missing node: candidates
   * made from a counter, at most `searchLimit` (some 16^n tries for a position n nibbles deep).
   */
  #search(missing: MissingNodeError, size: number, owner: Uint8Array | undefined): Uint8Array {
    const position = missing.position;
    this.#stats.searches++;
    const found = findCandidate(size, position, this.#searchLimit);
    this.#stats.searchAttempts += found.tried;
    if (found.index >= 0) return candidateKey(size, found.index);
    const trie = owner === undefined ? "account trie" : `storage trie of ${bytesToHex(owner)}`;
    const hex = bytesToUnprefixedHex(missing.hash);
    throw new StateError(
      StateErrorCode.FORK_NODE_UNAVAILABLE,
      `trie node ${hex} of the fork's ${trie} (position ${positionHex(position)}, a sibling of a deleted key) was not fetched: no key among ${this.#searchLimit} candidates leads to it`,
      { node: hex, position: positionHex(position) },
    );
  }
}

/**
 * The first 3 bytes (6 nibbles) of the hash of each candidate key hashed so far, by key size
 * (20: addresses, 32: slots), in candidate order, shared by every source of the process: the
 * candidates are the same for every search, so a later search scans these before hashing new
 * ones (some 12 MB for 2^22 candidates of a size).
 */
const hashedCandidates = new Map<number, { prefixes: Uint8Array; count: number }>();
const KNOWN_NIBBLES = 6;

/** Candidate key `i` of `size` bytes: zeros, then `i` in the last four bytes. */
function candidateKey(size: number, i: number): Uint8Array {
  const key = new Uint8Array(size);
  new DataView(key.buffer).setUint32(size - 4, i);
  return key;
}

/**
 * The first candidate (index) below `limit` whose hash starts with `position`, -1 when none,
 * and how many candidates it looked at.
 */
function findCandidate(
  size: number,
  position: Uint8Array,
  limit: number,
): { index: number; tried: number } {
  let known = hashedCandidates.get(size);
  if (known === undefined) {
    known = { prefixes: new Uint8Array(3 * 4096), count: 0 };
    hashedCandidates.set(size, known);
  }
  const matches = (i: number) =>
    startsWithHash(known.prefixes.subarray(3 * i, 3 * i + 3), position, KNOWN_NIBBLES) &&
    (position.length <= KNOWN_NIBBLES ||
      startsWithHash(keccak256(candidateKey(size, i)), position));
  const scanned = Math.min(known.count, limit);
  for (let i = 0; i < scanned; i++) if (matches(i)) return { index: i, tried: i + 1 };
  for (let i = known.count; i < limit; i++) {
    if (3 * i + 3 > known.prefixes.length) {
      const grown = new Uint8Array(Math.min(known.prefixes.length * 2, 3 * limit + 3));
      grown.set(known.prefixes);
      known.prefixes = grown;
    }
    known.prefixes.set(keccak256(candidateKey(size, i)).subarray(0, 3), 3 * i);
    known.count = i + 1;
    if (matches(i)) return { index: i, tried: i + 1 };
  }
  return { index: -1, tried: Math.max(limit, 0) };
}

/** JSON-RPC codes of a method the server does not serve (-32004: Hardhat's and Ganache's). */
const NO_METHOD_CODES = new Set([-32601, -32004]);

/**
 * `STATE_FORK_UNSUPPORTED` when `error` is the upstream's refusal of `eth_getProof` as a method
 * it does not serve (a node without proofs: the state cannot be checked), `undefined` otherwise.
 */
function noProofs(error: unknown, upstream: string): StateError | undefined {
  if (!(error instanceof StateError) || error.code !== StateErrorCode.UPSTREAM_ERROR)
    return undefined;
  const { code, message } = error.meta as { code?: unknown; message?: unknown };
  const text = typeof message === "string" ? message : "";
  // A message saying a method is not served, not that something it asked for is missing
  // ("header not found" is a pruned block, not a missing method).
  const unserved =
    (typeof code === "number" && NO_METHOD_CODES.has(code)) ||
    (/method|eth_getProof/i.test(text) &&
      /not (supported|found|available|implemented)|does not exist|unsupported|unknown/i.test(text));
  if (!unserved) return undefined;
  return new StateError(
    StateErrorCode.FORK_UNSUPPORTED,
    `the fork's upstream ${upstream} has no eth_getProof (it answered ${String(code)}: ${text.slice(0, 120)}): the forked state is read through eth_getProof and checked against the fork block's state root; fork a node that serves it (Nodex, geth, Anvil, Hardhat's node); --fork-verify off, which would take the upstream's state unchecked, is not supported yet`,
    { upstream, method: "eth_getProof" },
  );
}

/** A node the fork root's walk needs is not in the database yet. */
class NotHeld extends Error {}

function startsWith(path: Uint8Array, prefix: Uint8Array): boolean {
  if (prefix.length > path.length) return false;
  for (let i = 0; i < prefix.length; i++) if (path[i] !== prefix[i]) return false;
  return true;
}

/**
 * Whether the nibbles of `hash` start with `prefix` (its first `max` nibbles when given),
 * without spreading them out.
 */
function startsWithHash(hash: Uint8Array, prefix: Uint8Array, max = prefix.length): boolean {
  const n = Math.min(prefix.length, max);
  for (let i = 0; i < n; i++) {
    const byte = hash[i >> 1]!;
    if ((i & 1 ? byte & 15 : byte >> 4) !== prefix[i]) return false;
  }
  return true;
}

function positionHex(position: Uint8Array): string {
  return Array.from(position, (n) => n.toString(16)).join("") || "(root)";
}
