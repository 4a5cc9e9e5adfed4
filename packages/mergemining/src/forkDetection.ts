import { concatBytes, FORK_DETECTION_HEIGHT, lastIndexOf, writeU32BE } from "@nodex/types";
import { BITCOIN_HEADER_SIZE } from "./bitcoinHeader.js";
import { RSK_TAG } from "./coinbase.js";
import { doubleSha256 } from "./doubleSha256.js";
import { invalidArgument, MergeMiningError, MergeMiningErrorCode } from "./errors.js";

/** Checkpoints (CPV bytes) in fork-detection data: 7, 64 blocks apart. */
export const CPV_COUNT = 7;
export const CPV_INTERVAL = 64n;
/** Recent headers whose uncle counts are summed. */
export const FORK_DETECTION_UNCLE_WINDOW = 32;

/**
 * The heights whose Bitcoin headers give the 7 CPV bytes of block `height`'s fork-detection
 * data: 64·floor((height−1)/64) − 64·i for i = 0..6 (the parent is the best block).
 */
export function cpvHeights(height: bigint): bigint[] {
  checkHeight(height);
  const best = height - 1n;
  const top = best - (best % CPV_INTERVAL);
  return Array.from({ length: CPV_COUNT }, (_, i) => top - CPV_INTERVAL * BigInt(i));
}

function checkHeight(height: bigint): void {
  if (height < FORK_DETECTION_HEIGHT || height > 0xffffffffn) {
    throw invalidArgument(
      `fork-detection data exists from height ${FORK_DETECTION_HEIGHT} to 2^32-1, got ${height}`,
    );
  }
}

/**
 * The 12 bytes of fork-detection data (RSKIP110) of the block at `height`:
 * - bytes 0..6: the first raw byte of the double-SHA256 of the Bitcoin header of each block at
 *   `cpvHeights(height)`, in that order (`cpvBitcoinHeaders[i]` belongs to `cpvHeights(height)[i]`);
 * - byte 7: the sum of the uncle counts of the 32 most recent blocks (index 0 = parent), capped at 255;
 * - bytes 8..11: `height`, big-endian.
 */
export function forkDetectionData(
  opts: {
    readonly uncleCounts: readonly number[];
    readonly height: bigint;
  } & (
    | { readonly cpvBitcoinHeaders: readonly Uint8Array[] }
    /** The 7 CPV bytes, as `cpvBytes` gives them (they change once every 64 blocks). */
    | { readonly cpv: Uint8Array }
  ),
): Uint8Array {
  checkHeight(opts.height);
  const cpv = "cpv" in opts ? opts.cpv : cpvBytes(opts.cpvBitcoinHeaders);
  if (cpv.length !== CPV_COUNT) {
    throw invalidArgument(`want ${CPV_COUNT} CPV bytes, got ${cpv.length}`);
  }
  if (opts.uncleCounts.length !== FORK_DETECTION_UNCLE_WINDOW) {
    throw invalidArgument(
      `want the uncle counts of the ${FORK_DETECTION_UNCLE_WINDOW} most recent blocks, got ${opts.uncleCounts.length}`,
    );
  }
  const out = new Uint8Array(12);
  out.set(cpv, 0);
  let uncles = 0;
  for (const u of opts.uncleCounts) {
    if (!Number.isInteger(u) || u < 0) throw invalidArgument(`bad uncle count ${u}`);
    uncles += u;
  }
  out[7] = Math.min(uncles, 255);
  writeU32BE(out, 8, Number(opts.height));
  return out;
}

/**
 * The CPV bytes of fork-detection data: the first raw byte of the double-SHA256 of each of the
 * Bitcoin headers at `cpvHeights(height)`, in that order.
 */
export function cpvBytes(cpvBitcoinHeaders: readonly Uint8Array[]): Uint8Array {
  if (cpvBitcoinHeaders.length !== CPV_COUNT) {
    throw invalidArgument(`want ${CPV_COUNT} Bitcoin headers, got ${cpvBitcoinHeaders.length}`);
  }
  const out = new Uint8Array(CPV_COUNT);
  cpvBitcoinHeaders.forEach((h, i) => {
    if (h.length !== BITCOIN_HEADER_SIZE) {
      throw invalidArgument(
        `Bitcoin header ${i} is ${h.length} bytes, want ${BITCOIN_HEADER_SIZE}`,
      );
    }
    out[i] = doubleSha256(h)[0]!;
  });
  return out;
}

/**
 * The fork-detection data a miner wrote: the 12 bytes after the last `RSKBLOCK:` + base[0..20)
 * in a compressed (or full) coinbase. `hashForMergedMiningBase` is the keccak256 of the header
 * without merged-mining fields (`hashForMergedMiningBase` of @nodex/types).
 */
export function forkDetectionDataFromCoinbase(
  coinbase: Uint8Array,
  hashForMergedMiningBase: Uint8Array,
): Uint8Array {
  if (hashForMergedMiningBase.length !== 32) {
    throw invalidArgument("hashForMergedMiningBase is 32 bytes");
  }
  const needle = concatBytes(RSK_TAG, hashForMergedMiningBase.subarray(0, 20));
  const at = lastIndexOf(coinbase, needle);
  if (at < 0 || at + needle.length + 12 > coinbase.length) {
    throw new MergeMiningError(
      MergeMiningErrorCode.TAG_MISSING,
      "coinbase has no RSKBLOCK: tag with this block's hash followed by 12 bytes of fork-detection data",
    );
  }
  return coinbase.slice(at + needle.length, at + needle.length + 12);
}
