/**
 * A trie node that a walk needed and the store does not hold. Its message is the one
 * `@ethereumjs/mpt` throws ("Missing node in DB"), which the library's own walks test for; it
 * adds what a fork source needs to fetch the node: its hash, and its position in the trie (the
 * nibbles of the path from the root to it).
 */
export class MissingNodeError extends Error {
  readonly hash: Uint8Array;
  readonly position: Uint8Array;

  constructor(hash: Uint8Array, position: Uint8Array) {
    super(MISSING_NODE);
    this.name = "MissingNodeError";
    this.hash = hash;
    this.position = position;
  }
}

/** The library's message for a node that is not in the database. */
export const MISSING_NODE = "Missing node in DB";

/** The position of a node reached at `depth` nibbles of `path`, then at nibble `extra` when ≥ 0. */
export function nodePosition(path: Uint8Array, depth: number, extra = -1): Uint8Array {
  const out = new Uint8Array(depth + (extra >= 0 ? 1 : 0));
  out.set(path.subarray(0, depth));
  if (extra >= 0) out[depth] = extra;
  return out;
}
