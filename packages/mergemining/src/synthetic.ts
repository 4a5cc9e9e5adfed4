import { concatBytes, writeU32LE } from "@nodex/types";
import { encodeBitcoinHeader } from "./bitcoinHeader.js";
import { compressCoinbase, RSK_TAG } from "./coinbase.js";
import { doubleSha256 } from "./doubleSha256.js";
import { invalidArgument, MergeMiningError, MergeMiningErrorCode } from "./errors.js";
import { grindNonce } from "./grind.js";
import { buildMerkleProof } from "./proof.js";
import { difficultyToTarget, targetToBytes, targetToCompact } from "./target.js";
import { encodeBitcoinTransaction, txid } from "./transaction.js";

export interface SyntheticProofOptions {
  readonly hashForMergedMining: Uint8Array;
  readonly difficulty: bigint;
  /** Bitcoin header time, seconds (use the block's timestamp to satisfy the timestamp link). */
  readonly time: number;
  /** First extra-nonce to try (8 bytes in the coinbase scriptSig); default 0. */
  readonly extraNonce?: bigint;
  /** Nonces tried per extra-nonce, at most (and by default) 2^32. */
  readonly noncesPerExtraNonce?: number;
  /** Give up (`MERGEMINING_WORK_EXHAUSTED`) after this many header hashes; default unlimited. */
  readonly maxAttempts?: number;
}

export interface SyntheticProof {
  /** The 80-byte Bitcoin header. */
  readonly bitcoinHeader: Uint8Array;
  /** The compressed coinbase. */
  readonly coinbase: Uint8Array;
  /** The RSKIP92 Merkle proof (empty: the coinbase is the block's only transaction). */
  readonly merkleProof: Uint8Array;
  /** The full coinbase, without witness (what `mnr_submitBitcoinBlockTransactions` takes). */
  readonly coinbaseTransaction: Uint8Array;
  /** The whole Bitcoin block (header, count, coinbase), as `mnr_submitBitcoinBlock` takes it. */
  readonly bitcoinBlock: Uint8Array;
  readonly extraNonce: bigint;
  readonly nonce: number;
  /** Header hashes tried. */
  readonly attempts: number;
}

/**
 * The coinbase of a synthetic block, as pool software writes one: a coinbase input whose
 * scriptSig pushes the 8-byte extra-nonce, one zero-value OP_RETURN output pushing
 * `RSKBLOCK:` + hashForMergedMining. Serialized without witness.
 */
export function syntheticCoinbase(hashForMergedMining: Uint8Array, extraNonce: bigint): Uint8Array {
  const en = new Uint8Array(8);
  new DataView(en.buffer).setBigUint64(0, BigInt.asUintN(64, extraNonce), true);
  return encodeBitcoinTransaction(
    {
      version: 1,
      inputs: [
        {
          prevTxid: new Uint8Array(32),
          prevIndex: 0xffffffff,
          scriptSig: concatBytes(Uint8Array.of(8), en),
          sequence: 0xffffffff,
          witness: [],
        },
      ],
      outputs: [
        {
          value: 0n,
          scriptPubKey: concatBytes(Uint8Array.of(0x6a, 41), RSK_TAG, hashForMergedMining),
        },
      ],
      lockTime: 0,
      hasWitness: false,
    },
    false,
  );
}

/** The Bitcoin header version of synthetic blocks (BIP 9 version bits, none signalled). */
export const SYNTHETIC_VERSION = 0x20000000;

/**
 * The 80-byte header of a synthetic block whose only transaction is `coinbaseTransaction`: no
 * previous block, the coinbase's txid as the Merkle root.
 */
export function syntheticHeader(
  coinbaseTransaction: Uint8Array,
  time: number,
  bits: number,
  nonce = 0,
): Uint8Array {
  return headerOn(txid(coinbaseTransaction), time, bits, nonce);
}

function headerOn(merkleRoot: Uint8Array, time: number, bits: number, nonce = 0): Uint8Array {
  return encodeBitcoinHeader({
    version: SYNTHETIC_VERSION,
    prevHash: new Uint8Array(32),
    merkleRoot,
    time,
    bits,
    nonce,
  });
}

/**
 * Builds and mines a minimal Bitcoin block that merge-mines `hashForMergedMining` at
 * `difficulty`: grinds the header nonce, then the coinbase extra-nonce when a nonce range is
 * spent, until the header's double-SHA256 meets 2^256 / max(difficulty, 3). The result passes
 * `verifyMergedMiningProof`. Expected work is `difficulty` hashes: milliseconds on regtest.
 */
export function buildSyntheticProof(opts: SyntheticProofOptions): SyntheticProof {
  if (opts.hashForMergedMining.length !== 32)
    throw invalidArgument("hashForMergedMining is 32 bytes");
  if (!Number.isInteger(opts.time) || opts.time < 0 || opts.time > 0xffffffff) {
    throw invalidArgument(`Bitcoin time must be a 32-bit unsigned integer, got ${opts.time}`);
  }
  const perExtraNonce = opts.noncesPerExtraNonce ?? 2 ** 32;
  if (!Number.isInteger(perExtraNonce) || perExtraNonce < 1 || perExtraNonce > 2 ** 32) {
    throw invalidArgument(`noncesPerExtraNonce must be 1 … 2^32, got ${perExtraNonce}`);
  }
  const maxAttempts = opts.maxAttempts ?? Number.POSITIVE_INFINITY;
  const target = difficultyToTarget(opts.difficulty);
  const targetBytes = targetToBytes(target);
  const bits = targetToCompact(target);
  let extraNonce = opts.extraNonce ?? 0n;
  let attempts = 0;
  for (;;) {
    const coinbaseTransaction = syntheticCoinbase(opts.hashForMergedMining, extraNonce);
    // Serialized without witness: its txid is its double-SHA256 as it is.
    const cbTxid = doubleSha256(coinbaseTransaction);
    const header = headerOn(cbTxid, opts.time, bits);
    const budget = Math.min(perExtraNonce, maxAttempts - attempts);
    const nonce = grindNonce(header, targetBytes, 0, budget);
    if (nonce >= 0) {
      attempts += nonce + 1;
      writeU32LE(header, 76, nonce);
      const block = concatBytes(header, Uint8Array.of(1), coinbaseTransaction);
      return {
        bitcoinHeader: header,
        coinbase: compressCoinbase(coinbaseTransaction),
        merkleProof: buildMerkleProof([cbTxid]),
        coinbaseTransaction,
        bitcoinBlock: block,
        extraNonce,
        nonce,
        attempts,
      };
    }
    attempts += budget;
    if (attempts >= maxAttempts) {
      throw new MergeMiningError(
        MergeMiningErrorCode.WORK_EXHAUSTED,
        `no header met the target for difficulty ${opts.difficulty} in ${attempts} attempts`,
        { attempts, difficulty: opts.difficulty.toString() },
      );
    }
    extraNonce = BigInt.asUintN(64, extraNonce + 1n);
  }
}
