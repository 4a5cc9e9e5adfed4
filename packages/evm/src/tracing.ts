import type { EVM } from "@ethereumjs/evm";
import { Address as EJSAddress } from "@ethereumjs/util";
import { NodexError } from "@nodex/types";

/** How a call frame was entered, in geth's names. */
export const CallKind = {
  CALL: "CALL",
  STATICCALL: "STATICCALL",
  DELEGATECALL: "DELEGATECALL",
  CALLCODE: "CALLCODE",
  CREATE: "CREATE",
  CREATE2: "CREATE2",
  SELFDESTRUCT: "SELFDESTRUCT",
} as const;
export type CallKind = (typeof CallKind)[keyof typeof CallKind];

/** Reads of the state as it is at the moment of the event (changes made so far included). */
export interface TraceStateReader {
  /** `undefined` when the account does not exist. */
  account(address: Uint8Array): Promise<{ nonce: bigint; balance: bigint } | undefined>;
  code(address: Uint8Array): Promise<Uint8Array>;
  /** The slot's value, 32 bytes. */
  storage(address: Uint8Array, key: Uint8Array): Promise<Uint8Array>;
}

/** One opcode about to run. Views (`stack()`, `memory()`) are valid only during the call. */
export interface TraceStep {
  readonly pc: number;
  readonly op: number;
  readonly opName: string;
  /** Gas left before the opcode. */
  readonly gas: bigint;
  /** The opcode's cost as geth counts it: the CALL family includes the gas handed to the callee. */
  readonly gasCost: bigint;
  /** 1 in the transaction's own frame. */
  readonly depth: number;
  /** The account whose storage the running code uses. */
  readonly address: Uint8Array;
  readonly refund: bigint;
  /** Stack items, bottom first (a copy). */
  stack(): bigint[];
  /** The `n`-th item from the top (0 = top). */
  peek(n: number): bigint;
  stackLength(): number;
  /** The memory in use, a view: copy what is kept. */
  memory(): Uint8Array;
  /** The return data of the last call made by this frame. */
  returnData(): Uint8Array;
  readonly state: TraceStateReader;
}

export interface FrameStart {
  readonly kind: CallKind;
  /** 0 for the transaction's own frame. */
  readonly depth: number;
  readonly from: Uint8Array;
  /** `null` for a creation (the address is known at exit). */
  readonly to: Uint8Array | null;
  readonly input: Uint8Array;
  readonly gas: bigint;
  /** `undefined` for STATICCALL (no value). */
  readonly value: bigint | undefined;
}

export interface FrameEnd {
  readonly depth: number;
  readonly gasUsed: bigint;
  readonly output: Uint8Array;
  /** The EVM's reason for a failure (`revert`, `out of gas`, …). */
  readonly error: string | undefined;
  readonly createdAddress: Uint8Array | undefined;
}

export interface TxStart {
  readonly from: Uint8Array;
  readonly to: Uint8Array | null;
  readonly value: bigint;
  readonly gasLimit: bigint;
  readonly gasPrice: bigint;
  readonly input: Uint8Array;
  readonly intrinsicGas: bigint;
  readonly coinbase: Uint8Array;
}

export interface TxEnd {
  /** As the receipt counts it (refund applied). */
  readonly gasUsed: bigint;
  /** Gas used by execution, without the intrinsic gas and before the refund. */
  readonly executionGasUsed: bigint;
  readonly returnValue: Uint8Array;
  readonly error: string | undefined;
  readonly contractAddress: Uint8Array | null;
}

/**
 * What a tracer hears of one transaction. Every hook may be asynchronous: execution waits.
 * `txStart` comes before the sender is charged; `txEnd` after fees are paid.
 */
export interface ExecutionTracer {
  txStart?(tx: TxStart, state: TraceStateReader): void | Promise<void>;
  enter?(frame: FrameStart, state: TraceStateReader): void | Promise<void>;
  step?(step: TraceStep): void | Promise<void>;
  exit?(frame: FrameEnd, state: TraceStateReader): void | Promise<void>;
  txEnd?(end: TxEnd, state: TraceStateReader): void | Promise<void>;
}

