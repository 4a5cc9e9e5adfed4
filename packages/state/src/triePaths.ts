/**
 * Paths in the Ethereum Merkle Patricia trie: a key as nibbles, and a leaf's or an extension's
 * path in its compact (hex-prefix) form. Shared by the state's tries (`FastTrie`) and the
 * ordered tries of blocks (`orderedTrieRoot`).
 */

/** The nibbles of `key`, high nibble first. */
export function nibbles(key: Uint8Array): Uint8Array {
  const out = new Uint8Array(key.length * 2);
  for (let i = 0; i < key.length; i++) {
    out[2 * i] = key[i]! >> 4;
    out[2 * i + 1] = key[i]! & 15;
  }
  return out;
}

/** A leaf's or an extension's path in compact form: a flag nibble (leaf, odd length), then the nibbles. */
export function encodePath(path: Uint8Array, isLeaf: boolean): Uint8Array {
  const odd = path.length & 1;
  const out = new Uint8Array((path.length >> 1) + 1);
  out[0] = ((isLeaf ? 2 : 0) + odd) << 4;
  let i = 0;
  if (odd === 1) out[0]! |= path[i++]!;
  for (let j = 1; i < path.length; i += 2, j++) out[j] = (path[i]! << 4) | path[i + 1]!;
  return out;
}

/** The path of a compact form, and whether it is a leaf's; throws on a malformed one. */
export function decodePath(compact: Uint8Array): [isLeaf: boolean, path: Uint8Array] {
  if (compact.length === 0) throw new Error("Invalid node");
  const flag = compact[0]! >> 4;
  if (flag > 3) throw new Error("Invalid node");
  const odd = flag & 1;
  const out = new Uint8Array((compact.length - 1) * 2 + odd);
  let j = 0;
  if (odd === 1) out[j++] = compact[0]! & 15;
  for (let i = 1; i < compact.length; i++) {
    out[j++] = compact[i]! >> 4;
    out[j++] = compact[i]! & 15;
  }
  return [flag >= 2, out];
}

/** How many nibbles `part` shares with `path` from `at` on. */
export function commonLength(part: Uint8Array, path: Uint8Array, at = 0): number {
  const max = Math.min(part.length, path.length - at);
  let n = 0;
  while (n < max && part[n] === path[at + n]) n++;
  return n;
}
