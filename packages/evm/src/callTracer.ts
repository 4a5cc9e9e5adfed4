import { bytesToHex } from "@nodex/types";
import { decodeRevertReason } from "./revert.js";
import { gethError, parityError } from "./traceErrors.js";
import {
  CallKind,
  type ExecutionTracer,
  type FrameEnd,
  type FrameStart,
  TraceAbort,
  type TraceStep,
  type TxEnd,
  type TxStart,
} from "./tracing.js";

/** One frame of a transaction: a call, a creation or a self-destruct, with its inner frames. */
export interface CallFrame {
  readonly kind: CallKind;
  readonly from: Uint8Array;
  /** The callee, the created contract (once known) or the self-destruct's beneficiary. */
  to: Uint8Array | null;
  readonly input: Uint8Array;
  readonly gas: bigint;
  gasUsed: bigint;
  /** `undefined` for STATICCALL. */
  readonly value: bigint | undefined;
  output: Uint8Array;
  /** The EVM's halt reason (`revert`, `out of gas`, …). */
  error: string | undefined;
  readonly calls: CallFrame[];
  /** Logs emitted by this frame's own code, with the number of inner frames before each. */
  readonly logs: FrameLog[];
}

export interface FrameLog {
  readonly address: Uint8Array;
  readonly topics: Uint8Array[];
  readonly data: Uint8Array;
  readonly position: number;
}

/** A transaction's frames, with what the transaction as a whole used. */
export interface CallTrace {
  readonly root: CallFrame;
  readonly gasLimit: bigint;
  readonly intrinsicGas: bigint;
  /** As the receipt counts it. */
  readonly gasUsed: bigint;
}

export interface CallTracerOptions {
  /** A `Date.now()` past which the trace stops with `TraceAbort("deadline")`; 0 for none. */
  readonly deadline?: number;
}

const SELFDESTRUCT = 0xff;
const EMPTY = new Uint8Array();
const DEADLINE_EVERY = 4096;
const LOG0 = 0xa0;

/**
 * Records the frames of a transaction (the tree geth's `callTracer` and OpenEthereum's
 * `trace_*` are written from): every call, creation (CREATE and CREATE2 apart), precompile
 * call and self-destruct, with gas given and used, input, output and halt reason.
 */
export class CallTracer implements ExecutionTracer {
  readonly #deadline: number;
  readonly #open: CallFrame[] = [];
  #root: CallFrame | undefined;
  #tx: TxStart | undefined;
  #end: TxEnd | undefined;
  #steps = 0;

  constructor(opts: CallTracerOptions = {}) {
    this.#deadline = opts.deadline ?? 0;
  }

  txStart(tx: TxStart): void {
    this.#tx = tx;
  }

  enter(start: FrameStart): void {
    const frame: CallFrame = {
      kind: start.kind,
      from: start.from,
      to: start.to,
      input: start.input,
      gas: start.gas,
      gasUsed: 0n,
      value: start.value,
      output: EMPTY,
      error: undefined,
      calls: [],
      logs: [],
    };
    const parent = this.#open.at(-1);
    if (parent === undefined) this.#root ??= frame;
    else parent.calls.push(frame);
    this.#open.push(frame);
  }

  exit(end: FrameEnd): void {
    const frame = this.#open.pop();
    if (frame === undefined) return;
    frame.gasUsed = end.gasUsed;
    frame.output = end.output;
    frame.error = end.error;
    if (end.createdAddress !== undefined) frame.to = end.createdAddress;
  }

