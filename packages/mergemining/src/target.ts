import { bigintToBytesBE, bytesToBigintBE } from "@nodex/types";
import { invalidArgument } from "./errors.js";

const TWO_256 = 1n << 256n;

/** The result of decoding a compact target, with Bitcoin Core's two flags. */
export interface CompactTarget {
  readonly target: bigint;
  /** The sign bit (0x00800000) was set on a non-zero mantissa. */
  readonly negative: boolean;
  /** The value does not fit in 256 bits. */
  readonly overflow: boolean;
}

/**
 * Decodes compact nBits as Bitcoin Core's `arith_uint256::SetCompact`: exponent = top byte,
 * mantissa = low 23 bits, bit 23 the sign. `target` is the unsigned magnitude, truncated to
 * 256 bits like Core when `overflow` is set.
 */
export function compactToTarget(bits: number): CompactTarget {
  const compact = bits >>> 0;
  const size = compact >>> 24;
  let word = compact & 0x007fffff;
  let target: bigint;
  if (size <= 3) {
    word >>>= 8 * (3 - size);
    target = BigInt(word);
  } else {
    target = BigInt(word) << BigInt(8 * (size - 3));
  }
  const negative = word !== 0 && (compact & 0x00800000) !== 0;
  const overflow =
    word !== 0 && (size > 34 || (word > 0xff && size > 33) || (word > 0xffff && size > 32));
  return { target: target % TWO_256, negative, overflow };
}

/**
 * Encodes a target as compact nBits, Bitcoin Core's `arith_uint256::GetCompact`: the mantissa
 * never has its sign bit set (it is shifted into the exponent instead). `negative` sets the sign.
 */
export function targetToCompact(target: bigint, negative = false): number {
  if (target < 0n || target >= TWO_256) {
    throw invalidArgument("a target is an unsigned 256-bit integer", { target: target.toString() });
  }
  let size = 0;
  for (let t = target; t > 0n; t >>= 8n) size++;
  let compact: number;
  if (size <= 3) {
    compact = Number(target) << (8 * (3 - size));
  } else {
    compact = Number(target >> BigInt(8 * (size - 3)));
  }
  if (compact & 0x00800000) {
    compact >>>= 8;
    size++;
  }
  compact = (compact | (size << 24)) >>> 0;
  if (negative && (compact & 0x007fffff) !== 0) compact = (compact | 0x00800000) >>> 0;
  return compact >>> 0;
}

/**
 * The chain's target for a difficulty: floor(2^256 / max(difficulty, 3)). A difficulty of 1 or 2
 * counts as 3, so the target always fits in 256 bits.
 */
export function difficultyToTarget(difficulty: bigint): bigint {
  if (difficulty < 0n) {
    throw invalidArgument("difficulty must not be negative", { difficulty: difficulty.toString() });
  }
  return TWO_256 / (difficulty < 3n ? 3n : difficulty);
}

/** A target as 32 big-endian bytes (how `mnr_getWork` shows it). */
export function targetToBytes(target: bigint): Uint8Array {
  if (target < 0n || target >= TWO_256) {
    throw invalidArgument("a target is an unsigned 256-bit integer");
  }
  return bigintToBytesBE(target, 32);
}

/**
 * Whether a raw-order block hash meets a target given as 32 big-endian bytes: the hash read
 * byte-reversed (display order) as a big-endian number must be ≤ the target. No bigint.
 */
export function hashMeetsTarget(rawHash: Uint8Array, targetBytes: Uint8Array): boolean {
  for (let i = 0; i < 32; i++) {
    const h = rawHash[31 - i]!;
    const t = targetBytes[i]!;
    if (h !== t) return h < t;
  }
  return true;
}

/** The display-order value of a raw-order hash, as a bigint. */
export function hashToBigint(rawHash: Uint8Array): bigint {
  return bytesToBigintBE(Uint8Array.from(rawHash).reverse());
}
