import { RLP } from "@ethereumjs/rlp";
import { bytesToHex, equalBytes, hexToBytes, keccak256 } from "@nodex/types";
import { Bucket } from "./db/buckets.js";
import type { Database, WriteOp } from "./db/database.js";
import { EMPTY_TRIE_ROOT } from "./emptyTrie.js";
import { StateError, StateErrorCode } from "./errors.js";
import type { TrieKind } from "./nodeRefs.js";
import { type Decoded, visitNode } from "./pruner.js";
import { codeKey } from "./stateItems.js";

/** The code hash of an account without code: keccak256 of nothing. */
export const KECCAK_EMPTY = keccak256(new Uint8Array());

/**
 * A whole state as data: every trie node reachable from `root` (the account trie and each
 * storage trie) and every contract's code. Addresses are not in it (the trie is keyed by their
 * hashes), so it is a state to put back as a whole, not a list of accounts.
 */
export interface StateDump {
  readonly root: Uint8Array;
  readonly nodes: readonly Uint8Array[];
  readonly codes: readonly Uint8Array[];
}

/** Reads the state at `root` out of `db`; throws `StateError` when a node of it is missing. */
export async function dumpState(db: Database, root: Uint8Array): Promise<StateDump> {
  const nodes: Uint8Array[] = [];
  const codes: Uint8Array[] = [];
  const codeHashes = new Map<string, Uint8Array>();
  await walk(db, root, async (bytes, decoded, kind) => {
    nodes.push(bytes);
    if (kind !== "account") return;
    forEachLeafAccount(decoded, (codeHash) => codeHashes.set(bytesToHex(codeHash), codeHash));
  });
  for (const [hex, hash] of codeHashes) {
    const code = await db.get(Bucket.TRIE, codeKey(hash));
    if (code === undefined) throw missing(`code ${hex}`);
    codes.push(code);
  }
  return { root, nodes, codes };
}

/**
 * The database writes that put `dump` in place, after checking it: each node and code is keyed
 * by its own hash, and the trie from the root is complete (nothing it refers to is missing
 * from the dump or the database). Throws `StateError` (`INVALID_DUMP`) otherwise.
 */
export async function stateDumpWrites(db: Database, dump: StateDump): Promise<WriteOp[]> {
  const given = new Map<string, Uint8Array>();
  for (const node of dump.nodes) given.set(bytesToHex(keccak256(node)), node);
  const codes = new Map<string, Uint8Array>();
  for (const code of dump.codes) codes.set(bytesToHex(keccak256(code)), code);
  const reader: Pick<Database, "get"> = {
    get: async (bucket, key) =>
      bucket === Bucket.TRIE ? (given.get(bytesToHex(key)) ?? db.get(bucket, key)) : undefined,
  };
  const needed = new Set<string>();
  try {
    await walk(reader, dump.root, async (_bytes, decoded, kind) => {
      if (kind !== "account") return;
      forEachLeafAccount(decoded, (codeHash) => needed.add(bytesToHex(codeHash)));
    });
  } catch (err) {
    if (err instanceof StateError) throw invalid(err.message);
    throw err;
  }
  for (const hash of needed) {
    if (codes.has(hash)) continue;
    const stored = await db.get(Bucket.TRIE, codeKey(hexToBytes(hash)));
    if (stored === undefined) throw invalid(`the code ${hash} an account names is missing`);
  }
  const ops: WriteOp[] = [];
  for (const [hash, node] of given)
    ops.push({ type: "put", bucket: Bucket.TRIE, key: hexToBytes(hash), value: node });
  for (const [hash, code] of codes)
    ops.push({ type: "put", bucket: Bucket.TRIE, key: codeKey(hexToBytes(hash)), value: code });
  return ops;
}

/** How `walk` goes on past what it has not got, and what it has walked before. */
export interface WalkOptions {
  /**
   * Hex keys (`bytesToHex`) of nodes walked already: skipped, and every node walked is added.
   * Shared between walks, it makes each node's subtree walked once across them.
   */
  readonly seen?: Set<string>;
  /** Called for a node missing from the database instead of throwing; the walk goes on. */
  readonly onMissing?: (hash: Uint8Array, kind: TrieKind) => void;
  /** The trie `root` is a node of: the accounts' (the default) or a storage trie. */
  readonly kind?: TrieKind;
}

/**
 * Visits every node reachable from `root` (storage tries included) once. A missing node
 * throws `StateError` (`ROOT_MISSING`), unless `onMissing` is given.
 */
