import {
  bytesToUnprefixedHex,
  concatBytes,
  equalBytes,
  lastIndexOf,
  reverseBytes,
} from "@nodex/types";
import { BITCOIN_HEADER_SIZE } from "./bitcoinHeader.js";
import {
  COMPRESSED_COINBASE_PREFIX_SIZE,
  MAX_BYTES_AFTER_MERGED_MINING_HASH,
  MAX_SHA256_BYTES,
  RSK_TAG,
} from "./coinbase.js";
import { doubleSha256 } from "./doubleSha256.js";
import { invalidArgument } from "./errors.js";
import { coinbaseBranch } from "./merkle.js";
import { sha256, sha256FromMidstate } from "./sha256.js";
import { difficultyToTarget, hashMeetsTarget, targetToBytes } from "./target.js";

/** Longest Merkle proof accepted: 30 levels of 32 bytes (RSKIP180). */
export const MAX_MERKLE_PROOF_SIZE = 960;

/** Why a merged-mining proof was rejected, in the order the checks run. */
export const ProofFailure = {
  /** The Bitcoin header is not exactly 80 bytes. */
  HEADER_LENGTH: "HEADER_LENGTH",
  /** The Merkle proof's length is not a multiple of 32. */
  PROOF_LENGTH: "PROOF_LENGTH",
  /** The Merkle proof is longer than 960 bytes. */
  PROOF_TOO_LONG: "PROOF_TOO_LONG",
  /** The header's double-SHA256, read as a number, is above 2^256 / max(difficulty, 3). */
  POW_ABOVE_TARGET: "POW_ABOVE_TARGET",
  /**
   * The compressed coinbase lacks its 40 bytes of count and midstate, or the count is not a
   * multiple of 64, or count + tail reach 2^61 bytes (2^64 bits, beyond SHA-256).
   */
  COINBASE_MALFORMED: "COINBASE_MALFORMED",
  /** No `RSKBLOCK:` at all in the coinbase tail. */
  TAG_MISSING: "TAG_MISSING",
  /** `RSKBLOCK:` is there, but never followed by this block's hashForMergedMining. */
  TAG_HASH_MISMATCH: "TAG_HASH_MISMATCH",
  /** The last `RSKBLOCK:` + hash starts at tail offset 64 or later. */
  TAG_TOO_FAR: "TAG_TOO_FAR",
  /** Another `RSKBLOCK:` follows the one with this block's hash. */
  TAG_NOT_LAST: "TAG_NOT_LAST",
  /** More than 128 bytes follow the 32-byte hash. */
  TOO_MANY_BYTES_AFTER_TAG: "TOO_MANY_BYTES_AFTER_TAG",
  /** The whole coinbase (hashed count + tail) is 64 bytes or shorter. */
  COINBASE_TOO_SHORT: "COINBASE_TOO_SHORT",
  /** A Merkle step's two 32-byte halves read as a valid 64-byte Bitcoin transaction. */
  MERKLE_64_BYTE_TRANSACTION: "MERKLE_64_BYTE_TRANSACTION",
  /** The branch from the coinbase txid does not lead to the header's Merkle root. */
  MERKLE_ROOT_MISMATCH: "MERKLE_ROOT_MISMATCH",
} as const;
export type ProofFailure = (typeof ProofFailure)[keyof typeof ProofFailure];

export interface MergedMiningProofInput {
  /** The 32 bytes the miner committed to after `RSKBLOCK:` (fork-detection bytes included). */
  readonly hashForMergedMining: Uint8Array;
  readonly difficulty: bigint;
  /** `bitcoinMergedMiningHeader`: the 80-byte Bitcoin header. */
  readonly bitcoinHeader: Uint8Array;
  /** `bitcoinMergedMiningCoinbaseTransaction`: the compressed coinbase. */
  readonly coinbase: Uint8Array;
  /** `bitcoinMergedMiningMerkleProof`: byte-reversed siblings, bottom-up. */
  readonly merkleProof: Uint8Array;
}

export type ProofVerification =
  | { readonly ok: true; readonly bitcoinHash: Uint8Array }
  | { readonly ok: false; readonly reason: ProofFailure; readonly message: string };

function fail(reason: ProofFailure, message: string): ProofVerification {
  return { ok: false, reason, message };
}

const MAX_SATOSHIS = 21_000_000n * 100_000_000n;

/**
 * Whether 64 bytes parse as a one-input, one-output Bitcoin transaction (the leaf/node
 * confusion of the Merkle tree). The reference node's exact rules: checked on the two halves as
 * it holds them (display order), with its signed-byte reads.
 */
