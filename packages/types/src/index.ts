export type { BlockSelector } from "./blockSelector.js";
export {
  BlockTag,
  formatBlockSelector,
  isBlockTag,
  parseBlockNumberOrTag,
  parseBlockSelector,
  parseBlockTag,
} from "./blockSelector.js";
export {
  bigintToBytesBE,
  bytesToBigintBE,
  concatBytes,
  equalBytes,
  lastIndexOf,
  readU32BE,
  readU32LE,
  reverseBytes,
  trimLeadingZeros,
  writeU32BE,
  writeU32LE,
  writeU64BE,
} from "./bytes.js";
export type { Address, Hash32 } from "./data.js";
export {
  encodeData,
  parseAddress,
  parseBloom,
  parseData,
  parseHash,
  parseNonce,
  toChecksumAddress,
} from "./data.js";
export type { DevAccount } from "./devAccounts.js";
export { DEV_MNEMONIC, deriveDevAccounts, privateKeyToAddress } from "./devAccounts.js";
export { CodecError, CodecErrorCode, NodexError } from "./errors.js";
export type { Hex } from "./hex.js";
export { bytesToHex, bytesToUnprefixedHex, hexToBytes } from "./hex.js";
export { keccak256, keccak256Noble, keccakBackend } from "./keccak.js";
export type { LogContext, Logger, LogLevel } from "./logger.js";
export { LOG_LEVELS, nullLogger } from "./logger.js";
export { hashMessage, isPrivateKey, signMessage } from "./message.js";
export type { ModuleName, NetworkName, NetworkPreset } from "./networks.js";
export {
  isNetworkName,
  MODULE_NAMES,
  NETWORK_NAMES,
  NETWORKS,
  networkByChainId,
  typedTransactionsActive,
} from "./networks.js";
export { encodeQuantity, parseQuantity } from "./quantity.js";
export type { Block } from "./rlp/block.js";
export { decodeBlock, decodeBody, encodeBlock, encodeBody, unclesHash } from "./rlp/block.js";
export type { RLPItem } from "./rlp/codec.js";
export {
  bigintToBytes,
  bytesToBigint,
  DecodeError,
  DecodeErrorCode,
  rlpDecode,
  rlpEncode,
  rlpListOfEncoded,
} from "./rlp/codec.js";
export {
  decodeRlp,
  encodeRlp,
  fastRlpInstalled,
  installFastRlp,
  type RlpObject,
} from "./rlp/fast.js";
export type { BlockHeader } from "./rlp/header.js";
export {
  decodeHeader,
  encodeHeader,
  encodeHeaderForHash,
  FORK_DETECTION_HEIGHT,
  HEADER_FIELD_COUNT,
  hashForMergedMiningBase,
  headerFromItem,
  headerHash,
  MAX_EXTRA_DATA_BYTES,
  withForkDetectionData,
} from "./rlp/header.js";
export type { Log, Receipt } from "./rlp/receipt.js";
export {
  decodeReceipt,
  decodeReceiptList,
  encodeReceipt,
  encodeReceiptList,
} from "./rlp/receipt.js";
export type {
  AccessListEntry,
  SignedTransaction,
  UnsignedTransaction,
} from "./rlp/transaction.js";
export {
  clearSenderCache,
  contractAddress,
  decodeImpersonatedTransaction,
  decodeSenders,
  decodeTransaction,
  dynamicFeeGasPrice,
  encodeSenders,
  impersonatedTransaction,
  isImpersonatedTransaction,
  signingHash,
  signTransaction,
  TransactionError,
  TransactionErrorCode,
  TransactionType,
  transactionFromItem,
  transactionListItem,
} from "./rlp/transaction.js";
export type { SignatureRecoveryInfo, SignatureRecoveryPreference } from "./signatureRecovery.js";
export {
  precomputeSecp256k1,
  recoverPublicKey,
  SignatureRecoveryBackend,
  selectSignatureRecovery,
  signatureRecovery,
} from "./signatureRecovery.js";
