import { EVM, EVMError, type ExecResult } from "@ethereumjs/evm";
import { Account, createZeroAddress } from "@ethereumjs/util";
import { bytesToHex, keccak256 } from "@nodex/types";

/**
 * keccak256 of the source of `EVM.prototype.runInterpreter` in the @ethereumjs/evm release
 * `leanRunInterpreter` copies (10.1.3). Another release keeps its own method.
 */
const RUN_INTERPRETER_SOURCE = "0x9eb4fbf6c768d26b93577b0f8a81170efd7089244ab60bba1022adb27798cf09";

// biome-ignore lint/suspicious/noExplicitAny: the interpreter and message are internals of @ethereumjs/evm, untyped here
type Internal = any;

let sourceMatches: boolean | undefined;

/** The library's own method (protected in its types). */
const originalRunInterpreter = (EVM.prototype as Internal).runInterpreter as (
  ...args: unknown[]
) => Promise<ExecResult>;

/** Whether `EVM.prototype.runInterpreter` is the one `leanRunInterpreter` was copied from. */
export function runInterpreterMatches(): boolean {
  sourceMatches ??=
    bytesToHex(keccak256(new TextEncoder().encode(originalRunInterpreter.toString()))) ===
    RUN_INTERPRETER_SOURCE;
  return sourceMatches;
}

/**
 * Gives `evm` a `runInterpreter` that does what @ethereumjs/evm 10.1.3's does, except that the
 * result's `runState` is the interpreter's own run state instead of a fresh object merging it
 * with the result and the environment (spreading some 50 properties into a new object on every
 * message cost about a quarter of a small call's time). Nothing in the EVM reads `runState`;
 * this package does not either.
 *
 * `Interpreter` is the class `@ethereumjs/evm` does not export (see `findInterpreter`). Does
 * nothing, and returns false, when the installed release's method is not the one copied here.
 */
export function installLeanRunInterpreter(evm: EVM, Interpreter: Internal): boolean {
  if (!runInterpreterMatches()) return false;
  const self = evm as Internal;
  self.runInterpreter = async function leanRunInterpreter(
    this: Internal,
    message: Internal,
    opts: Internal = {},
  ): Promise<ExecResult> {
    if (this._block === undefined) return originalRunInterpreter.call(this, message, opts);
    const contract =
      (await this.stateManager.getAccount(message.to ?? createZeroAddress())) ?? new Account();
    const env = {
      address: message.to ?? createZeroAddress(),
      caller: message.caller ?? createZeroAddress(),
      callData: message.data ?? Uint8Array.from([0]),
      callValue: message.value ?? 0n,
      code: message.code,
      isStatic: message.isStatic ?? false,
      isCreate: message.isCreate ?? false,
      depth: message.depth ?? 0,
      gasPrice: this._tx.gasPrice,
      origin: this._tx.origin ?? message.caller ?? createZeroAddress(),
      block: this._block,
      contract,
      codeAddress: message.codeAddress,
      gasRefund: message.gasRefund,
      chargeCodeAccesses: message.chargeCodeAccesses,
      blobVersionedHashes: message.blobVersionedHashes ?? [],
      accessWitness: message.accessWitness,
      createdAddresses: message.createdAddresses,
      initialLogs: opts.initialLogs,
    };
    const interpreter = new Interpreter(
      this,
      this.stateManager,
      this.blockchain,
      env,
      message.gasLimit,
      this.journal,
      this.performanceLogger,
      this._optsCached.profiler,
    );
    if (message.selfdestruct) interpreter._result.selfdestruct = message.selfdestruct;
    if (message.createdAddresses) interpreter._result.createdAddresses = message.createdAddresses;
    const interpreterRes = await interpreter.run(message.code, opts);
    let result = interpreter._result;
    let gasUsed = message.gasLimit - interpreterRes.runState.gasLeft;
    const error = interpreterRes.exceptionError;
    if (error) {
      if (
        error.error !== EVMError.errorMessages.REVERT &&
        error.error !== EVMError.errorMessages.INVALID_EOF_FORMAT
      ) {
        gasUsed = message.gasLimit;
      }
      result = { ...result, logs: [], selfdestruct: new Map(), createdAddresses: new Set() };
    }
    message.accessWitness?.commit();
    return {
      ...result,
      runState: interpreterRes.runState,
      exceptionError: error,
      gas: interpreterRes.runState?.gasLeft,
      executionGasUsed: gasUsed,
      gasRefund: interpreterRes.runState.gasRefund,
      stateGasSpilled: interpreterRes.runState.stateGasSpilled,
      returnValue: result.returnValue ?? new Uint8Array(0),
    };
  };
  return true;
}