export function isValid64ByteTransaction(bytes64: Uint8Array): boolean {
  const b = bytes64;
  const s8 = (i: number) => (b[i]! << 24) >> 24;
  let o = 4; // version
  if (s8(o) !== 1) return false; // one input
  o += 1 + 32; // count, outpoint hash
  const index = (b[o]! | (b[o + 1]! << 8) | (b[o + 2]! << 16) | (b[o + 3]! << 24)) >>> 0;
  o += 4;
  if (index > 1_000_000 && index !== 0xffffffff) return false;
  const inScript = s8(o);
  o += 1;
  if (inScript < 0 || inScript > 4) return false;
  o += inScript + 4; // script, sequence
  if (s8(o) !== 1) return false; // one output
  o += 1;
  const value = new DataView(b.buffer, b.byteOffset + o, 8).getBigInt64(0, true);
  o += 8;
  if (value < 1n || value > MAX_SATOSHIS) return false;
  const outScript = s8(o);
  if (outScript < 0 || outScript > 4) return false;
  return inScript + outScript === 4;
}

/**
 * Verifies a merged-mining proof under the reference's current rules (RSKIP92/98/180 and the
 * coinbase rules of `ProofOfWorkRule`). Never throws on bad proof bytes: each failure has its
 * reason. Throws `MERGEMINING_INVALID_ARGUMENT` for a hashForMergedMining that is not 32 bytes
 * or a negative difficulty.
 */
export function verifyMergedMiningProof(input: MergedMiningProofInput): ProofVerification {
  const { hashForMergedMining, difficulty, bitcoinHeader, coinbase, merkleProof } = input;
  if (hashForMergedMining.length !== 32) {
    throw invalidArgument(`hashForMergedMining is 32 bytes, got ${hashForMergedMining.length}`);
  }
  const target = targetToBytes(difficultyToTarget(difficulty));

  if (bitcoinHeader.length !== BITCOIN_HEADER_SIZE) {
    return fail(
      ProofFailure.HEADER_LENGTH,
      `Bitcoin header is ${bitcoinHeader.length} bytes, want ${BITCOIN_HEADER_SIZE}`,
    );
  }
  if (merkleProof.length % 32 !== 0) {
    return fail(
      ProofFailure.PROOF_LENGTH,
      `Merkle proof is ${merkleProof.length} bytes, not a multiple of 32`,
    );
  }
  if (merkleProof.length > MAX_MERKLE_PROOF_SIZE) {
    return fail(
      ProofFailure.PROOF_TOO_LONG,
      `Merkle proof is ${merkleProof.length} bytes, at most ${MAX_MERKLE_PROOF_SIZE}`,
    );
  }

  const bitcoinHash = doubleSha256(bitcoinHeader);
  if (!hashMeetsTarget(bitcoinHash, target)) {
    return fail(
      ProofFailure.POW_ABOVE_TARGET,
      `Bitcoin header hash ${toDisplay(bitcoinHash)} is above the target for difficulty ${difficulty}`,
    );
  }

  if (coinbase.length < COMPRESSED_COINBASE_PREFIX_SIZE) {
    return fail(
      ProofFailure.COINBASE_MALFORMED,
      `compressed coinbase is ${coinbase.length} bytes, shorter than its ${COMPRESSED_COINBASE_PREFIX_SIZE}-byte count and midstate`,
    );
  }
  const view = new DataView(coinbase.buffer, coinbase.byteOffset, 8);
  const hashedLength = view.getBigUint64(0);
  if (hashedLength % 64n !== 0n) {
    return fail(
      ProofFailure.COINBASE_MALFORMED,
      `compressed coinbase byte count ${hashedLength} is not a multiple of 64`,
    );
  }
  const tail = coinbase.subarray(COMPRESSED_COINBASE_PREFIX_SIZE);
  if (hashedLength + BigInt(tail.length) >= MAX_SHA256_BYTES) {
    // The reference reads the count as a signed long and lets the bit length wrap: a count with
    // any of its top three bits set would give the same txid as without. Rejected here.
    return fail(
      ProofFailure.COINBASE_MALFORMED,
      `compressed coinbase byte count ${hashedLength} is beyond a SHA-256 message length`,
    );
  }

  const expected = concatBytes(RSK_TAG, hashForMergedMining);
  const at = lastIndexOf(tail, expected);
  const lastTag = lastIndexOf(tail, RSK_TAG);
  if (at < 0) {
    return lastTag < 0
      ? fail(ProofFailure.TAG_MISSING, "coinbase tail has no RSKBLOCK: tag")
      : fail(
          ProofFailure.TAG_HASH_MISMATCH,
          `coinbase tail has RSKBLOCK: but not followed by hashForMergedMining ${bytesToUnprefixedHex(hashForMergedMining)}`,
        );
  }
  if (at >= 64) {
    return fail(ProofFailure.TAG_TOO_FAR, `RSKBLOCK: tag at tail offset ${at}, must be below 64`);
  }
  if (lastTag !== at) {
    return fail(
      ProofFailure.TAG_NOT_LAST,
      `another RSKBLOCK: tag at tail offset ${lastTag} follows the one at ${at}`,
    );
  }
  const after = tail.length - at - expected.length;
  if (after > MAX_BYTES_AFTER_MERGED_MINING_HASH) {
    return fail(
      ProofFailure.TOO_MANY_BYTES_AFTER_TAG,
      `${after} bytes after the merged-mining hash, at most ${MAX_BYTES_AFTER_MERGED_MINING_HASH}`,
    );
  }
  const total = hashedLength + BigInt(tail.length);
  if (total <= 64n) {
    return fail(
      ProofFailure.COINBASE_TOO_SHORT,
      `coinbase is ${total} bytes, must be longer than 64`,
    );
  }

  let acc = sha256(sha256FromMidstate(coinbase.subarray(8, 40), hashedLength, tail));
  const pair = new Uint8Array(64);
  const display = new Uint8Array(64);
  for (let o = 0; o < merkleProof.length; o += 32) {
    const sibling = merkleProof.subarray(o, o + 32);
    for (let i = 0; i < 32; i++) {
      pair[i] = acc[i]!;
      pair[32 + i] = sibling[31 - i]!;
      display[i] = acc[31 - i]!;
      display[32 + i] = sibling[i]!;
    }
    if (isValid64ByteTransaction(display)) {
      return fail(
        ProofFailure.MERKLE_64_BYTE_TRANSACTION,
        `Merkle step ${o / 32} combines two hashes that form a valid 64-byte transaction`,
      );
    }
    acc = doubleSha256(pair);
  }
  if (!equalBytes(acc, bitcoinHeader.subarray(36, 68))) {
    return fail(
      ProofFailure.MERKLE_ROOT_MISMATCH,
      `Merkle branch leads to ${toDisplay(acc)}, header root is ${toDisplay(bitcoinHeader.subarray(36, 68))}`,
    );
  }
  return { ok: true, bitcoinHash };
}

