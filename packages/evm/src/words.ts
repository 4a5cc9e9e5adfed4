/**
 * EVM words (BigInts, 0 ≤ w < 2²⁵⁶) to and from big-endian bytes, for the opcode handlers put in
 * the library's table (`fastOpcodes.ts`) and the interpreter of calls (`interpreter/`).
 */

/** BigInt of each byte value. */
export const SMALL: readonly bigint[] = Array.from({ length: 256 }, (_, i) => BigInt(i));

const SCRATCH = new Uint8Array(32);
const SCRATCH_VIEW = new DataView(SCRATCH.buffer);

/**
 * The word held by `size` (≤ 32) big-endian bytes of `buf` from `offset`: leading zero bytes
 * skipped, up to 6 significant bytes through a number, more as 64-bit limbs (a third of the
 * time of a hex string's parse).
 */
export function wordOf(buf: Uint8Array, offset: number, size: number): bigint {
  let i = offset;
  const end = offset + size;
  while (i < end && buf[i] === 0) i++;
  const n = end - i;
  if (n <= 6) {
    let v = 0;
    for (; i < end; i++) v = v * 256 + buf[i]!;
    return v < 256 ? SMALL[v]! : BigInt(v);
  }
  SCRATCH.fill(0, 0, 32 - n);
  for (let j = 32 - n; j < 32; j++, i++) SCRATCH[j] = buf[i]!;
  const d = SCRATCH_VIEW.getBigUint64(24);
  if (n <= 8) return d;
  const c = SCRATCH_VIEW.getBigUint64(16);
  if (n <= 16) return (c << 64n) | d;
  const b = SCRATCH_VIEW.getBigUint64(8);
  if (n <= 24) return (b << 128n) | (c << 64n) | d;
  return (SCRATCH_VIEW.getBigUint64(0) << 192n) | (b << 128n) | (c << 64n) | d;
}

/** The unsigned integer of up to 32 big-endian bytes. */
export function bytesValue(bytes: Uint8Array): bigint {
  return wordOf(bytes, 0, bytes.length);
}

/** A hex digit's value (lowercase, as `bigint.toString(16)` writes them). */
function nibble(code: number): number {
  return code < 58 ? code - 48 : code - 87;
}

/** Writes `word` as 32 big-endian bytes at `offset` of `buf`. */
export function writeWord(buf: Uint8Array, offset: number, word: bigint): void {
  buf.fill(0, offset, offset + 32);
  if (word === 0n) return;
  const hex = word.toString(16);
  let i = hex.length - 1;
  let j = offset + 31;
  for (; i > 0; i -= 2, j--)
    buf[j] = (nibble(hex.charCodeAt(i - 1)) << 4) | nibble(hex.charCodeAt(i));
  if (i === 0) buf[j] = nibble(hex.charCodeAt(0));
}

/**
 * The 32-byte big-endian form of a word, from its hex digits: a quarter of the time of shifting
 * it into 64-bit parts, each shift a new BigInt.
 */
export function wordBytes(word: bigint): Uint8Array {
  const out = new Uint8Array(32);
  writeWord(out, 0, word);
  return out;
}
