import { RLP } from "@ethereumjs/rlp";
import { bytesToHex } from "@nodex/types";
import { Bucket } from "./db/buckets.js";
import type { Database, WriteOp } from "./db/database.js";
import { EMPTY_TRIE_ROOT } from "./emptyTrie.js";
import type { NodeCache } from "./nodeCache.js";
import type { TrieKind } from "./nodeRefs.js";

/** Deletes go to the database in batches of this many keys. */
const DELETE_BATCH = 10_000;
const HASH_LENGTH = 32;

export interface PruneResult {
  /** Trie nodes reachable from the kept roots. */
  readonly live: number;
  /** Trie nodes deleted. */
  readonly deleted: number;
}

export type Decoded = Uint8Array | Decoded[];

/**
 * Deletes every state and storage trie node that no root in `keep` reaches (mark and sweep).
 * Contract code is kept. Only unreachable nodes are deleted, in batches, so a crash part-way
 * leaves every kept state whole and some garbage for the next run. The caller must not write
 * blocks while this runs: a node it re-creates could be swept after being written.
 */
export async function pruneTrieNodes(
  db: Database,
  keep: readonly Uint8Array[],
  cache?: NodeCache,
): Promise<PruneResult> {
  const live = await markLive(db, keep);
  let deleted = 0;
  let batch: WriteOp[] = [];
  for await (const key of db.keys(Bucket.TRIE)) {
    // Code is keyed by a prefix byte and its hash (33 bytes); trie nodes by their hash alone.
    if (key.length !== HASH_LENGTH || live.has(bytesToHex(key))) continue;
    batch.push({ type: "del", bucket: Bucket.TRIE, key });
    if (batch.length >= DELETE_BATCH) {
      await db.write(batch);
      deleted += batch.length;
      batch = [];
    }
  }
  await db.write(batch);
  deleted += batch.length;
  if (deleted > 0) cache?.clear();
  return { live: live.size, deleted };
}

/** The hashes (hex) of every stored node reachable from `roots`, storage tries included. */
async function markLive(db: Database, roots: readonly Uint8Array[]): Promise<Set<string>> {
  const live = new Set<string>();
  const stack: { hash: Uint8Array; kind: TrieKind }[] = roots.map((hash) => ({
    hash,
    kind: "account",
  }));
  const emptyRoot = bytesToHex(EMPTY_TRIE_ROOT);
  while (stack.length > 0) {
    const { hash, kind } = stack.pop()!;
    const key = bytesToHex(hash);
    if (live.has(key) || key === emptyRoot) continue;
    const bytes = await db.get(Bucket.TRIE, hash);
    if (bytes === undefined) continue;
    live.add(key);
    visitNode(RLP.decode(bytes) as Decoded, kind, (child, childKind) =>
      stack.push({ hash: child, kind: childKind }),
    );
  }
  return live;
}

/**
 * Calls `onRef` for each node `node` refers to by hash: children of branches and extensions
 * (embedded children are walked in place) and, in leaves of the account trie, the account's
 * storage root.
 */
export function visitNode(
  node: Decoded,
  kind: TrieKind,
  onRef: (hash: Uint8Array, kind: TrieKind) => void,
): void {
  if (!Array.isArray(node)) return;
  const child = (ref: Decoded | undefined) => {
    if (ref === undefined) return;
    if (Array.isArray(ref)) visitNode(ref, kind, onRef);
    else if (ref.length === HASH_LENGTH) onRef(ref, kind);
  };
  if (node.length === 17) {
    for (let i = 0; i < 16; i++) child(node[i]);
    return;
  }
  if (node.length !== 2) return;
  const path = node[0];
  if (!(path instanceof Uint8Array) || path.length === 0) return;
  const isLeaf = path[0]! >> 4 >= 2;
  if (!isLeaf) {
    child(node[1]);
    return;
  }
  const value = node[1];
  if (kind !== "account" || !(value instanceof Uint8Array)) return;
  const account = RLP.decode(value) as Decoded;
  const storageRoot = Array.isArray(account) ? account[2] : undefined;
  if (storageRoot instanceof Uint8Array && storageRoot.length === HASH_LENGTH)
    onRef(storageRoot, "storage");
}
