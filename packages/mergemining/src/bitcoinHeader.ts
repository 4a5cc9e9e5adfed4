import { bytesToUnprefixedHex, readU32LE, reverseBytes, writeU32LE } from "@nodex/types";
import { doubleSha256 } from "./doubleSha256.js";
import { malformed } from "./errors.js";

/** Size of a serialized Bitcoin block header. */
export const BITCOIN_HEADER_SIZE = 80;

/**
 * A Bitcoin block header. Hashes are in raw (internal, serialized) byte order, the reverse of
 * the hex block explorers show. Integers are unsigned 32-bit (version as signed, like Core).
 */
export interface BitcoinHeader {
  readonly version: number;
  readonly prevHash: Uint8Array;
  readonly merkleRoot: Uint8Array;
  readonly time: number;
  readonly bits: number;
  readonly nonce: number;
}

/** Parses exactly 80 bytes. */
export function parseBitcoinHeader(bytes: Uint8Array): BitcoinHeader {
  if (bytes.length !== BITCOIN_HEADER_SIZE) {
    throw malformed(`a Bitcoin header is ${BITCOIN_HEADER_SIZE} bytes, got ${bytes.length}`, {
      length: bytes.length,
    });
  }
  return {
    version: readU32LE(bytes, 0) | 0,
    prevHash: bytes.slice(4, 36),
    merkleRoot: bytes.slice(36, 68),
    time: readU32LE(bytes, 68),
    bits: readU32LE(bytes, 72),
    nonce: readU32LE(bytes, 76),
  };
}

export function encodeBitcoinHeader(h: BitcoinHeader): Uint8Array {
  if (h.prevHash.length !== 32 || h.merkleRoot.length !== 32) {
    throw malformed("prevHash and merkleRoot must be 32 bytes");
  }
  const out = new Uint8Array(BITCOIN_HEADER_SIZE);
  writeU32LE(out, 0, h.version);
  out.set(h.prevHash, 4);
  out.set(h.merkleRoot, 36);
  writeU32LE(out, 68, h.time);
  writeU32LE(out, 72, h.bits);
  writeU32LE(out, 76, h.nonce);
  return out;
}

/** Double-SHA256 of the 80-byte header, raw digest order. */
export function bitcoinHash(header: Uint8Array | BitcoinHeader): Uint8Array {
  const bytes = header instanceof Uint8Array ? header : encodeBitcoinHeader(header);
  if (bytes.length !== BITCOIN_HEADER_SIZE) {
    throw malformed(`a Bitcoin header is ${BITCOIN_HEADER_SIZE} bytes, got ${bytes.length}`);
  }
  return doubleSha256(bytes);
}

/** A raw-order hash as the hex block explorers and RPCs show (byte-reversed), without `0x`. */
export function hashToDisplayHex(rawHash: Uint8Array): string {
  return bytesToUnprefixedHex(reverseBytes(rawHash));
}
