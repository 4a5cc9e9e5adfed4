export {
  type BlockSealer,
  Chain,
  type ChainDeps,
  type MinedBlock,
  type MineOptions,
  type RejectedTransaction,
  type StoredBlock,
  type TransactionLocation,
  UNSEALED,
} from "./chain.js";
export { ChainError, ChainErrorCode } from "./errors.js";
export { DEV_ACCOUNT_BALANCE, genesisHeader, writeGenesisState } from "./genesis.js";
