export { bip34Height, coinbaseHeight, encodeBip34Height } from "./bip34.js";
export type { BitcoinHeader } from "./bitcoinHeader.js";
export {
  BITCOIN_HEADER_SIZE,
  bitcoinHash,
  encodeBitcoinHeader,
  hashToDisplayHex,
  parseBitcoinHeader,
} from "./bitcoinHeader.js";
export type { BitcoinBlock } from "./block.js";
export { coinbaseWithoutWitness, parseBitcoinBlock } from "./block.js";
export type { CompressedCoinbaseParts } from "./coinbase.js";
export {
  COMPRESSED_COINBASE_PREFIX_SIZE,
  compressCoinbase,
  compressCoinbaseAt,
  compressedCoinbaseTxid,
  extractTaggedHash,
  MAX_BYTES_AFTER_MERGED_MINING_HASH,
  RSK_TAG,
  splitCompressedCoinbase,
} from "./coinbase.js";
export type { DifficultyInput, NetworkMiningParams } from "./difficulty.js";
export { NETWORK_MINING_PARAMS, nextDifficulty } from "./difficulty.js";
export { doubleSha256 } from "./doubleSha256.js";
export { MergeMiningError, MergeMiningErrorCode } from "./errors.js";
export {
  CPV_COUNT,
  cpvBytes,
  cpvHeights,
  FORK_DETECTION_UNCLE_WINDOW,
  forkDetectionData,
  forkDetectionDataFromCoinbase,
} from "./forkDetection.js";
export { grindNonce } from "./grind.js";
export { coinbaseBranch, merkleRoot } from "./merkle.js";
export type { MergedMiningProofInput, ProofVerification } from "./proof.js";
export {
  buildMerkleProof,
  checkTimestampLink,
  isValid64ByteTransaction,
  MAX_MERKLE_PROOF_SIZE,
  merkleProofFromBranch,
  ProofFailure,
  verifyMergedMiningProof,
} from "./proof.js";
export { sha256FromMidstate, sha256Midstate } from "./sha256.js";
export type { SyntheticProof, SyntheticProofOptions } from "./synthetic.js";
export {
  buildSyntheticProof,
  SYNTHETIC_VERSION,
  syntheticCoinbase,
  syntheticHeader,
} from "./synthetic.js";
export type { CompactTarget } from "./target.js";
export {
  compactToTarget,
  difficultyToTarget,
  hashMeetsTarget,
  hashToBigint,
  targetToBytes,
  targetToCompact,
} from "./target.js";
export type { BitcoinTransaction, BitcoinTxInput, BitcoinTxOutput } from "./transaction.js";
export {
  encodeBitcoinTransaction,
  parseBitcoinTransaction,
  txid,
  wtxid,
} from "./transaction.js";
