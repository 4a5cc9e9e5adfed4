import { EVM, EVMError } from "@ethereumjs/evm";
import { Account, type Address, createZeroAddress } from "@ethereumjs/util";

/**
 * The parts of `@ethereumjs/evm`'s `Interpreter` (not exported; see `findInterpreter`) that the
 * step loop below uses. It reads them as the library's own loop does.
 */
interface OpcodeInfo {
  readonly code: number;
  readonly feeBigInt: bigint;
  readonly dynamicGas: boolean;
  readonly isInvalid: boolean;
}

interface OpcodeEntry {
  readonly opcodeInfo: OpcodeInfo;
  opHandler: (runState: RunState, common: unknown) => unknown;
  readonly gasHandler: (
    runState: RunState,
    gas: bigint,
    common: unknown,
  ) => bigint | Promise<bigint>;
}

interface RunState {
  programCounter: number;
  opCode: number;
  code: Uint8Array;
  validJumps: Uint8Array;
  cachedPushes: Record<number, bigint>;
  shouldDoJumpAnalysis: boolean;
  gasLeft: bigint;
  readonly gasRefund: bigint;
  readonly stateGasSpilled?: bigint;
  readonly returnBytes: Uint8Array;
  readonly interpreter: object;
  eip7928PostTargetCallOog?: unknown;
  eip8037BurnLeftoverAfterCreateHaltOntoAlive?: boolean;
  readonly env: { readonly accessWitness?: { commit(): void; revert(): void } };
  readonly stack: { popN(n: number): bigint[] };
  readonly memory: { write(offset: number, size: number, value: Uint8Array): void };
}

interface InterpreterLike {
  readonly _runState: RunState;
  readonly common: { isActivatedEIP(eip: number): boolean };
  readonly profilerOpts?: { readonly enabled?: boolean };
  readonly _evm: {
    readonly DEBUG: boolean;
    readonly events: { listenerCount(event: string): number };
  };
  run(code: Uint8Array, opts?: { pc?: number }): Promise<RunResult>;
  runStep(entry?: OpcodeEntry): Promise<void>;
  lookupOpInfo(op: number): OpcodeEntry;
  useGas(amount: bigint, context?: unknown): void;
  _getValidJumpDestinations(code: Uint8Array): {
    jumps: Uint8Array;
    pushes: Record<number, bigint>;
    opcodesCached: OpcodeEntry[];
  };
}

interface RunResult {
  readonly runState: RunState;
  readonly exceptionError: EVMError | undefined;
}

const installed = new WeakSet<object>();

/**
 * Makes the interpreter run an opcode without a promise when nothing in it waits: the library's
 * loop awaits an async `runStep` for every opcode, though most (arithmetic, stack, memory) never
 * wait for anything. This loop calls the same gas and opcode handlers in the same order, with
 * the same checks, and awaits only what returns a promise (state reads, calls, creates). Gas,
 * results and errors are the library's: the EVM tests and the trace comparison with Hardhat run
 * on it.
 *
 * Whatever this loop does not cover runs the library's own loop: EOF code (EIP-3540), the
 * profiler, step listeners (tracing) and debug output, and the verkle/binary-tree EIPs.
 */
export function installFastSteps(Interpreter: { readonly prototype: object }): void {
  const proto = Interpreter.prototype as InterpreterLike;
  if (installed.has(proto)) return;
  const libraryRun = proto.run;
  if (
    typeof libraryRun !== "function" ||
    typeof proto.runStep !== "function" ||
    typeof proto.lookupOpInfo !== "function" ||
    typeof proto.useGas !== "function" ||
    typeof proto._getValidJumpDestinations !== "function"
  )
    return;
  installed.add(proto);
  const finishing = proto as unknown as {
    _result: { returnValue?: Uint8Array };
    finish(
      this: InterpreterLike & { _result: { returnValue?: Uint8Array } },
      data: Uint8Array,
    ): void;
  };
  // RETURN (and EOF's RETURNCONTRACT) end with `finish`: see `stop`.
  if (typeof finishing.finish === "function") {
    finishing.finish = function (data) {
      this._result.returnValue = data;
      stop(this._runState);
    };
  }
  proto.run = function (this: InterpreterLike, code: Uint8Array, opts = {}): Promise<RunResult> {
    const common = this.common;
    if (
      (code[0] === 0xef && common.isActivatedEIP(3540)) ||
      common.isActivatedEIP(6800) ||
      common.isActivatedEIP(7864) ||
      this.profilerOpts?.enabled === true ||
      this._evm.DEBUG ||
      this._evm.events.listenerCount("step") > 0
    )
      return libraryRun.call(this, code, opts);
    return runLegacy(this, code, opts);
  };
}

