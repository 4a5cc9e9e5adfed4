import { Bucket } from "./db/buckets.js";
import type { Database } from "./db/database.js";

/**
 * A piece of a state as peers exchange it: a trie node (of the account trie or a storage trie)
 * or a contract's code, each named by its keccak256 hash, so that every answer checks itself.
 */
export interface StateItemRef {
  readonly hash: Uint8Array;
  /** Contract code (stored under `c` + its hash) rather than a trie node (stored under its hash). */
  readonly code: boolean;
}

/** Code is stored under this byte and its hash (as `@ethereumjs/statemanager` keys it). */
const CODE_PREFIX = 0x63;

/** The database key of the code whose hash is `hash`. */
export function codeKey(hash: Uint8Array): Uint8Array {
  const key = new Uint8Array(33);
  key[0] = CODE_PREFIX;
  key.set(hash, 1);
  return key;
}

/**
 * The items the database holds, in order, `undefined` for one it does not (never written,
 * pruned, or a hash that is not 32 bytes). The answer stops before the item that would take
 * the bytes answered past `maxBytes` (at least one item is answered when it exists), so
 * `result.length` may be below `items.length`: the caller asks again for the rest.
 */
export async function readStateItems(
  db: Pick<Database, "get">,
  items: readonly StateItemRef[],
  maxBytes = Number.POSITIVE_INFINITY,
): Promise<(Uint8Array | undefined)[]> {
  const answers: (Uint8Array | undefined)[] = [];
  let bytes = 0;
  for (const item of items) {
    const value =
      item.hash.length === 32
        ? await db.get(Bucket.TRIE, item.code ? codeKey(item.hash) : item.hash)
        : undefined;
    if (value !== undefined) {
      if (answers.length > 0 && bytes + value.length > maxBytes) break;
      bytes += value.length;
    }
    answers.push(value);
  }
  return answers;
}
