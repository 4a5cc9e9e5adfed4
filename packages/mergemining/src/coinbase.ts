import { bytesToBigintBE, concatBytes, lastIndexOf } from "@nodex/types";
import { MergeMiningError, MergeMiningErrorCode, malformed } from "./errors.js";
import { sha256, sha256FromMidstate, sha256Midstate } from "./sha256.js";

/** The merged-mining tag, ASCII `RSKBLOCK:`. */
export const RSK_TAG: Uint8Array = new TextEncoder().encode("RSKBLOCK:");
/** Bytes of the byte-count and midstate fields in front of the tail of a compressed coinbase. */
export const COMPRESSED_COINBASE_PREFIX_SIZE = 40;
/** At most this many bytes may follow the 32-byte hash after the tag. */
export const MAX_BYTES_AFTER_MERGED_MINING_HASH = 128;

/**
 * SHA-256 messages are shorter than 2^64 bits. A larger count in a compressed coinbase would wrap
 * in the length padding and give the same txid as a smaller one, so it is rejected.
 */
export const MAX_SHA256_BYTES = 1n << 61n;

/** The three parts of a compressed coinbase. */
export interface CompressedCoinbaseParts {
  /** Bytes of the coinbase already hashed into `midstate` (a multiple of 64). */
  readonly hashedLength: bigint;
  /** SHA-256 state H0..H7 (big-endian words) after `hashedLength` bytes. */
  readonly midstate: Uint8Array;
  /** The rest of the coinbase, unhashed. */
  readonly tail: Uint8Array;
}

/**
 * Compresses a serialized coinbase (without witness) as a merged-mining proof carries it:
 * 8-byte big-endian byte count ‖ 32-byte SHA-256 midstate ‖ tail, hashing 64·floor(p/64) bytes
 * where p is the offset of the last `RSKBLOCK:`, so that tag starts within the tail's first 64
 * bytes. Throws `MERGEMINING_TAG_MISSING` without a tag.
 */
export function compressCoinbase(coinbase: Uint8Array): Uint8Array {
  const p = lastIndexOf(coinbase, RSK_TAG);
  if (p < 0) {
    throw new MergeMiningError(MergeMiningErrorCode.TAG_MISSING, "coinbase has no RSKBLOCK: tag");
  }
  return compressCoinbaseAt(coinbase, p - (p % 64));
}

/**
 * Compresses a coinbase with its first `hashedLength` bytes (a multiple of 64) in the midstate.
 * The lower-level form of `compressCoinbase`; most callers want that one.
 */
export function compressCoinbaseAt(coinbase: Uint8Array, hashedLength: number): Uint8Array {
  if (hashedLength % 64 !== 0 || hashedLength < 0 || hashedLength > coinbase.length) {
    throw malformed(
      `cannot hash ${hashedLength} bytes of a ${coinbase.length}-byte coinbase into a midstate`,
    );
  }
  const count = new Uint8Array(8);
  new DataView(count.buffer).setBigUint64(0, BigInt(hashedLength));
  return concatBytes(
    count,
    sha256Midstate(coinbase.subarray(0, hashedLength)),
    coinbase.subarray(hashedLength),
  );
}

/**
 * Splits a compressed coinbase. Throws `MERGEMINING_MALFORMED` when it is shorter than the 40
 * bytes of count and midstate, or when the count is not a multiple of 64.
 */
export function splitCompressedCoinbase(compressed: Uint8Array): CompressedCoinbaseParts {
  if (compressed.length < COMPRESSED_COINBASE_PREFIX_SIZE) {
    throw malformed(
      `a compressed coinbase has ${COMPRESSED_COINBASE_PREFIX_SIZE} bytes of count and midstate, got ${compressed.length} bytes`,
    );
  }
  const hashedLength = bytesToBigintBE(compressed.subarray(0, 8));
  if (hashedLength % 64n !== 0n) {
    throw malformed(
      `the byte count of a coinbase midstate must be a multiple of 64, got ${hashedLength}`,
    );
  }
  if (
    hashedLength + BigInt(compressed.length - COMPRESSED_COINBASE_PREFIX_SIZE) >=
    MAX_SHA256_BYTES
  ) {
    throw malformed(`the byte count of a coinbase midstate is too large: ${hashedLength}`);
  }
  return {
    hashedLength,
    midstate: compressed.slice(8, 40),
    tail: compressed.slice(40),
  };
}

/**
 * The coinbase txid (raw order) from a compressed coinbase: the first SHA-256 is finished from
 * the midstate over the tail with the total length, then hashed once more.
 */
export function compressedCoinbaseTxid(compressed: Uint8Array): Uint8Array {
  const { hashedLength, midstate, tail } = splitCompressedCoinbase(compressed);
  return sha256(sha256FromMidstate(midstate, hashedLength, tail));
}

/**
 * The 32 bytes after the last `RSKBLOCK:` of a coinbase (full or compressed), the
 * hashForMergedMining a miner committed to, or `undefined` when no tag is followed by 32 bytes.
 * This is how the `mnr_submit*` methods find their block.
 */
export function extractTaggedHash(coinbase: Uint8Array): Uint8Array | undefined {
  const p = lastIndexOf(coinbase, RSK_TAG);
  if (p < 0 || p + RSK_TAG.length + 32 > coinbase.length) return undefined;
  return coinbase.slice(p + RSK_TAG.length, p + RSK_TAG.length + 32);
}
