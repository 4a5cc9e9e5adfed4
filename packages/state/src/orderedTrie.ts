import { createMPT } from "@ethereumjs/mpt";
import { RLP } from "@ethereumjs/rlp";
import { keccak256 } from "@nodex/types";

/** keccak256 of the RLP of an empty trie. */
const EMPTY_ROOT = keccak256(RLP.encode(new Uint8Array()));
/** The hex-prefix encoded path of the key RLP(0) = 0x80 (nibbles 8, 0) in a leaf. */
const LEAF_PATH_OF_INDEX_0 = Uint8Array.of(0x20, 0x80);

/**
 * Root of a trie keyed by RLP(index) holding `values` in order: a block's transactions root and
 * receipts root. Built in memory; the nodes are not kept. A block of one transaction (every
 * block of automine) is one leaf, hashed directly.
 */
export async function orderedTrieRoot(values: readonly Uint8Array[]): Promise<Uint8Array> {
  if (values.length === 0) return EMPTY_ROOT.slice();
  if (values.length === 1) return keccak256(RLP.encode([LEAF_PATH_OF_INDEX_0, values[0]!]));
  const trie = await createMPT();
  for (let i = 0; i < values.length; i++) await trie.put(RLP.encode(i), values[i]!);
  return trie.root();
}
