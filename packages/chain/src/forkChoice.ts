import { equalBytes, type Receipt } from "@nodex/types";
import type { StoredBlock } from "./blockStore.js";
import { ChainError, ChainErrorCode } from "./errors.js";

/**
 * A change of the canonical head, as the chain announces it: the blocks that left the canonical
 * chain and the blocks that joined it, each list in chain order (lowest number first). A block
 * built or imported on the head has one added block and none removed; a reorganization has
 * both; a rewind (`evm_revert`, `evm_reset`) has removed blocks only.
 */
export interface HeadChange {
  readonly head: StoredBlock;
  readonly removed: readonly StoredBlock[];
  readonly added: readonly StoredBlock[];
  /**
   * The receipts of a block of `removed` or `added`, also of blocks a rewind deleted from the
   * database (kept for this change's listeners).
   */
  receipts(block: StoredBlock): Promise<readonly Receipt[] | undefined>;
}

/** How the canonical chain changes when a block becomes the head. */
export interface SwitchPlan {
  /** Numbers that leave the canonical chain (the old chain was longer). */
  readonly removedNumbers: bigint[];
  /** Blocks of the old chain that are no longer canonical, lowest first. */
  readonly removed: StoredBlock[];
  /** The new branch from the common ancestor's child up to the new head, in order. */
  readonly added: StoredBlock[];
}

/** What fork choice reads: blocks by hash and the canonical chain up to the head. */
export interface CanonicalSource {
  getBlockByHash(hash: Uint8Array): Promise<StoredBlock | undefined>;
  getCanonicalHash(number: bigint): Promise<Uint8Array | undefined>;
  getBlockByNumber(number: bigint): Promise<StoredBlock | undefined>;
}

/** The heaviest chain wins: `candidate` becomes the head when its total difficulty is higher. */
export function isHeavier(candidate: StoredBlock, head: StoredBlock): boolean {
  return candidate.totalDifficulty > head.totalDifficulty;
}

/**
 * What changes in the canonical chain when `tip` replaces `head`: the blocks from the common
 * ancestor up to `tip` join it (in order); numbers above `tip` that the old chain had leave it,
 * with the blocks they held, and so do the old blocks the new branch replaces. The walk stops at
 * `firstNumber`, the chain's first block.
 */
export async function switchPlan(
  source: CanonicalSource,
  head: StoredBlock,
  tip: StoredBlock,
  firstNumber = 0n,
): Promise<SwitchPlan> {
  const added: StoredBlock[] = [tip];
  let cursor = tip;
  for (;;) {
    const n = cursor.block.header.number - 1n;
    // The first block (genesis or an anchor) is on every branch.
    if (n < firstNumber) break;
    const parent = await source.getBlockByHash(cursor.block.header.parentHash);
    if (parent === undefined)
      throw new ChainError(ChainErrorCode.CORRUPT, `missing ancestor at ${n}`);
    const canonicalHash = await source.getCanonicalHash(n);
    if (canonicalHash !== undefined && equalBytes(canonicalHash, parent.hash)) break;
    added.unshift(parent);
    cursor = parent;
  }
  const removed: StoredBlock[] = [];
  const removedNumbers: bigint[] = [];
  const fork = added[0]!.block.header.number;
  const oldHead = head.block.header.number;
  for (let n = fork; n <= oldHead; n++) {
    const old = await source.getBlockByNumber(n);
    const replacement = added[Number(n - fork)];
    if (old !== undefined && (replacement === undefined || !equalBytes(old.hash, replacement.hash)))
      removed.push(old);
    if (n > tip.block.header.number) removedNumbers.push(n);
  }
  return { removedNumbers, removed, added };
}
