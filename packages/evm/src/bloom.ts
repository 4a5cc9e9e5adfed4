import { keccak256, type Log } from "@nodex/types";

/** Adds one value to a 2048-bit bloom: three bits from pairs of bytes of its keccak256. */
function addToBloom(bloom: Uint8Array, value: Uint8Array): void {
  const hash = keccak256(value);
  for (let i = 0; i < 6; i += 2) {
    const bit = ((hash[i]! << 8) | hash[i + 1]!) & 2047;
    bloom[256 - 1 - (bit >> 3)]! |= 1 << (bit & 7);
  }
}

/** The logs bloom of a list of logs: each address and each topic. */
export function logsBloom(logs: readonly Log[]): Uint8Array {
  const bloom = new Uint8Array(256);
  for (const log of logs) {
    addToBloom(bloom, log.address);
    for (const topic of log.topics) addToBloom(bloom, topic);
  }
  return bloom;
}

/** ORs `other` into `bloom` (a block's bloom from its receipts'). */
export function orBloom(bloom: Uint8Array, other: Uint8Array): void {
  for (let i = 0; i < 256; i++) bloom[i]! |= other[i]!;
}

/**
 * Where a value's three bits sit in any bloom: byte index and mask, three times. Computing
 * them once saves a keccak256 for each bloom tested (eth_getLogs tests one per block).
 */
export type BloomBits = readonly [number, number, number, number, number, number];

export function bloomBits(value: Uint8Array): BloomBits {
  const hash = keccak256(value);
  const out: number[] = [];
  for (let i = 0; i < 6; i += 2) {
    const bit = ((hash[i]! << 8) | hash[i + 1]!) & 2047;
    out.push(256 - 1 - (bit >> 3), 1 << (bit & 7));
  }
  return out as unknown as BloomBits;
}

/** Whether the value of `bits` may be in `bloom` (false means it certainly is not). */
export function bloomHasBits(bloom: Uint8Array, bits: BloomBits): boolean {
  return (
    (bloom[bits[0]]! & bits[1]) !== 0 &&
    (bloom[bits[2]]! & bits[3]) !== 0 &&
    (bloom[bits[4]]! & bits[5]) !== 0
  );
}

/** Whether `value` may be in `bloom` (false means it certainly is not). */
export function bloomMayContain(bloom: Uint8Array, value: Uint8Array): boolean {
  return bloomHasBits(bloom, bloomBits(value));
}
