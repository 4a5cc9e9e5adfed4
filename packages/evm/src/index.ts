export { AccessListTracer, type AccessListTracerOptions } from "./accessListTracer.js";
export {
  type BloomBits,
  bloomBits,
  bloomHasBits,
  bloomMayContain,
  logsBloom,
  orBloom,
} from "./bloom.js";
export {
  type CallFrame,
  type CallTrace,
  CallTracer,
  type CallTracerOptions,
  type GethCallFrame,
  type ParityTrace,
  type TraceLocation,
  toGethCallFrame,
  toParityTraces,
} from "./callTracer.js";
export {
  CONSOLE_ADDRESS,
  type ConsoleLine,
  consoleSelectorCount,
  decodeConsoleLog,
} from "./consoleLog.js";
export { ExecutionError, ExecutionErrorCode } from "./errors.js";
export {
  type BlockContext,
  type CallOptions,
  type CallOutcome,
  type CallRequest,
  type ConsoleLogSink,
  EVM_HARDFORK,
  Executor,
  INTRINSIC_GAS_HARDFORKS,
  intrinsicGas,
  MAX_INITCODE_SIZE,
  type TransactionOutcome,
} from "./executor.js";
export {
  type FastPathStatus,
  fastPathStatus,
  installedEvmVersion,
  VERIFIED_EVM_VERSION,
  VERIFIED_HARDFORK,
} from "./fastPaths.js";
export { effectiveGasPrice, FeeRules } from "./feeRules.js";
export {
  type PrestateAccount,
  type PrestateResult,
  PrestateTracer,
} from "./prestateTracer.js";
export { decodeRevertReason } from "./revert.js";
export {
  STRUCT_LOG_LIMIT_BYTES,
  type StructLog,
  StructLogger,
  type StructLoggerOptions,
  type StructLogResult,
} from "./structLogger.js";
export { gethError, parityError } from "./traceErrors.js";
export {
  CallKind,
  type ExecutionTracer,
  type FrameEnd,
  type FrameStart,
  TraceAbort,
  TraceAbortCode,
  type TraceStateReader,
  type TraceStep,
  type TxEnd,
  type TxStart,
} from "./tracing.js";
