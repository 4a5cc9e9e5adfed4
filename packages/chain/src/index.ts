export { AncestryMemo, type HeaderSource, hashForMergedMining } from "./ancestry.js";
export {
  type ChainCacheSizes,
  cumulativeDifficulty,
  DEFAULT_CHAIN_CACHE_SIZES,
  type StoredBlock,
  type TransactionLocation,
} from "./blockStore.js";
export {
  type BlockSealer,
  type BlockTemplate,
  type BuiltBlock,
  Chain,
  type ChainAnchor,
  type ChainDeps,
  type ChainHeader,
  type FirstBlock,
  type ImportResult,
  type MinedBlock,
  type StateEdits,
  UNSEALED,
} from "./chain.js";
export { ChainError, ChainErrorCode } from "./errors.js";
export type { HeadChange } from "./forkChoice.js";
export { DEV_ACCOUNT_BALANCE, genesisHeader, writeGenesisState } from "./genesis.js";
export type { LocatedLog } from "./logRecords.js";
export { mergedMiningRules, SYNTHETIC_SEALER } from "./mergedMining.js";
export type { FailedTransaction, MineOptions, RejectedTransaction } from "./production.js";
export {
  BITCOIN_HEIGHT_WINDOW,
  blockLogs,
  ChainReader,
  type ChainReaderOptions,
  DEFAULT_STATE_CACHE,
  type FoundLog,
  type IncludedReceipt,
  type IncludedTransaction,
  isPending,
  isPendingTag,
  LOG_INDEX_MIN_RANGE,
  LOGS_CAP,
  LOGS_UNCAPPED_RANGE,
  type LogQuery,
  type PendingBlock,
  type PendingSource,
} from "./reader.js";
export { replayBlock, type TracedTransaction } from "./replay.js";
export {
  type ConsensusRules,
  checkHeader,
  checkUncles,
  MAX_FUTURE_SECONDS,
  MAX_UNCLES,
  MIN_GAS_LIMIT,
  NO_PROOF_OF_WORK,
  UNCLE_GENERATIONS,
} from "./validation.js";