async function runLegacy(
  interpreter: InterpreterLike,
  code: Uint8Array,
  opts: { pc?: number },
): Promise<RunResult> {
  const rs = interpreter._runState;
  rs.code = code;
  rs.programCounter = opts.pc ?? rs.programCounter;
  const start = rs.programCounter;
  if (start !== 0 && (start < 0 || start >= rs.code.length))
    throw new Error("Internal error: program counter not in range");
  let err: EVMError | undefined;
  let cached: OpcodeEntry[] | undefined;
  while (rs.programCounter < rs.code.length) {
    const pc = rs.programCounter;
    let opCode: number;
    let entry: OpcodeEntry | undefined;
    if (cached === undefined) {
      opCode = rs.code[pc]!;
      // As the library: the jump analysis runs at the first jump, and from then on the
      // analysed table gives each position's opcode.
      if (opCode === 0x56 || opCode === 0x57 || opCode === 0x5e) {
        const analysis = interpreter._getValidJumpDestinations(rs.code);
        rs.validJumps = analysis.jumps;
        rs.cachedPushes = analysis.pushes;
        rs.shouldDoJumpAnalysis = false;
        cached = analysis.opcodesCached;
      }
    } else {
      entry = cached[pc]!;
      opCode = entry.opcodeInfo.code;
    }
    rs.opCode = opCode;
    try {
      const waiting = step(interpreter, rs, entry);
      if (waiting !== undefined) await waiting;
    } catch (e) {
      rs.env.accessWitness?.revert();
      if (!(e instanceof Object && "errorType" in e && e.errorType === "EVMError")) throw e;
      if ((e as EVMError).error !== EVMError.errorMessages.STOP) err = e as EVMError;
      break;
    }
  }
  if (
    err === undefined &&
    rs.eip8037BurnLeftoverAfterCreateHaltOntoAlive === true &&
    rs.gasLeft > 0n
  ) {
    rs.gasLeft = 0n;
    err = new EVMError(EVMError.errorMessages.OUT_OF_GAS);
  }
  return { runState: rs, exceptionError: err };
}

/** One opcode, as the library's `runStep`: a promise only when a handler returned one. */
function step(
  interpreter: InterpreterLike,
  rs: RunState,
  given: OpcodeEntry | undefined,
): Promise<void> | undefined {
  // A call's deferred out-of-gas (EIP-7928) is settled by the library's own step.
  if (rs.eip7928PostTargetCallOog !== undefined) return interpreter.runStep(given);
  const entry = given ?? interpreter.lookupOpInfo(rs.opCode);
  const info = entry.opcodeInfo;
  if (info.dynamicGas) {
    const gas = entry.gasHandler(rs, info.feeBigInt, interpreter.common);
    if (typeof gas === "bigint") return execute(interpreter, rs, entry, gas);
    return gas.then((g) => execute(interpreter, rs, entry, g));
  }
  return execute(interpreter, rs, entry, info.feeBigInt);
}

function execute(
  interpreter: InterpreterLike,
  rs: RunState,
  entry: OpcodeEntry,
  gas: bigint,
): Promise<void> | undefined {
  const info = entry.opcodeInfo;
  if (info.isInvalid) throw new EVMError(EVMError.errorMessages.INVALID_OPCODE);
  interpreter.useGas(gas, info);
  rs.programCounter++;
  const done = entry.opHandler(rs, interpreter.common);
  if (done instanceof Promise) return done.then(() => rs.env.accessWitness?.commit());
  rs.env.accessWitness?.commit();
  return undefined;
}

/**
 * STOP and RETURN end a run by throwing a STOP error that the loop catches: a throw for nearly
 * every message. Moving the program counter past the code ends the loop the same
 * way, in both loops (theirs checks it before each opcode), with no error, as STOP's catch
 * leaves it. RETURN's output goes where `finish` puts it.
 */
export function stop(runState: RunState): void {
  runState.programCounter = runState.code.length;
}

interface MessageLike {
  readonly to?: Address;
  readonly caller?: Address;
  readonly data?: Uint8Array;
  readonly value?: bigint;
  readonly code: Uint8Array;
  readonly isStatic?: boolean;
  readonly isCreate?: boolean;
  readonly depth?: number;
  readonly codeAddress: Address;
  readonly gasRefund: bigint;
  readonly gasLimit: bigint;
  readonly chargeCodeAccesses?: boolean;
  readonly blobVersionedHashes?: Uint8Array[];
  readonly accessWitness?: { commit(): void };
  readonly createdAddresses?: Set<string>;
  readonly selfdestruct?: Map<string, Uint8Array>;
}