function toDisplay(raw: Uint8Array): string {
  return bytesToUnprefixedHex(reverseBytes(raw));
}

/**
 * The RSKIP92 proof from a block's full txid list (raw order, coinbase first): the coinbase's
 * siblings bottom-up, each byte-reversed, concatenated.
 */
export function buildMerkleProof(txids: readonly Uint8Array[]): Uint8Array {
  for (const t of txids) if (t.length !== 32) throw invalidArgument("a txid is 32 bytes");
  return concatBytes(...coinbaseBranch(txids).map(reverseBytes));
}

/**
 * The RSKIP92 proof from a branch as `mnr_submitBitcoinBlockPartialMerkle` receives it: raw-order
 * hashes, the first the coinbase txid, then its siblings bottom-up. The coinbase txid itself is not
 * part of the proof.
 */
export function merkleProofFromBranch(hashes: readonly Uint8Array[]): Uint8Array {
  if (hashes.length === 0) throw invalidArgument("The list of merkle hashes can't be empty");
  for (const h of hashes) if (h.length !== 32) throw invalidArgument("a Merkle hash is 32 bytes");
  return concatBytes(...hashes.slice(1).map(reverseBytes));
}

/**
 * The Bitcoin/Nodex timestamp link (RSKIP179): |Bitcoin header time − block timestamp| must be
 * below `limitSeconds` (300 on mainnet and regtest, 7,200 on testnet; see `NETWORK_PARAMS`).
 */
export function checkTimestampLink(opts: {
  readonly bitcoinHeader: Uint8Array;
  readonly timestamp: bigint;
  readonly limitSeconds: number;
}): { readonly ok: true } | { readonly ok: false; readonly message: string } {
  if (opts.bitcoinHeader.length !== BITCOIN_HEADER_SIZE) {
    return { ok: false, message: `Bitcoin header is ${opts.bitcoinHeader.length} bytes, want 80` };
  }
  const h = opts.bitcoinHeader;
  const btcTime = BigInt((h[68]! | (h[69]! << 8) | (h[70]! << 16) | (h[71]! << 24)) >>> 0);
  const diff = btcTime > opts.timestamp ? btcTime - opts.timestamp : opts.timestamp - btcTime;
  if (diff < BigInt(opts.limitSeconds)) return { ok: true };
  return {
    ok: false,
    message: `Bitcoin time ${btcTime} and block timestamp ${opts.timestamp} are ${diff} s apart, limit ${opts.limitSeconds} s`,
  };
}
