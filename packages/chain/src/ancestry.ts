import {
  cpvBytes,
  cpvHeights,
  FORK_DETECTION_UNCLE_WINDOW,
  forkDetectionData,
} from "@nodex/mergemining";
import {
  type BlockHeader,
  bytesToHex,
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
  /**
   * The chain's first block (`Chain.firstBlock`): ancestors below its `headersFrom` (its
   * number when absent: an anchored chain's upstream's) count as blocks without a proof and
   * without uncles. Genesis when absent.
   */
  readonly firstBlock?: { readonly number: bigint; readonly headersFrom?: bigint };
}

/**
 * What `hashForMergedMining` keeps between calls, so that a block's fork-detection data costs a
 * few lookups instead of a walk over 32 ancestors and seven double-SHA256s. Entries are keyed by
 * block hash, and what they hold follows from the hash alone: right on any branch and for any
 * header source. Each map keeps its last `limit` entries.
 */
export class AncestryMemo {
  /** Block hash → uncle counts of that block and its ancestors, newest first (up to 32). */
  readonly #uncles = new Map<string, readonly number[]>();
  /** Hash of the block at the first CPV height → the seven CPV bytes. */
  readonly #cpv = new Map<string, Uint8Array>();
  readonly #limit: number;

  constructor(limit = 1024) {
    this.#limit = limit;
  }

  uncleCounts(hash: string): readonly number[] | undefined {
    return this.#uncles.get(hash);
  }

