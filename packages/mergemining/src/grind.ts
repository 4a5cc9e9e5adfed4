import { BITCOIN_HEADER_SIZE } from "./bitcoinHeader.js";
import { invalidArgument } from "./errors.js";
import { compressBlock, compressWords, SHA256_IV } from "./sha256.js";

function bswap(x: number): number {
  return ((x & 0xff) << 24) | ((x & 0xff00) << 8) | ((x >>> 8) & 0xff00) | (x >>> 24);
}

/**
 * Searches header nonces `from` … `to − 1` (inclusive start, exclusive end, within 0 … 2^32) for
 * one whose double-SHA256 meets `targetBytes` (32 bytes, big-endian). Returns the nonce, or −1.
 *
 * The first 64 header bytes do not change with the nonce, so their SHA-256 state is computed once;
 * each attempt is then two compressions on reused word buffers, and the comparison runs on the
 * digest words (no bigint, no allocation).
 */
export function grindNonce(
  header: Uint8Array,
  targetBytes: Uint8Array,
  from: number,
  to: number,
): number {
  if (header.length !== BITCOIN_HEADER_SIZE || targetBytes.length !== 32) {
    throw invalidArgument("want an 80-byte header and a 32-byte target");
  }
  if (!(Number.isInteger(from) && Number.isInteger(to) && 0 <= from && to <= 2 ** 32)) {
    throw invalidArgument(`bad nonce range ${from} … ${to}`);
  }
  const mid = Uint32Array.from(SHA256_IV);
  compressBlock(mid, header, 0);
  const t = new Uint32Array(8);
  for (let i = 0; i < 8; i++) {
    t[i] =
      (targetBytes[4 * i]! << 24) |
      (targetBytes[4 * i + 1]! << 16) |
      (targetBytes[4 * i + 2]! << 8) |
      targetBytes[4 * i + 3]!;
  }
  const w1 = new Uint32Array(64);
  const w2 = new Uint32Array(64);
  for (let i = 0; i < 3; i++) {
    const o = 64 + 4 * i;
    w1[i] = (header[o]! << 24) | (header[o + 1]! << 16) | (header[o + 2]! << 8) | header[o + 3]!;
  }
  w1[4] = 0x80000000;
  w1[15] = 640;
  w2[8] = 0x80000000;
  w2[15] = 256;
  const s1 = new Uint32Array(8);
  const s2 = new Uint32Array(8);
  for (let nonce = from; nonce < to; nonce++) {
    w1[3] = bswap(nonce);
    s1.set(mid);
    compressWords(s1, w1);
    for (let i = 0; i < 8; i++) w2[i] = s1[i]!;
    s2.set(SHA256_IV);
    compressWords(s2, w2);
    // Display order: digest bytes reversed, so the most significant word is bswap(H7).
    let meets = true;
    for (let i = 0; i < 8; i++) {
      const h = bswap(s2[7 - i]!) >>> 0;
      const tt = t[i]!;
      if (h !== tt) {
        meets = h < tt;
        break;
      }
    }
    if (meets) return nonce;
  }
  return -1;
}