interface EVMInternals {
  readonly stateManager: { getAccount(address: Address): Promise<Account | undefined> };
  readonly blockchain: unknown;
  readonly journal: unknown;
  readonly performanceLogger: unknown;
  readonly _optsCached: { readonly profiler?: unknown };
  readonly _tx: { readonly gasPrice: bigint; readonly origin?: Address };
  readonly _block?: unknown;
}

const installedEVM = new WeakSet<object>();

/**
 * `EVM.runInterpreter` as the library has it, but for the result's `runState`: the library
 * merges the run state, the result and the environment into one new object of some forty
 * properties for every message, which nothing reads (callers read the gas and output fields
 * beside it) and which cost a quarter of a simple `eth_call`. Here `runState` is the run's
 * state as the interpreter returned it. Traced and profiled runs keep the library's.
 */
export function installRunInterpreter(
  Interpreter: abstract new (...args: never[]) => object,
): void {
  const proto = EVM.prototype as unknown as {
    runInterpreter(this: EVM & EVMInternals, message: MessageLike, opts?: object): Promise<unknown>;
  };
  if (installedEVM.has(proto) || typeof proto.runInterpreter !== "function") return;
  installedEVM.add(proto);
  const library = proto.runInterpreter;
  let construct: ((...args: InterpreterArgs) => MadeInterpreter) | undefined;
  const Make = Interpreter as unknown as new (...args: InterpreterArgs) => MadeInterpreter;
  proto.runInterpreter = async function (message, opts = {}) {
    // Traced runs (step listeners) and profiled ones keep the library's, as in `run`.
    if (this._optsCached.profiler !== undefined || this.events.listenerCount("step") > 0)
      return library.call(this, message, opts);
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
      block: this._block ?? defaultBlock(),
      contract,
      codeAddress: message.codeAddress,
      gasRefund: message.gasRefund,
      chargeCodeAccesses: message.chargeCodeAccesses,
      blobVersionedHashes: message.blobVersionedHashes ?? [],
      accessWitness: message.accessWitness,
      createdAddresses: message.createdAddresses,
      initialLogs: (opts as { initialLogs?: unknown[] }).initialLogs,
    };
    const args = [
      this,
      this.stateManager,
      this.blockchain,
      env,
      message.gasLimit,
      this.journal,
      this.performanceLogger,
      this._optsCached.profiler,
    ] as const;
    construct ??= interpreterConstructor(Make, args);
    const interpreter = construct(...args);
    if (message.selfdestruct) interpreter._result.selfdestruct = message.selfdestruct;
    if (message.createdAddresses) interpreter._result.createdAddresses = message.createdAddresses;
    const interpreterRes = await interpreter.run(message.code, opts);
    const result = interpreter._result;
    const runState = interpreterRes.runState;
    const exceptionError = interpreterRes.exceptionError;
    let gasUsed = message.gasLimit - runState.gasLeft;
    // The library spreads `_result` into the answer. Its fields are the four below, but a
    // spread into a literal that then gets seven more properties took 5–10 µs a message
    // (V8's generic object clone): the answer is written out field by field instead, one
    // shape for every message, `createdAddresses` present also when undefined.
    let logs = result.logs;
    let selfdestruct = result.selfdestruct;
    let createdAddresses = result.createdAddresses;
    if (exceptionError) {
      if (
        exceptionError.error !== EVMError.errorMessages.REVERT &&
        exceptionError.error !== EVMError.errorMessages.INVALID_EOF_FORMAT
      )
        gasUsed = message.gasLimit;
      // Clear the result on error
      logs = [];
      selfdestruct = new Map();
      createdAddresses = new Set();
    }
    message.accessWitness?.commit();
    return {
      logs,
      returnValue: result.returnValue ?? new Uint8Array(0),
      selfdestruct,
      createdAddresses,
      runState,
      exceptionError,
      gas: runState.gasLeft,
      executionGasUsed: gasUsed,
      gasRefund: runState.gasRefund,
      stateGasSpilled: runState.stateGasSpilled,
    };
  };
}

