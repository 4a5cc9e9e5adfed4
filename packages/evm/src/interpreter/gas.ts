/**
 * The gas parameters the interpreter (and `fastOpcodes.ts`) read from the rules' `Common`, by
 * the names the library gives them. The static fee of each opcode is not here: it is read from
 * the EVM's opcode table (`CallRules.fees`).
 */
export const GAS_PARAMS = {
  memory: "memoryGas",
  quadDiv: "quadCoefficientDivGas",
  copy: "copyGas",
  keccakWord: "keccak256WordGas",
  expByte: "expByteGas",
  logTopic: "logTopicGas",
  logData: "logDataGas",
  warmRead: "warmstoragereadGas",
  coldSload: "coldsloadGas",
  coldAccount: "coldaccountaccessGas",
  sentry: "sstoreSentryEIP2200Gas",
  sstoreNoop: "sstoreNoopEIP2200Gas",
  sstoreDirty: "sstoreDirtyEIP2200Gas",
  sstoreInit: "sstoreInitEIP2200Gas",
  sstoreClean: "sstoreCleanEIP2200Gas",
  valueTransfer: "callValueTransferGas",
  newAccount: "callNewAccountGas",
  stipend: "callStipendGas",
  sstoreReset: "sstoreResetGas",
  sstoreInitRefund: "sstoreInitRefundEIP2200Gas",
  sstoreCleanRefund: "sstoreCleanRefundEIP2200Gas",
  sstoreClearRefund: "sstoreClearRefundEIP2200Gas",
} as const;

/** The gas parameters as numbers (all of them are far below 2⁵³). */
export type Gas = { readonly [K in keyof typeof GAS_PARAMS]: number };

/**
 * The parameters of `GAS_PARAMS` read from the rules (`param` of a `Common`). One object
 * literal, not properties added by name in a loop: V8 keeps an object made that way with more
 * than a dozen properties as a dictionary, and the interpreter reads these at every memory access.
 */
export function gasTable(param: (name: string) => bigint): Gas {
  const p = (key: keyof typeof GAS_PARAMS) => Number(param(GAS_PARAMS[key]));
  return {
    memory: p("memory"),
    quadDiv: p("quadDiv"),
    copy: p("copy"),
    keccakWord: p("keccakWord"),
    expByte: p("expByte"),
    logTopic: p("logTopic"),
    logData: p("logData"),
    warmRead: p("warmRead"),
    coldSload: p("coldSload"),
    coldAccount: p("coldAccount"),
    sentry: p("sentry"),
    sstoreNoop: p("sstoreNoop"),
    sstoreDirty: p("sstoreDirty"),
    sstoreInit: p("sstoreInit"),
    sstoreClean: p("sstoreClean"),
    valueTransfer: p("valueTransfer"),
    newAccount: p("newAccount"),
    stipend: p("stipend"),
    sstoreReset: p("sstoreReset"),
    sstoreInitRefund: p("sstoreInitRefund"),
    sstoreCleanRefund: p("sstoreCleanRefund"),
    sstoreClearRefund: p("sstoreClearRefund"),
  };
}
