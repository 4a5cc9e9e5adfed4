export {
  type BlockSealer,
  type BlockTemplate,
  Chain,
  type ChainDeps,
  cumulativeDifficulty,
  type ImportResult,
  type MinedBlock,
  type MineOptions,
  type RejectedTransaction,
  type StoredBlock,
  type TransactionLocation,
  UNSEALED,
} from "./chain.js";
export { ChainError, ChainErrorCode } from "./errors.js";
export { DEV_ACCOUNT_BALANCE, genesisHeader, writeGenesisState } from "./genesis.js";
export { mergedMiningRules, SYNTHETIC_SEALER } from "./mergedMining.js";
export {
  type MergedMiningWork,
  MinerServer,
  type MinerServerOptions,
  type SubmittedBlock,
} from "./minerServer.js";
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
