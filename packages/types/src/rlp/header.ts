import { keccak256 } from "../keccak.js";
import {
  bigintToBytes,
  bytesToBigint,
  DecodeError,
  expectBytes,
  expectList,
  type RLPItem,
  rlpDecode,
  rlpEncode,
} from "./codec.js";

/**
 * A block header in the chain's layout: the reference node's version-0 fields, an always-empty
 * `ummRoot`, then the three merged-mining fields. Integers are canonical minimal RLP.
 */
export interface BlockHeader {
  readonly parentHash: Uint8Array;
  readonly unclesHash: Uint8Array;
  readonly coinbase: Uint8Array;
  readonly stateRoot: Uint8Array;
  readonly transactionsRoot: Uint8Array;
  readonly receiptsRoot: Uint8Array;
  readonly logsBloom: Uint8Array;
  readonly difficulty: bigint;
  readonly number: bigint;
  readonly gasLimit: bigint;
  readonly gasUsed: bigint;
  readonly timestamp: bigint;
  readonly extraData: Uint8Array;
  readonly paidFees: bigint;
  readonly minimumGasPrice: bigint;
  readonly uncleCount: number;
  readonly ummRoot: Uint8Array;
  readonly bitcoinMergedMiningHeader: Uint8Array;
  readonly bitcoinMergedMiningMerkleProof: Uint8Array;
  readonly bitcoinMergedMiningCoinbaseTransaction: Uint8Array;
}

/** Number of RLP items of an encoded header. */
export const HEADER_FIELD_COUNT = 20;
export const MAX_EXTRA_DATA_BYTES = 32;

/** From this height `hashForMergedMining` carries fork-detection data in its last 12 bytes. */
export const FORK_DETECTION_HEIGHT = 449n;

function baseFields(h: BlockHeader): RLPItem[] {
  return [
    h.parentHash,
    h.unclesHash,
    h.coinbase,
    h.stateRoot,
    h.transactionsRoot,
    h.receiptsRoot,
    h.logsBloom,
    bigintToBytes(h.difficulty),
    bigintToBytes(h.number),
    bigintToBytes(h.gasLimit),
    bigintToBytes(h.gasUsed),
    bigintToBytes(h.timestamp),
    h.extraData,
    bigintToBytes(h.paidFees),
    bigintToBytes(h.minimumGasPrice),
    bigintToBytes(BigInt(h.uncleCount)),
    h.ummRoot,
  ];
}

/** The full encoding: all 20 fields. Blocks, uncle lists and `size` use it. */
export function encodeHeader(h: BlockHeader): Uint8Array {
  return rlpEncode(headerItem(h));
}

export function headerItem(h: BlockHeader): RLPItem[] {
  return [
    ...baseFields(h),
    h.bitcoinMergedMiningHeader,
    h.bitcoinMergedMiningMerkleProof,
    h.bitcoinMergedMiningCoinbaseTransaction,
  ];
}

/**
 * The header as it is hashed: the Bitcoin header its only merged-mining field (18 fields, no
 * Merkle proof, no coinbase). The reference node's raw header (`rsk_getRawBlockHeader*`).
 */
export function encodeHeaderForHash(h: BlockHeader): Uint8Array {
  return rlpEncode([...baseFields(h), h.bitcoinMergedMiningHeader]);
}

/** Block hash: keccak256 of `encodeHeaderForHash`. */
export function headerHash(h: BlockHeader): Uint8Array {
  return keccak256(encodeHeaderForHash(h));
}

/** keccak256 of the header without merged-mining fields: what miners commit to, before fork-detection data. */
export function hashForMergedMiningBase(h: BlockHeader): Uint8Array {
  return keccak256(rlpEncode(baseFields(h)));
}

/** `hashForMergedMining` from its base: the first 20 bytes, then the 12 bytes of fork-detection data. */
export function withForkDetectionData(base: Uint8Array, forkDetectionData: Uint8Array): Uint8Array {
  if (base.length !== 32 || forkDetectionData.length !== 12) {
    throw new RangeError("want a 32-byte base and 12 bytes of fork-detection data");
  }
  const out = new Uint8Array(32);
  out.set(base.subarray(0, 20));
  out.set(forkDetectionData, 20);
  return out;
}

export function decodeHeader(bytes: Uint8Array): BlockHeader {
  return headerFromItem(rlpDecode(bytes, "block header"));
}

export function headerFromItem(item: RLPItem): BlockHeader {
  const f = expectList(item, "block header", HEADER_FIELD_COUNT);
  const extraData = expectBytes(f[12], "header extraData");
  if (extraData.length > MAX_EXTRA_DATA_BYTES) {
    throw new DecodeError(
      `invalid header extraData: ${extraData.length} bytes, at most ${MAX_EXTRA_DATA_BYTES}`,
    );
  }
  const ummRoot = expectBytes(f[16], "header ummRoot", 0);
  const coinbase = expectBytes(f[2], "header coinbase", 20);
  return {
    parentHash: expectBytes(f[0], "header parentHash", 32),
    unclesHash: expectBytes(f[1], "header unclesHash", 32),
    coinbase,
    stateRoot: expectBytes(f[3], "header stateRoot", 32),
    transactionsRoot: expectBytes(f[4], "header transactionsRoot", 32),
    receiptsRoot: expectBytes(f[5], "header receiptsRoot", 32),
    logsBloom: expectBytes(f[6], "header logsBloom", 256),
    difficulty: bytesToBigint(f[7]!, "header difficulty"),
    number: bytesToBigint(f[8]!, "header number", 8),
    gasLimit: bytesToBigint(f[9]!, "header gasLimit", 8),
    gasUsed: bytesToBigint(f[10]!, "header gasUsed", 8),
    timestamp: bytesToBigint(f[11]!, "header timestamp", 8),
    extraData,
    paidFees: bytesToBigint(f[13]!, "header paidFees"),
    minimumGasPrice: bytesToBigint(f[14]!, "header minimumGasPrice"),
    uncleCount: Number(bytesToBigint(f[15]!, "header uncleCount", 2)),
    ummRoot,
    bitcoinMergedMiningHeader: expectBytes(f[17], "header bitcoinMergedMiningHeader"),
    bitcoinMergedMiningMerkleProof: expectBytes(f[18], "header bitcoinMergedMiningMerkleProof"),
    bitcoinMergedMiningCoinbaseTransaction: expectBytes(
      f[19],
      "header bitcoinMergedMiningCoinbaseTransaction",
    ),
  };
}
