import { bytesToUnprefixedHex } from "@nodex/types";

/** Which trie a node belongs to: the accounts', or one account's storage. */
export type TrieKind = "account" | "storage";

/**
 * The hashes a stored trie node refers to, read straight from its RLP: no item is copied or
 * decoded, and each hash comes out as the trie's database key (lowercase hex, no `0x`). This
 * runs for every node a block writes, to leave out the ones its final state does not reach.
 */

/** Set by `readItem`: the payload of the item read, and whether it is a list. */
let payloadStart = 0;
let payloadEnd = 0;
let isList = false;

/** Reads the item header at `pos`; false when it does not fit in `end`. */
function readItem(b: Uint8Array, pos: number, end: number): boolean {
  if (pos >= end) return false;
  const first = b[pos]!;
  let start: number;
  let length: number;
  if (first < 0x80) {
    start = pos;
    length = 1;
  } else if (first < 0xb8 || (first >= 0xc0 && first < 0xf8)) {
    start = pos + 1;
    length = first - (first < 0xc0 ? 0x80 : 0xc0);
  } else {
    const lengthBytes = first - (first < 0xc0 ? 0xb7 : 0xf7);
    start = pos + 1 + lengthBytes;
    if (start > end) return false;
    length = 0;
    for (let i = pos + 1; i < start; i++) length = length * 256 + b[i]!;
  }
  if (start + length > end) return false;
  payloadStart = start;
  payloadEnd = start + length;
  isList = first >= 0xc0;
  return true;
}

/** Set by `forEachNodeRef`: the first four bytes of the hashes asked for (see there). */
let wanted: ReadonlySet<number> | undefined;

/** Whether the hash at `at` may be one asked for. */
function mayBeWanted(b: Uint8Array, at: number): boolean {
  return (
    wanted === undefined ||
    wanted.has(((b[at]! << 24) | (b[at + 1]! << 16) | (b[at + 2]! << 8) | b[at + 3]!) >>> 0)
  );
}

/** The first four bytes of a hash given as the trie's key (64 hex digits), as a number. */
export function hashPrefix(key: string): number {
  return Number.parseInt(key.slice(0, 8), 16);
}

function hex32(b: Uint8Array, at: number): string {
  return bytesToUnprefixedHex(b.subarray(at, at + 32));
}

/** A child reference: a hash, or a node embedded in its parent (walked in place). */
function visitChild(
  b: Uint8Array,
  pos: number,
  end: number,
  kind: TrieKind,
  onRef: (key: string, kind: TrieKind) => void,
): number {
  if (!readItem(b, pos, end)) return -1;
  const start = payloadStart;
  const stop = payloadEnd;
  if (isList) visitNodeAt(b, pos, stop, kind, onRef);
  else if (stop - start === 32 && mayBeWanted(b, start)) onRef(hex32(b, start), kind);
  return stop;
}

function visitNodeAt(
  b: Uint8Array,
  pos: number,
  end: number,
  kind: TrieKind,
  onRef: (key: string, kind: TrieKind) => void,
): void {
  if (!readItem(b, pos, end) || !isList) return;
  const listEnd = payloadEnd;
  // The first item: a branch's first child, or the path of a leaf or an extension.
  const first = payloadStart;
  if (!readItem(b, first, listEnd)) return;
  const firstIsList = isList;
  const pathStart = payloadStart;
  const pathEnd = payloadEnd;
  const second = payloadEnd;
  if (!readItem(b, second, listEnd)) return;
  const secondEnd = payloadEnd;
  if (secondEnd === listEnd) {
    // Two items: a leaf or an extension.
    if (firstIsList || pathEnd === pathStart) return;
    const leaf = b[pathStart]! >> 4 >= 2;
    if (!leaf) {
      visitChild(b, second, listEnd, kind, onRef);
      return;
    }
    if (kind !== "account" || isList) return;
    // An account: [nonce, balance, storage root, code hash].
    const valueEnd = payloadEnd;
    if (!readItem(b, payloadStart, valueEnd) || !isList) return;
    const accountEnd = payloadEnd;
    let at = payloadStart;
    for (let i = 0; i < 2; i++) {
      if (!readItem(b, at, accountEnd)) return;
      at = payloadEnd;
    }
    if (
      readItem(b, at, accountEnd) &&
      !isList &&
      payloadEnd - payloadStart === 32 &&
      mayBeWanted(b, payloadStart)
    )
      onRef(hex32(b, payloadStart), "storage");
    return;
  }
  // A branch: sixteen children and a value.
  let at = first;
  for (let i = 0; i < 16; i++) {
    at = visitChild(b, at, listEnd, kind, onRef);
    if (at < 0) return;
  }
}

/**
 * Calls `onRef` with the database key of each node `node` (a trie node's RLP) refers to by
 * hash: the children of a branch or an extension (embedded children are walked in place) and,
 * in a leaf of the account trie, the account's storage root. The same references as
 * `visitNode` of the decoded node. With `prefixes` (`hashPrefix` of each key asked for), a
 * hash whose first four bytes are none of them is skipped before it is made a key: a branch
 * refers to sixteen nodes, and a caller looking for the few just written needs few of them.
 */
export function forEachNodeRef(
  node: Uint8Array,
  kind: TrieKind,
  onRef: (key: string, kind: TrieKind) => void,
  prefixes?: ReadonlySet<number>,
): void {
  wanted = prefixes;
  try {
    visitNodeAt(node, 0, node.length, kind, onRef);
  } finally {
    wanted = undefined;
  }
}

/**
 * How many items the list encoded in `bytes` holds (17 for a branch, 2 for a leaf or an
 * extension), counted from the item headers without decoding; 0 when `bytes` is not a list.
 */
export function listItemCount(bytes: Uint8Array): number {
  if (!readItem(bytes, 0, bytes.length) || !isList) return 0;
  const end = payloadEnd;
  let count = 0;
  for (let pos = payloadStart; pos < end && readItem(bytes, pos, end); pos = payloadEnd) count++;
  return count;
}
