export { type Admitted, TxAdmission } from "./admission.js";
export { chainIdMismatch, TxPoolError, TxPoolErrorCode } from "./errors.js";
export { JOURNAL_HEADER } from "./journal.js";
export type { TxPoolOptions } from "./options.js";
export { defaultTxPoolOptions, REFERENCE_GAS_PRICE_BUMP_PERCENT } from "./options.js";
export type {
  AddResult,
  JournalLoadResult,
  PoolAccountState,
  PoolHead,
  PoolStatus,
} from "./txPool.js";
export { TxPool } from "./txPool.js";