  async step(step: TraceStep): Promise<void> {
    if (this.#deadline > 0 && this.#steps++ % DEADLINE_EVERY === 0 && Date.now() > this.#deadline)
      throw new TraceAbort("deadline", "the trace ran over the request's time limit");
    if (step.op >= LOG0 && step.op <= LOG0 + 4) {
      const frame = this.#open.at(-1);
      const n = step.op - LOG0;
      if (frame === undefined || step.stackLength() < 2 + n) return;
      const offset = Number(step.peek(0));
      const size = Number(step.peek(1));
      const memory = step.memory();
      const data = new Uint8Array(size);
      if (offset < memory.length) data.set(memory.subarray(offset, offset + size));
      const topics: Uint8Array[] = [];
      for (let i = 0; i < n; i++) topics.push(word32(step.peek(2 + i)));
      frame.logs.push({ address: step.address, topics, data, position: frame.calls.length });
      return;
    }
    if (step.op !== SELFDESTRUCT) return;
    const parent = this.#open.at(-1);
    if (parent === undefined) return;
    const beneficiary = addressOf(step.peek(0));
    const balance = (await step.state.account(step.address))?.balance ?? 0n;
    parent.calls.push({
      kind: CallKind.SELFDESTRUCT,
      from: step.address,
      to: beneficiary,
      input: EMPTY,
      gas: 0n,
      gasUsed: 0n,
      value: balance,
      output: EMPTY,
      error: undefined,
      calls: [],
      logs: [],
    });
  }

  txEnd(end: TxEnd): void {
    this.#end = end;
  }

  result(): CallTrace {
    const root = this.#root;
    const tx = this.#tx;
    if (root === undefined || tx === undefined)
      throw new Error("the call tracer saw no transaction");
    return {
      root,
      gasLimit: tx.gasLimit,
      intrinsicGas: tx.intrinsicGas,
      gasUsed: this.#end?.gasUsed ?? 0n,
    };
  }
}

function word32(value: bigint): Uint8Array {
  const out = new Uint8Array(32);
  let v = value;
  for (let i = 31; i >= 0; i--) {
    out[i] = Number(v & 0xffn);
    v >>= 8n;
  }
  return out;
}

function addressOf(value: bigint): Uint8Array {
  const out = new Uint8Array(20);
  let v = value;
  for (let i = 19; i >= 0; i--) {
    out[i] = Number(v & 0xffn);
    v >>= 8n;
  }
  return out;
}

function quantity(value: bigint): string {
  return `0x${value.toString(16)}`;
}

/** Geth's `callTracer` frame (`callFrame` marshalled): empty members left out. */
export interface GethCallFrame {
  type: string;
  from: string;
  gas: string;
  gasUsed: string;
  to?: string;
  input: string;
  output?: string;
  error?: string;
  revertReason?: string;
  calls?: GethCallFrame[];
  logs?: { address: string; topics: string[]; data: string; position: string }[];
  value?: string;
}

/**
 * A transaction's frames in geth's `callTracer` format. The top frame's `gas` is the
 * transaction's gas limit and its `gasUsed` the receipt's; with `onlyTopCall` the inner frames
 * are left out; with `withLog` each frame has the `logs` its code emitted (`position`: the
 * number of inner frames before the log), none for a failed frame or inside one.
 */
export function toGethCallFrame(
  trace: CallTrace,
  opts: { onlyTopCall?: boolean; withLog?: boolean } = {},
): GethCallFrame {
  const top = gethFrame(trace.root, opts.onlyTopCall === true, opts.withLog === true);
  top.gas = quantity(trace.gasLimit);
  top.gasUsed = quantity(trace.gasUsed);
  return top;
}

function gethFrame(frame: CallFrame, onlyTop: boolean, withLog: boolean): GethCallFrame {
  const out: GethCallFrame = {
    type: frame.kind,
    from: bytesToHex(frame.from),
    gas: quantity(frame.gas),
    gasUsed: quantity(frame.gasUsed),
    ...(frame.to === null ? {} : { to: bytesToHex(frame.to) }),
    input: bytesToHex(frame.input),
  };
  if (frame.error === undefined) {
    if (frame.output.length > 0) out.output = bytesToHex(frame.output);
  } else {
    out.error = gethError(frame.error);
    if (frame.error === "revert" && frame.output.length > 0) {
      out.output = bytesToHex(frame.output);
      const reason = decodeRevertReason(frame.output);
      if (reason !== undefined) out.revertReason = reason;
    }
  }
  const logs = withLog && frame.error === undefined;
  if (!onlyTop && frame.calls.length > 0)
    out.calls = frame.calls.map((c) => gethFrame(c, false, logs));
  if (logs && frame.logs.length > 0)
    out.logs = frame.logs.map((log) => ({
      address: bytesToHex(log.address),
      topics: log.topics.map((t) => bytesToHex(t)),
      data: bytesToHex(log.data),
      position: quantity(BigInt(log.position)),
    }));
  if (frame.value !== undefined) out.value = quantity(frame.value);
  return out;
}

/** Where a transaction is, for `trace_*` results. */
export interface TraceLocation {
  readonly blockHash: Uint8Array;
  readonly blockNumber: bigint;
  readonly transactionHash: Uint8Array;
  readonly transactionPosition: number;
}

/** One trace in OpenEthereum's format (`trace_transaction`, `trace_block`, `trace_filter`). */
export interface ParityTrace {
  action: Record<string, string>;
  blockHash: string;
  blockNumber: number;
  error?: string;
  result: Record<string, string> | null;
  subtraces: number;
  traceAddress: number[];
  transactionHash: string;
  transactionPosition: number;
  type: "call" | "create" | "suicide";
}

/**
 * A transaction's frames as OpenEthereum's flat trace list, depth first. The top frame's `gas`
 * leaves out the intrinsic gas and its `gasUsed` counts execution alone (before the refund), as
 * OpenEthereum does. A failed frame has `error` and a `null` result.
 */
export function toParityTraces(trace: CallTrace, where: TraceLocation): ParityTrace[] {
  const out: ParityTrace[] = [];
  const location = {
    blockHash: bytesToHex(where.blockHash),
    blockNumber: Number(where.blockNumber),
    transactionHash: bytesToHex(where.transactionHash),
    transactionPosition: where.transactionPosition,
  };
  const walk = (frame: CallFrame, address: number[], top: boolean): void => {
    const gas = top ? trace.gasLimit - trace.intrinsicGas : frame.gas;
    let type: ParityTrace["type"];
    let action: Record<string, string>;
    let result: Record<string, string> | null = null;
    if (frame.kind === CallKind.SELFDESTRUCT) {
      type = "suicide";
      action = {
        address: bytesToHex(frame.from),
        refundAddress: bytesToHex(frame.to ?? new Uint8Array(20)),
        balance: quantity(frame.value ?? 0n),
      };
    } else if (frame.kind === CallKind.CREATE || frame.kind === CallKind.CREATE2) {
      type = "create";
      action = {
        from: bytesToHex(frame.from),
        gas: quantity(gas),
        init: bytesToHex(frame.input),
        value: quantity(frame.value ?? 0n),
        creationMethod: frame.kind === CallKind.CREATE2 ? "create2" : "create",
      };
      if (frame.error === undefined)
        result = {
          address: bytesToHex(frame.to ?? new Uint8Array(20)),
          code: bytesToHex(frame.output),
          gasUsed: quantity(frame.gasUsed),
        };
    } else {
      type = "call";
      action = {
        callType: frame.kind.toLowerCase(),
        from: bytesToHex(frame.from),
        gas: quantity(gas),
        input: bytesToHex(frame.input),
        to: bytesToHex(frame.to ?? new Uint8Array(20)),
        value: quantity(frame.value ?? 0n),
      };
      if (frame.error === undefined)
        result = { gasUsed: quantity(frame.gasUsed), output: bytesToHex(frame.output) };
    }
    const entry: ParityTrace = {
      action,
      ...location,
      result,
      subtraces: frame.calls.length,
      traceAddress: address,
      type,
    };
    if (frame.error !== undefined) entry.error = parityError(frame.error);
    out.push(orderTrace(entry));
    frame.calls.forEach((child, i) => {
      walk(child, [...address, i], false);
    });
  };
  walk(trace.root, [], true);
  return out;
}

/** OpenEthereum's member order: action, blockHash, blockNumber, error, result, … */
function orderTrace(t: ParityTrace): ParityTrace {
  const ordered: ParityTrace = {
    action: t.action,
    blockHash: t.blockHash,
    blockNumber: t.blockNumber,
    result: t.result,
    subtraces: t.subtraces,
    traceAddress: t.traceAddress,
    transactionHash: t.transactionHash,
    transactionPosition: t.transactionPosition,
    type: t.type,
  };
  if (t.error === undefined) return ordered;
  const { action, blockHash, blockNumber, ...rest } = ordered;
  return { action, blockHash, blockNumber, error: t.error, ...rest };
}
