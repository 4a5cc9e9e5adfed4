import { createMPT } from "@ethereumjs/mpt";
import { RLP } from "@ethereumjs/rlp";

/**
 * Root of a trie keyed by RLP(index) holding `values` in order: a block's transactions root and
 * receipts root. Built in memory; the nodes are not kept.
 */
export async function orderedTrieRoot(values: readonly Uint8Array[]): Promise<Uint8Array> {
  const trie = await createMPT();
  for (let i = 0; i < values.length; i++) await trie.put(RLP.encode(i), values[i]!);
  return trie.root();
}
