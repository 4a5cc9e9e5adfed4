export {
  type BloomBits,
  bloomBits,
  bloomHasBits,
  bloomMayContain,
  logsBloom,
  orBloom,
} from "./bloom.js";
export { ExecutionError, ExecutionErrorCode } from "./errors.js";
export {
  type BlockContext,
  type CallOutcome,
  type CallRequest,
  EVM_HARDFORK,
  Executor,
  intrinsicGas,
  MAX_INITCODE_SIZE,
  type TransactionOutcome,
} from "./executor.js";
export { decodeRevertReason } from "./revert.js";