export const TraceAbortCode = {
  /** The trace ran over its time budget. */
  DEADLINE: "EVM_TRACE_DEADLINE",
  /** The trace grew past its size limit. */
  LIMIT: "EVM_TRACE_LIMIT",
} as const;
export type TraceAbortCode = (typeof TraceAbortCode)[keyof typeof TraceAbortCode];

/** Thrown by a tracer to stop execution (deadline, size limit). Not an EVM halt: it propagates. */
export class TraceAbort extends NodexError<TraceAbortCode> {
  readonly reason: "deadline" | "limit";
  constructor(reason: "deadline" | "limit", message: string) {
    super(reason === "deadline" ? TraceAbortCode.DEADLINE : TraceAbortCode.LIMIT, message);
    this.name = "TraceAbort";
    this.reason = reason;
  }
}

// --- the interpreter hook -------------------------------------------------------------------

interface RunStateLike {
  programCounter: number;
  opCode: number;
  gasRefund: bigint;
  messageGasLimit?: bigint;
  returnBytes: Uint8Array;
  stack: { _store: bigint[]; _len: number };
  memory: { _store: Uint8Array };
}

interface InterpreterLike {
  _evm: EVM;
  _runState: RunStateLike;
  _env: { depth: number; address: EJSAddress };
  lookupOpInfo(op: number): { opcodeInfo: { fullName: string } };
  _runStepHook(dynamicFee: bigint, gasLeft: bigint, memorySize: bigint): Promise<void>;
}

/** Per EVM: who hears its steps, and the opcode of the last step (for the kind of a new frame). */
interface Sink {
  readonly tracer: ExecutionTracer;
  readonly state: TraceStateReader;
  lastOp: number;
  /** A frame hook's failure, thrown at the next step and by `detach`. */
  failure: unknown;
}

const sinks = new WeakMap<EVM, Sink>();
const installedHooks = new WeakSet<object>();

const CALL_FAMILY = new Set([0xf1, 0xf2, 0xf4, 0xfa]);

/**
 * Replaces the interpreter's `step` event of `@ethereumjs/evm` (which copies the whole memory
 * and builds an object per opcode) for the EVMs a tracer is attached to: the tracer reads the
 * run state through `TraceStep` views, and only what it keeps is copied. EVMs without a tracer
 * keep the library's event. `Interpreter` is the class `findInterpreter` returns.
 */
export function installStepHook(Interpreter: { readonly prototype: object }): void {
  const proto = Interpreter.prototype as InterpreterLike;
  if (installedHooks.has(proto)) return;
  const original = proto._runStepHook;
  if (typeof original !== "function") return;
  installedHooks.add(proto);
  proto._runStepHook = function (
    this: InterpreterLike,
    dynamicFee: bigint,
    gasLeft: bigint,
    memorySize: bigint,
  ): Promise<void> {
    const sink = sinks.get(this._evm);
    if (sink === undefined) return original.call(this, dynamicFee, gasLeft, memorySize);
    if (sink.failure !== undefined) return Promise.reject(sink.failure);
    const run = this._runState;
    const op = run.opCode;
    sink.lastOp = op;
    if (sink.tracer.step === undefined) return Promise.resolve();
    const cost =
      CALL_FAMILY.has(op) && run.messageGasLimit !== undefined
        ? dynamicFee + run.messageGasLimit
        : dynamicFee;
    const memoryBytes = Number(memorySize) * 32;
    const step: TraceStep = {
      pc: run.programCounter,
      op,
      opName: this.lookupOpInfo(op).opcodeInfo.fullName,
      gas: gasLeft,
      gasCost: cost,
      depth: this._env.depth + 1,
      address: this._env.address.bytes,
      refund: run.gasRefund,
      stack: () => run.stack._store.slice(0, run.stack._len),
      peek: (n) => run.stack._store[run.stack._len - 1 - n] ?? 0n,
      stackLength: () => run.stack._len,
      memory: () => run.memory._store.subarray(0, memoryBytes),
      returnData: () => run.returnBytes,
      state: sink.state,
    };
    const done = sink.tracer.step(step);
    return done instanceof Promise ? done : Promise.resolve();
  };
}

interface MessageLike {
  caller: EJSAddress;
  to?: EJSAddress;
  codeAddress?: EJSAddress;
  value: bigint;
  data: Uint8Array;
  gasLimit: bigint;
  depth: number;
  delegatecall?: boolean;
  isStatic?: boolean;
  salt?: Uint8Array;
}