export async function walk(
  db: Pick<Database, "get">,
  root: Uint8Array,
  visit: (bytes: Uint8Array, decoded: Decoded, kind: TrieKind) => Promise<void>,
  opts: WalkOptions = {},
): Promise<void> {
  const seen = opts.seen ?? new Set<string>();
  const stack: { hash: Uint8Array; kind: TrieKind }[] = [
    { hash: root, kind: opts.kind ?? "account" },
  ];
  while (stack.length > 0) {
    const { hash, kind } = stack.pop()!;
    if (equalBytes(hash, EMPTY_TRIE_ROOT)) continue;
    const key = bytesToHex(hash);
    if (seen.has(key)) continue;
    const bytes = await db.get(Bucket.TRIE, hash);
    if (bytes === undefined) {
      if (opts.onMissing === undefined) throw missing(`trie node ${key}`);
      opts.onMissing(hash, kind);
      continue;
    }
    seen.add(key);
    const decoded = RLP.decode(bytes) as Decoded;
    await visit(bytes, decoded, kind);
    visitNode(decoded, kind, (child, childKind) => stack.push({ hash: child, kind: childKind }));
  }
}

/** Calls `onCode` with the code hash of each account in the leaves of `node` (embedded ones too). */
export function forEachLeafAccount(node: Decoded, onCode: (codeHash: Uint8Array) => void): void {
  if (!Array.isArray(node)) return;
  if (node.length === 17) {
    for (let i = 0; i < 16; i++) {
      const child = node[i];
      if (Array.isArray(child)) forEachLeafAccount(child, onCode);
    }
    return;
  }
  if (node.length !== 2) return;
  const path = node[0];
  if (!(path instanceof Uint8Array) || path.length === 0) return;
  if (path[0]! >> 4 < 2) {
    if (Array.isArray(node[1])) forEachLeafAccount(node[1], onCode);
    return;
  }
  const value = node[1];
  if (!(value instanceof Uint8Array)) return;
  const account = RLP.decode(value) as Decoded;
  const codeHash = Array.isArray(account) ? account[3] : undefined;
  if (
    codeHash instanceof Uint8Array &&
    codeHash.length === 32 &&
    !equalBytes(codeHash, KECCAK_EMPTY)
  )
    onCode(codeHash);
}

function missing(what: string): StateError {
  return new StateError(StateErrorCode.ROOT_MISSING, `${what} is missing from the database`);
}

function invalid(reason: string): StateError {
  return new StateError(StateErrorCode.INVALID_DUMP, `not a complete state: ${reason}`);
}

/** A dump as a file holds it: the state, with the chain and block it was taken from. */
export interface StateFile extends StateDump {
  readonly chainId: number;
  /** The number of the block whose state it is. */
  readonly block: bigint;
}

const FORMAT = "nodex-state/1";

/** A state file's JSON text (UTF-8): `{format, chainId, block, root, nodes, codes}`, hex strings. */
export function encodeStateFile(file: StateFile): Uint8Array {
  return new TextEncoder().encode(
    JSON.stringify({
      format: FORMAT,
      chainId: file.chainId,
      block: `0x${file.block.toString(16)}`,
      root: bytesToHex(file.root),
      nodes: file.nodes.map(bytesToHex),
      codes: file.codes.map(bytesToHex),
    }),
  );
}

/** Reads a state file's JSON text; throws `StateError` (`INVALID_DUMP`) saying what is wrong. */
export function decodeStateFile(bytes: Uint8Array): StateFile {
  let o: unknown;
  try {
    o = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
  } catch {
    throw new StateError(StateErrorCode.INVALID_DUMP, "a state dump is JSON text, and this is not");
  }
  if (typeof o !== "object" || o === null || Array.isArray(o))
    throw new StateError(StateErrorCode.INVALID_DUMP, "a state dump is a JSON object");
  const f = o as Record<string, unknown>;
  if (f.format !== FORMAT) {
    throw new StateError(
      StateErrorCode.INVALID_DUMP,
      `not a state dump of this node: format ${JSON.stringify(f.format)}, expected "${FORMAT}"`,
    );
  }
  const hex = (v: unknown, what: string): Uint8Array => {
    if (typeof v !== "string" || !/^0x([0-9a-fA-F]{2})*$/.test(v))
      throw new StateError(StateErrorCode.INVALID_DUMP, `${what} must be 0x hex bytes`);
    return hexToBytes(v);
  };
  const list = (v: unknown, what: string): Uint8Array[] => {
    if (!Array.isArray(v))
      throw new StateError(StateErrorCode.INVALID_DUMP, `${what} must be a list`);
    return v.map((item, i) => hex(item, `${what}[${i}]`));
  };
  if (typeof f.chainId !== "number" || !Number.isSafeInteger(f.chainId) || f.chainId < 0)
    throw new StateError(StateErrorCode.INVALID_DUMP, "chainId must be a non-negative integer");
  if (typeof f.block !== "string" || !/^0x[0-9a-fA-F]{1,16}$/.test(f.block))
    throw new StateError(StateErrorCode.INVALID_DUMP, "block must be a hex quantity");
  const root = hex(f.root, "root");
  if (root.length !== 32)
    throw new StateError(StateErrorCode.INVALID_DUMP, "root must be 32 bytes");
  return {
    chainId: f.chainId,
    block: BigInt(f.block),
    root,
    nodes: list(f.nodes, "nodes"),
    codes: list(f.codes, "codes"),
  };
}
