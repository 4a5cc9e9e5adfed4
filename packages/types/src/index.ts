export type { BlockSelector } from "./blockSelector.js";
export {
  BlockTag,
  formatBlockSelector,
  isBlockTag,
  parseBlockNumberOrTag,
  parseBlockSelector,
  parseBlockTag,
} from "./blockSelector.js";
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
export { bytesToHex, hexToBytes, keccak256 } from "./hex.js";
export type { LogContext, Logger, LogLevel } from "./logger.js";
export { LOG_LEVELS, nullLogger } from "./logger.js";
export type { ModuleName, NetworkName, NetworkPreset } from "./networks.js";
export {
  isNetworkName,
  MODULE_NAMES,
  NETWORK_NAMES,
  NETWORKS,
  networkByChainId,
} from "./networks.js";
export { encodeQuantity, parseQuantity } from "./quantity.js";