interface ResultLike {
  createdAddress?: EJSAddress;
  execResult: {
    executionGasUsed: bigint;
    returnValue: Uint8Array;
    exceptionError?: { error: string };
  };
}

const KIND_BY_OP: Readonly<Record<number, CallKind>> = {
  240: CallKind.CREATE,
  241: CallKind.CALL,
  242: CallKind.CALLCODE,
  244: CallKind.DELEGATECALL,
  245: CallKind.CREATE2,
  250: CallKind.STATICCALL,
};

/** The state reads a tracer is given, on the EVM's state manager. */
export function stateReader(evm: EVM): TraceStateReader {
  const manager = evm.stateManager;
  return {
    async account(address) {
      const account = await manager.getAccount(new EJSAddress(address));
      return account === undefined ? undefined : { nonce: account.nonce, balance: account.balance };
    },
    code: (address) => manager.getCode(new EJSAddress(address)),
    async storage(address, key) {
      const value = await manager.getStorage(new EJSAddress(address), key);
      return leftPad32(value);
    },
  };
}

/**
 * Attaches `tracer` to `evm` until `detach` is called: steps through the interpreter hook,
 * frames through the EVM's message events. `detach` throws the failure of a frame hook, if any
 * (the EVM's events cannot fail, so it is held until then or thrown at the next step).
 */
export function attachTracer(
  evm: EVM,
  tracer: ExecutionTracer,
  state: TraceStateReader,
): { detach(): void } {
  const sink: Sink = { tracer, state, lastOp: 0, failure: undefined };
  const settle = (done: void | Promise<void>, resolve: () => void): void => {
    if (done instanceof Promise)
      done.then(resolve, (err: unknown) => {
        sink.failure ??= err;
        resolve();
      });
    else resolve();
  };
  sinks.set(evm, sink);
  const depths: number[] = [];
  const noop = (): void => {};
  const before = (message: MessageLike, resolve: () => void): void => {
    depths.push(message.depth);
    if (tracer.enter === undefined) {
      resolve();
      return;
    }
    const create = message.to === undefined;
    let kind: CallKind;
    if (message.depth === 0) kind = create ? CallKind.CREATE : CallKind.CALL;
    else
      kind =
        KIND_BY_OP[sink.lastOp] ??
        (create
          ? message.salt !== undefined
            ? CallKind.CREATE2
            : CallKind.CREATE
          : message.delegatecall === true
            ? CallKind.DELEGATECALL
            : CallKind.CALL);
    const from = kind === CallKind.DELEGATECALL && message.to ? message.to : message.caller;
    const to = create ? null : (message.codeAddress ?? message.to ?? null);
    settle(
      tracer.enter(
        {
          kind,
          depth: message.depth,
          from: from.bytes,
          to: to === null ? null : to.bytes,
          input: message.data,
          gas: message.gasLimit,
          value: kind === CallKind.STATICCALL ? undefined : message.value,
        },
        state,
      ),
      resolve,
    );
  };
  const after = (result: ResultLike, resolve: () => void): void => {
    const depth = depths.pop() ?? 0;
    if (tracer.exit === undefined) {
      resolve();
      return;
    }
    const exec = result.execResult;
    settle(
      tracer.exit(
        {
          depth,
          gasUsed: exec.executionGasUsed,
          output: exec.returnValue,
          error: exec.exceptionError?.error,
          createdAddress: result.createdAddress?.bytes,
        },
        state,
      ),
      resolve,
    );
  };
  evm.events.on("step", noop);
  evm.events.on("beforeMessage", before as never);
  evm.events.on("afterMessage", after as never);
  return {
    detach() {
      sinks.delete(evm);
      evm.events.off("step", noop);
      evm.events.off("beforeMessage", before as never);
      evm.events.off("afterMessage", after as never);
      if (sink.failure !== undefined) throw sink.failure;
    },
  };
}

export function leftPad32(bytes: Uint8Array): Uint8Array {
  if (bytes.length === 32) return bytes;
  const out = new Uint8Array(32);
  out.set(bytes.subarray(Math.max(0, bytes.length - 32)), 32 - Math.min(32, bytes.length));
  return out;
}
