export { libraryAddress, StateReads } from "./accounts.js";
export { CallInterpreter, MAX_CALL_GAS } from "./callInterpreter.js";
export type { CallEnvironment, CallResult, CallRules, TransactionResult } from "./callRules.js";
export { GAS_PARAMS, type Gas, gasTable } from "./gas.js";
export { Op, type Opcode, type OpName } from "./opcodes.js";
export { type AccessCosts, type StoreCosts, sloadGas, sstoreGas, sstoreRefund } from "./storage.js";