/** The library's block for runs without one (`runCode` with no block). */
function defaultBlock(): unknown {
  return {
    header: {
      number: 0n,
      coinbase: createZeroAddress(),
      timestamp: 0n,
      difficulty: 0n,
      prevRandao: new Uint8Array(32),
      gasLimit: 0n,
      baseFeePerGas: undefined,
      slotNumber: 0n,
      getBlobGasPrice: () => undefined,
    },
  };
}

let executeCallInstalled = false;

/** EIPs under which `_executeCall` charges gas or records accesses before the code runs. */
const PRE_CALL_EIPS = [2780, 6800, 7702, 7708, 7864, 7928] as const;

interface CallMessage {
  readonly to: Address;
  readonly data?: Uint8Array;
  readonly gasLimit: bigint;
  readonly gasRefund: bigint;
  readonly caller: Address;
  readonly value: bigint;
  readonly depth: number;
  readonly delegatecall?: boolean;
  code: Uint8Array | ((...args: never[]) => unknown);
  isCompiled?: boolean;
}

interface CallResult {
  gasRefund?: bigint;
  executionGasUsed: bigint;
  exceptionError?: unknown;
  returnValue: Uint8Array;
  logs?: unknown[] | undefined;
}

interface CallInternals {
  readonly DEBUG: boolean;
  readonly common: { isActivatedEIP(eip: number): boolean };
  readonly stateManager: { getAccount(address: Address): Promise<Account | undefined> };
  readonly events: { listenerCount(event: string): number };
  readonly _optsCached: { readonly profiler?: { readonly enabled?: boolean } };
  _reduceSenderBalance(account: Account, message: CallMessage): Promise<void>;
  _addToBalance(account: Account, message: CallMessage): Promise<void>;
  _loadCode(message: CallMessage): Promise<void>;
  runPrecompile(code: unknown, data: Uint8Array | undefined, gasLimit: bigint): Promise<CallResult>;
  runInterpreter(message: CallMessage, opts: object): Promise<CallResult>;
  postMessageCleanup(): void;
}

/**
 * `EVM._executeCall` for the rules without pre-call charges (through Cancun, the node's): the
 * library's steps in the library's order (debit the caller, credit the callee, load the code,
 * run it or the precompile), but the interpreter gets the message itself. The library copies
 * the message into a new object of some thirty properties first, for the gas limit it may have
 * lowered under those EIPs; under these rules it never does, and the copy was a quarter of a
 * simple `eth_call`. Traced, profiled or debug-logged runs, and any of those EIPs, keep the
 * library's.
 */
export function installExecuteCall(): void {
  const proto = EVM.prototype as unknown as {
    _executeCall(this: CallInternals, message: CallMessage): Promise<{ execResult: CallResult }>;
  };
  if (executeCallInstalled || typeof proto._executeCall !== "function") return;
  executeCallInstalled = true;
  const library = proto._executeCall;
  proto._executeCall = async function (message) {
    const common = this.common;
    if (
      this.DEBUG ||
      this._optsCached.profiler?.enabled === true ||
      this.events.listenerCount("step") > 0 ||
      PRE_CALL_EIPS.some((eip) => common.isActivatedEIP(eip))
    )
      return library.call(this, message);
    const account = (await this.stateManager.getAccount(message.caller)) ?? new Account();
    let error: unknown;
    if (message.delegatecall !== true) {
      try {
        await this._reduceSenderBalance(account, message);
      } catch (e) {
        error = e;
      }
    }
    const toAccount = (await this.stateManager.getAccount(message.to)) ?? new Account();
    if (message.delegatecall !== true) {
      try {
        await this._addToBalance(toAccount, message);
      } catch (e) {
        error = e;
      }
    }
    await this._loadCode(message);
    const code = message.code;
    if (!code || (typeof code !== "function" && code.length === 0) || error !== undefined) {
      return {
        execResult: {
          gasRefund: message.gasRefund,
          executionGasUsed: 0n,
          exceptionError: error,
          returnValue: new Uint8Array(0),
          logs: undefined,
        },
      };
    }
    let result: CallResult;
    if (message.isCompiled === true) {
      result = await this.runPrecompile(code, message.data, message.gasLimit);
      result.gasRefund = message.gasRefund;
    } else {
      result = await this.runInterpreter(message, { initialLogs: undefined });
    }
    if (message.depth === 0) this.postMessageCleanup();
    return { execResult: result };
  };
}

type InterpreterArgs = readonly [
  evm: object,
  stateManager: unknown,
  blockchain: unknown,
  env: { readonly gasRefund: bigint; readonly initialLogs?: unknown[] | undefined },
  gasLimit: bigint,
  journal: unknown,
  performanceLogger: unknown,
  profiler: unknown,
];

