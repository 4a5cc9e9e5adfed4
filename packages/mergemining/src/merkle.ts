import { hashPair } from "./doubleSha256.js";
import { invalidArgument } from "./errors.js";

/**
 * Bitcoin's Merkle root of txids (raw order): pairs are hashed level by level, an odd last
 * node is paired with itself. One txid is its own root.
 */
export function merkleRoot(txids: readonly Uint8Array[]): Uint8Array {
  if (txids.length === 0) throw invalidArgument("a Merkle root needs at least one txid");
  let level = txids.slice();
  while (level.length > 1) {
    const next: Uint8Array[] = [];
    for (let i = 0; i < level.length; i += 2) {
      next.push(hashPair(level[i]!, level[i + 1] ?? level[i]!));
    }
    level = next;
  }
  return Uint8Array.from(level[0]!);
}

/**
 * The siblings of the leftmost leaf, bottom-up, raw order: the branch that leads from the first
 * txid (the coinbase) to the root.
 */
export function coinbaseBranch(txids: readonly Uint8Array[]): Uint8Array[] {
  if (txids.length === 0) throw invalidArgument("a Merkle branch needs at least one txid");
  const branch: Uint8Array[] = [];
  let level = txids.slice();
  while (level.length > 1) {
    branch.push(Uint8Array.from(level[1] ?? level[0]!));
    const next: Uint8Array[] = [];
    for (let i = 0; i < level.length; i += 2) {
      next.push(hashPair(level[i]!, level[i + 1] ?? level[i]!));
    }
    level = next;
  }
  return branch;
}
