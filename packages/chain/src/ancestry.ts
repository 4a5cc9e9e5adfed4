import { cpvHeights, FORK_DETECTION_UNCLE_WINDOW, forkDetectionData } from "@nodex/mergemining";
import {
  type BlockHeader,
  equalBytes,
  FORK_DETECTION_HEIGHT,
  hashForMergedMiningBase,
  withForkDetectionData,
} from "@nodex/types";
import { ChainError, ChainErrorCode } from "./errors.js";

/** Stands for the Bitcoin header of a block without a proof in fork-detection data. */
const EMPTY_BITCOIN_HEADER = new Uint8Array(80);

/** What the merged-mining ancestry reads: headers by hash and the canonical index. */
export interface HeaderSource {
  getHeaderByHash(hash: Uint8Array): Promise<BlockHeader | undefined>;
  getCanonicalHash(number: bigint): Promise<Uint8Array | undefined>;
}

/**
 * What a proof of work of `header` commits to: keccak256 of the header without merged-mining
 * fields, its last 12 bytes replaced from block 449 by fork-detection data computed from the
 * header's ancestors (their Bitcoin headers at the checkpoint heights, their uncle counts).
 * Throws `ChainError` (`CORRUPT`) when an ancestor is missing.
 */
export async function hashForMergedMining(
  source: HeaderSource,
  header: BlockHeader,
): Promise<Uint8Array> {
  const base = hashForMergedMiningBase(header);
  if (header.number < FORK_DETECTION_HEIGHT) return base;
  const parent = await source.getHeaderByHash(header.parentHash);
  if (parent === undefined) {
    throw new ChainError(
      ChainErrorCode.CORRUPT,
      `parent of block ${header.number} is not known: no fork-detection data`,
    );
  }
  const ancestors = await ancestorHeaders(source, header.parentHash, parent, header.number - 32n);
  const uncleCounts = ancestors.slice(0, FORK_DETECTION_UNCLE_WINDOW).map((h) => h.uncleCount);
  const cpvBitcoinHeaders: Uint8Array[] = [];
  for (const height of cpvHeights(header.number)) {
    const at = await ancestorHeaderAt(source, header.parentHash, parent, height);
    // A block without a proof (one built with rules that check none) counts as a Bitcoin
    // header of zeros, the same on every node.
    const bitcoinHeader = at.bitcoinMergedMiningHeader;
    cpvBitcoinHeaders.push(bitcoinHeader.length === 80 ? bitcoinHeader : EMPTY_BITCOIN_HEADER);
  }
  return withForkDetectionData(
    base,
    forkDetectionData({ cpvBitcoinHeaders, uncleCounts, height: header.number }),
  );
}

/** Like `hashForMergedMining`, but empty when an ancestor is missing (then no seal passes). */
export async function hashForMergedMiningOrEmpty(
  source: HeaderSource,
  header: BlockHeader,
): Promise<Uint8Array> {
  try {
    return await hashForMergedMining(source, header);
  } catch (err) {
    if (err instanceof ChainError) return new Uint8Array(32);
    throw err;
  }
}

/** Headers from `header` (hash `hash`) back to height `down` (not below 1), newest first. */
async function ancestorHeaders(
  source: HeaderSource,
  hash: Uint8Array,
  header: BlockHeader,
  down: bigint,
): Promise<BlockHeader[]> {
  const out: BlockHeader[] = [];
  let current: BlockHeader | undefined = header;
  let currentHash = hash;
  while (current !== undefined && current.number >= (down < 1n ? 1n : down)) {
    out.push(current);
    if (current.number === 0n) break;
    currentHash = current.parentHash;
    current = await source.getHeaderByHash(currentHash);
  }
  return out;
}

/**
 * The header at `height` on the branch of `header` (hash `hash`): walked back by parent until
 * the branch meets the canonical chain, then read from the canonical index.
 */
async function ancestorHeaderAt(
  source: HeaderSource,
  hash: Uint8Array,
  header: BlockHeader,
  height: bigint,
): Promise<BlockHeader> {
  let current = header;
  let currentHash = hash;
  for (;;) {
    if (current.number === height) return current;
    const canonical = await source.getCanonicalHash(current.number);
    if (canonical !== undefined && equalBytes(canonical, currentHash)) {
      const at = await source.getCanonicalHash(height);
      const found = at === undefined ? undefined : await source.getHeaderByHash(at);
      if (found !== undefined) return found;
      break;
    }
    const parent = await source.getHeaderByHash(current.parentHash);
    if (parent === undefined) break;
    currentHash = current.parentHash;
    current = parent;
  }
  throw new ChainError(ChainErrorCode.CORRUPT, `no ancestor at height ${height}`);
}