interface MadeInterpreter {
  _result: {
    logs: unknown[];
    returnValue?: Uint8Array;
    selfdestruct: Map<string, Uint8Array>;
    createdAddresses?: Set<string>;
  };
  readonly _env: object;
  run(code: Uint8Array, opts: object): Promise<RunResult>;
}

interface MemoryLike {
  _store: Uint8Array;
  extend(offset: number, size: number): void;
}

/**
 * How `runInterpreter` makes each message's interpreter. The library's constructor gives every
 * message 8 kB of memory up front, an allocation outside the JavaScript heap that costs more
 * than a simple call's whole run and that the garbage collector then has to reclaim. This
 * makes the same object (the same fields, in the same order, with the same values) with empty
 * memory that grows as the code uses it. The first call compares a library-made interpreter
 * with one made here; any difference (another version of the library) keeps the library's
 * constructor for good.
 */
function interpreterConstructor(
  Make: new (...args: InterpreterArgs) => MadeInterpreter,
  first: InterpreterArgs,
): (...args: InterpreterArgs) => MadeInterpreter {
  const library = (...args: InterpreterArgs) => new Make(...args);
  const reference = new Make(...first) as unknown as {
    _runState: { memory: MemoryLike; stack: object };
  };
  const Stack = reference._runState.stack.constructor as new () => object;
  const memoryProto = Object.getPrototypeOf(reference._runState.memory) as MemoryLike;
  const fast = (...args: InterpreterArgs): MadeInterpreter => {
    const [evm, stateManager, blockchain, env, gasLeft, journal, performanceLogs, profilerOpts] =
      args;
    const it = Object.create(Make.prototype) as Record<string, unknown>;
    it.opDebuggers = {};
    it._evm = evm;
    it._stateManager = stateManager;
    const common = (evm as { common: { consensusType(): string } }).common;
    it.common = common;
    if (
      common.consensusType() === "poa" &&
      (evm as { _optsCached: { cliqueSigner?: unknown } })._optsCached.cliqueSigner === undefined
    )
      return new Make(...args);
    const memory = Object.create(memoryProto) as MemoryLike;
    memory._store = new Uint8Array(0);
    it._runState = {
      programCounter: 0,
      opCode: 0xfe,
      memory,
      memoryWordCount: 0n,
      highestMemCost: 0n,
      stack: new Stack(),
      code: new Uint8Array(0),
      validJumps: Uint8Array.from([]),
      cachedPushes: {},
      stateManager,
      blockchain,
      env,
      shouldDoJumpAnalysis: true,
      interpreter: it,
      gasRefund: env.gasRefund,
      gasLeft,
      stateGasSpilled: 0n,
      returnBytes: new Uint8Array(0),
    };
    it.journal = journal;
    it._env = env;
    it._result = {
      logs: env.initialLogs ? [...env.initialLogs] : [],
      returnValue: undefined,
      selfdestruct: new Map(),
    };
    it.profilerOpts = profilerOpts;
    it.performanceLogger = performanceLogs;
    return it as unknown as MadeInterpreter;
  };
  const made = fast(...first) as unknown as Record<string, unknown>;
  const same = (a: object, b: object) => Object.keys(a).join() === Object.keys(b).join();
  const ref = reference as unknown as Record<string, object>;
  if (
    !same(made, ref) ||
    !same(made._runState as object, ref._runState!) ||
    !same(made._result as object, ref._result!) ||
    !same((made._runState as { memory: object }).memory, reference._runState.memory) ||
    typeof memoryProto.extend !== "function"
  )
    return library;
  installMemoryGrowth(memoryProto);
  return fast;
}

const grownMemory = new WeakSet<object>();

/**
 * Memory that starts empty grows as the library's does (to whole words, zeros past what was
 * written) but by doubling from 256 bytes rather than in steps of 8 kB: what the code reads and
 * writes, and the gas, are the same; only the spare room differs.
 */
function installMemoryGrowth(proto: MemoryLike): void {
  if (grownMemory.has(proto)) return;
  grownMemory.add(proto);
  proto.extend = function (this: MemoryLike, offset: number, size: number): void {
    if (size === 0) return;
    const end = offset + size;
    const needed = end % 32 === 0 ? end : end + 32 - (end % 32);
    const store = this._store;
    if (needed <= store.length) return;
    let length = store.length < 256 ? 256 : store.length * 2;
    while (length < needed) length *= 2;
    const grown = new Uint8Array(length);
    grown.set(store);
    this._store = grown;
  };
}