  setUncleCounts(hash: string, counts: readonly number[]): void {
    remember(this.#uncles, hash, counts, this.#limit);
  }

  cpv(hash: string): Uint8Array | undefined {
    return this.#cpv.get(hash);
  }

  setCpv(hash: string, cpv: Uint8Array): void {
    remember(this.#cpv, hash, cpv, this.#limit);
  }
}

function remember<V>(map: Map<string, V>, key: string, value: V, limit: number): void {
  map.set(key, value);
  if (map.size > limit) map.delete(map.keys().next().value!);
}

/**
 * What a proof of work of `header` commits to: keccak256 of the header without merged-mining
 * fields, its last 12 bytes replaced from block 449 by fork-detection data computed from the
 * header's ancestors (their Bitcoin headers at the checkpoint heights, their uncle counts).
 * Throws `ChainError` (`CORRUPT`) when an ancestor is missing. `memo` saves work across calls.
 */
export async function hashForMergedMining(
  source: HeaderSource,
  header: BlockHeader,
  memo?: AncestryMemo,
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
  const first = source.firstBlock?.headersFrom ?? source.firstBlock?.number ?? 0n;
  const uncleCounts = await recentUncleCounts(source, header.parentHash, parent, first, memo);
  const heights = cpvHeights(header.number);
  if (heights[0]! < first) {
    // Every checkpoint is below an anchor: none has a proof here.
    const cpv = cpvBytes(heights.map(() => EMPTY_BITCOIN_HEADER));
    return withForkDetectionData(
      base,
      forkDetectionData({ cpv, uncleCounts, height: header.number }),
    );
  }
  const top = await ancestorAt(source, header.parentHash, parent, heights[0]!);
  const topKey = bytesToHex(top.hash);
  let cpv = memo?.cpv(topKey);
  if (cpv === undefined) {
    const cpvBitcoinHeaders: Uint8Array[] = [];
    for (const height of heights) {
      if (height < first) {
        cpvBitcoinHeaders.push(EMPTY_BITCOIN_HEADER);
        continue;
      }
      const at = await ancestorAt(source, top.hash, undefined, height);
      // A block without a proof (one built with rules that check none) counts as a Bitcoin
      // header of zeros, the same on every node.
      const bitcoinHeader = (await at.header()).bitcoinMergedMiningHeader;
      cpvBitcoinHeaders.push(bitcoinHeader.length === 80 ? bitcoinHeader : EMPTY_BITCOIN_HEADER);
    }
    cpv = cpvBytes(cpvBitcoinHeaders);
    memo?.setCpv(topKey, cpv);
  }
  return withForkDetectionData(
    base,
    forkDetectionData({ cpv, uncleCounts, height: header.number }),
  );
}

/**
 * The uncle counts of `header` (hash `hash`) and its ancestors, newest first: the
 * `FORK_DETECTION_UNCLE_WINDOW` blocks before the one being hashed (callers are past block 449,
 * so there are always that many; those below the chain's first block, `first`, count none).
 */
async function recentUncleCounts(
  source: HeaderSource,
  hash: Uint8Array,
  header: BlockHeader,
  first: bigint,
  memo: AncestryMemo | undefined,
): Promise<readonly number[]> {
  const key = bytesToHex(hash);
  const known = memo?.uncleCounts(key);
  if (known !== undefined) return known;
  const older = memo?.uncleCounts(bytesToHex(header.parentHash));
  let counts: readonly number[];
  if (older !== undefined) {
    const next = [header.uncleCount];
    const n = Math.min(older.length, FORK_DETECTION_UNCLE_WINDOW - 1);
    for (let i = 0; i < n; i++) next.push(older[i]!);
    counts = next;
  } else {
    const down = header.number + 1n - BigInt(FORK_DETECTION_UNCLE_WINDOW);
    const ancestors = await ancestorHeaders(source, hash, header, down, first);
    const list = ancestors.slice(0, FORK_DETECTION_UNCLE_WINDOW).map((h) => h.uncleCount);
    if (down < first && ancestors[ancestors.length - 1]?.number === first)
      while (list.length < FORK_DETECTION_UNCLE_WINDOW) list.push(0);
    counts = list;
  }
  memo?.setUncleCounts(key, counts);
  return counts;
}

/** Like `hashForMergedMining`, but empty when an ancestor is missing (then no seal passes). */
export async function hashForMergedMiningOrEmpty(
  source: HeaderSource,
  header: BlockHeader,
  memo?: AncestryMemo,
): Promise<Uint8Array> {
  try {
    return await hashForMergedMining(source, header, memo);
  } catch (err) {
    if (err instanceof ChainError) return new Uint8Array(32);
    throw err;
  }
}

/**
 * Headers from `header` (hash `hash`) back to height `down` (not below 1, nor below the chain's
 * first block `first`), newest first.
 */
async function ancestorHeaders(
  source: HeaderSource,
  hash: Uint8Array,
  header: BlockHeader,
  down: bigint,
  first: bigint,
): Promise<BlockHeader[]> {
  const out: BlockHeader[] = [];
  let current: BlockHeader | undefined = header;
  let currentHash = hash;
  while (current !== undefined && current.number >= (down < 1n ? 1n : down)) {
    out.push(current);
    if (current.number <= first) break;
    currentHash = current.parentHash;
    current = await source.getHeaderByHash(currentHash);
  }
  return out;
}

/**
 * The block at `height` on the branch of the block `hash` (its header `header`, when the caller
 * has it): walked back by parent until the branch meets the canonical chain, then read from the
 * canonical index. The header is read only when asked for.
 */
async function ancestorAt(
  source: HeaderSource,
  hash: Uint8Array,
  header: BlockHeader | undefined,
  height: bigint,
): Promise<{ hash: Uint8Array; header: () => Promise<BlockHeader> }> {
  let current = header ?? (await source.getHeaderByHash(hash));
  let currentHash = hash;
  const missing = () => new ChainError(ChainErrorCode.CORRUPT, `no ancestor at height ${height}`);
  while (current !== undefined) {
    if (current.number === height) {
      const found = current;
      return { hash: currentHash, header: async () => found };
    }
    const canonical = await source.getCanonicalHash(current.number);
    if (canonical !== undefined && equalBytes(canonical, currentHash)) {
      const at = await source.getCanonicalHash(height);
      if (at === undefined) break;
      return {
        hash: at,
        header: async () => {
          const found = await source.getHeaderByHash(at);
          if (found === undefined) throw missing();
          return found;
        },
      };
    }
    const parent = await source.getHeaderByHash(current.parentHash);
    if (parent === undefined) break;
    currentHash = current.parentHash;
    current = parent;
  }
  throw missing();
}
