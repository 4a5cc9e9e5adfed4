import { bytesToUnprefixedHex, decodeHexDigits } from "./hex.js";

// Byte-string helpers shared by the packages: concatenation, search, fixed-width integers.

/** The parts one after the other, in a new array. */
export function concatBytes(...parts: readonly Uint8Array[]): Uint8Array {
  let n = 0;
  for (const p of parts) n += p.length;
  const out = new Uint8Array(n);
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

/** A reversed copy. */
export function reverseBytes(b: Uint8Array): Uint8Array {
  const out = new Uint8Array(b.length);
  for (let i = 0; i < b.length; i++) out[i] = b[b.length - 1 - i]!;
  return out;
}

/** Whether two byte strings are the same bytes. */
export function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/**
 * `b` without its leading zero bytes: `b` itself when it has none, else a copy of the rest when
 * `b` is 64 bytes or fewer (a `subarray` of such an array, which V8 keeps inside its object,
 * would move it out of the heap first: a malloc), a view of the same memory when longer.
 * `unpadBytes` of `@ethereumjs/util` gives the same bytes, but copies the rest once for every
 * zero it drops.
 */
export function trimLeadingZeros(b: Uint8Array): Uint8Array {
  let i = 0;
  while (i < b.length && b[i] === 0) i++;
  if (i === 0) return b;
  return b.length <= 64 ? b.slice(i) : b.subarray(i);
}

/** Offset of the last occurrence of `needle` in `haystack`, or -1. */
export function lastIndexOf(haystack: Uint8Array, needle: Uint8Array): number {
  const n = needle.length;
  outer: for (let i = haystack.length - n; i >= 0; i--) {
    for (let j = 0; j < n; j++) if (haystack[i + j] !== needle[j]) continue outer;
    return i;
  }
  return -1;
}

/** The unsigned 32-bit little-endian integer at offset `o`. */
export function readU32LE(b: Uint8Array, o: number): number {
  return (b[o]! | (b[o + 1]! << 8) | (b[o + 2]! << 16) | (b[o + 3]! << 24)) >>> 0;
}

/** Writes `v` as an unsigned 32-bit little-endian integer at offset `o`. */
export function writeU32LE(b: Uint8Array, o: number, v: number): void {
  b[o] = v & 0xff;
  b[o + 1] = (v >>> 8) & 0xff;
  b[o + 2] = (v >>> 16) & 0xff;
  b[o + 3] = (v >>> 24) & 0xff;
}

/** The unsigned 32-bit big-endian integer at offset `o`. */
export function readU32BE(b: Uint8Array, o: number): number {
  return ((b[o]! << 24) | (b[o + 1]! << 16) | (b[o + 2]! << 8) | b[o + 3]!) >>> 0;
}

/** Writes `v` as an unsigned 32-bit big-endian integer at offset `o`. */
export function writeU32BE(b: Uint8Array, o: number, v: number): void {
  b[o] = (v >>> 24) & 0xff;
  b[o + 1] = (v >>> 16) & 0xff;
  b[o + 2] = (v >>> 8) & 0xff;
  b[o + 3] = v & 0xff;
}

/**
 * Writes `v` modulo 2^64 as an unsigned 64-bit big-endian integer at offset `o`, as a
 * `DataView`'s `setBigUint64` does, without asking `b` for its buffer: a short array (64 bytes
 * or fewer, which V8 keeps inside its object) is moved out of the heap when asked, a malloc.
 */
export function writeU64BE(b: Uint8Array, o: number, v: bigint): void {
  writeU32BE(b, o, Number(BigInt.asUintN(64, v) >> 32n));
  writeU32BE(b, o + 4, Number(v & 0xffffffffn));
}

/** Big-endian unsigned integer of the bytes (leading zeros allowed; none is zero). */
export function bytesToBigintBE(b: Uint8Array): bigint {
  if (b.length <= 6) {
    let n = 0;
    for (let i = 0; i < b.length; i++) n = n * 256 + b[i]!;
    return BigInt(n);
  }
  return BigInt(`0x${bytesToUnprefixedHex(b)}`);
}

/** `v` as `len` big-endian bytes, zero-padded on the left; `v` must fit. */
export function bigintToBytesBE(v: bigint, len: number): Uint8Array {
  const out = new Uint8Array(len);
  if (v <= 0xffffffffn) {
    for (let i = len - 1, x = Number(v); i >= 0 && x > 0; i--, x = Math.floor(x / 256))
      out[i] = x % 256;
    return out;
  }
  const hex = v.toString(16);
  const digits = decodeHexDigits(hex.length % 2 === 1 ? `0${hex}` : hex, 0)!;
  out.set(
    digits.length > len ? digits.subarray(digits.length - len) : digits,
    len - digits.length < 0 ? 0 : len - digits.length,
  );
  return out;
}
