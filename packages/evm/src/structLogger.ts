import { bytesToHex } from "@nodex/types";
import { gethError } from "./traceErrors.js";
import {
  type ExecutionTracer,
  type FrameEnd,
  leftPad32,
  TraceAbort,
  type TraceStep,
  type TxEnd,
} from "./tracing.js";

export interface StructLoggerOptions {
  readonly disableStack?: boolean;
  readonly disableMemory?: boolean;
  readonly disableStorage?: boolean;
  readonly enableReturnData?: boolean;
  /**
   * The most the captured logs may weigh, counted as the characters of their JSON; past it the
   * trace stops with `TraceAbort("limit")`. `STRUCT_LOG_LIMIT_BYTES` when absent.
   */
  readonly limitBytes?: number;
  /** Shared by the loggers of one request (a block's transactions): the bytes captured so far. */
  readonly budget?: { used: number };
  /** A `Date.now()` past which the trace stops with `TraceAbort("deadline")`; 0 for none. */
  readonly deadline?: number;
}

/** What the struct logger keeps of all transactions' steps by default: 64 MiB of JSON. */
export const STRUCT_LOG_LIMIT_BYTES = 64 * 1024 * 1024;

/** One step in geth's format (`StructLogRes`). */
export interface StructLog {
  pc: number;
  op: string;
  gas: number;
  gasCost: number;
  depth: number;
  error?: string;
  stack?: string[];
  returnData?: string;
  memory?: string[];
  storage?: Record<string, string>;
  refund?: number;
}

/** Geth's default tracer result (`ExecutionResult`). */
export interface StructLogResult {
  gas: number;
  failed: boolean;
  /** Hex without `0x`: the output, the revert data of a revert, empty for other failures. */
  returnValue: string;
  structLogs: StructLog[];
}

/** Steps checked against the deadline once per this many. */
const DEADLINE_EVERY = 1024;
const SLOAD = 0x54;
const SSTORE = 0x55;

/**
 * Geth's struct logger (the default tracer of `debug_trace*`): one entry per opcode with pc,
 * op, gas, gasCost, depth, and unless disabled the stack (`0x` quantities, bottom first), the
 * memory (32-byte words, hex without `0x`) and, at SLOAD and SSTORE, the storage slots of the
 * running contract touched so far (64-hex keys and values without `0x`). `error` marks the step
 * an exceptional halt happened at; `refund` is the refund counter when not zero.
 *
 * The logs are bounded (`limitBytes`): a trace past the limit stops with `TraceAbort("limit")`
 * instead of exhausting memory.
 */
export class StructLogger implements ExecutionTracer {
  readonly #opts: StructLoggerOptions;
  readonly #limit: number;
  readonly #logs: StructLog[] = [];
  /** Slots touched so far, per contract (hex address). */
  readonly #storage = new Map<string, Record<string, string>>();
  /** Index of the last log of each open frame, innermost last. */
  readonly #lastOfFrame: number[] = [];
  readonly #budget: { used: number };
  #end: TxEnd | undefined;

  constructor(opts: StructLoggerOptions = {}) {
    this.#opts = opts;
    this.#limit = opts.limitBytes ?? STRUCT_LOG_LIMIT_BYTES;
    this.#budget = opts.budget ?? { used: 0 };
  }

  enter(): void {
    this.#lastOfFrame.push(-1);
  }

  exit(frame: FrameEnd): void {
    const last = this.#lastOfFrame.pop() ?? -1;
    const log = this.#logs[last];
    if (log !== undefined && frame.error !== undefined && frame.error !== "revert")
      log.error = gethError(frame.error);
  }

  async step(step: TraceStep): Promise<void> {
    const opts = this.#opts;
    if (
      opts.deadline !== undefined &&
      opts.deadline > 0 &&
      this.#logs.length % DEADLINE_EVERY === 0 &&
      Date.now() > opts.deadline
    ) {
      throw new TraceAbort("deadline", "the trace ran over the request's time limit");
    }
    const log: StructLog = {
      pc: step.pc,
      op: step.opName,
      gas: Number(step.gas),
      gasCost: Number(step.gasCost),
      depth: step.depth,
    };
    let bytes = 80 + step.opName.length;
    if (opts.disableStack !== true) {
      const stack = step.stack().map((v) => `0x${v.toString(16)}`);
      for (const item of stack) bytes += item.length + 3;
      log.stack = stack;
    }
    if (opts.enableReturnData === true) {
      const data = step.returnData();
      if (data.length > 0) {
        log.returnData = bytesToHex(data);
        bytes += log.returnData.length;
      }
    }
    if (opts.disableMemory !== true) {
      const memory = step.memory();
      const words: string[] = new Array(memory.length / 32);
      for (let i = 0; i < words.length; i++)
        words[i] = Buffer.from(memory.buffer, memory.byteOffset + i * 32, 32).toString("hex");
      bytes += words.length * 67;
      log.memory = words;
    }
    if (opts.disableStorage !== true && (step.op === SLOAD || step.op === SSTORE)) {
      const need = step.op === SLOAD ? 1 : 2;
      if (step.stackLength() >= need) {
        const address = bytesToHex(step.address);
        let slots = this.#storage.get(address);
        if (slots === undefined) {
          slots = {};
          this.#storage.set(address, slots);
        }
        const key = word(step.peek(0));
        slots[key] =
          step.op === SLOAD
            ? Buffer.from(await step.state.storage(step.address, hexWord(key))).toString("hex")
            : word(step.peek(1));
        log.storage = { ...slots };
        bytes += Object.keys(slots).length * 134;
      }
    }
    if (step.refund > 0n) log.refund = Number(step.refund);
    this.#budget.used += bytes;
    if (this.#budget.used > this.#limit) {
      throw new TraceAbort(
        "limit",
        `the trace is larger than ${this.#limit} bytes; trace with disableMemory or disableStack, or with the callTracer`,
      );
    }
    const at = this.#lastOfFrame.length - 1;
    if (at >= 0) this.#lastOfFrame[at] = this.#logs.length;
    this.#logs.push(log);
  }

  txEnd(end: TxEnd): void {
    this.#end = end;
  }

  result(): StructLogResult {
    const end = this.#end;
    const failed = end?.error !== undefined;
    const returnValue =
      end === undefined || (failed && end.error !== "revert")
        ? ""
        : Buffer.from(end.returnValue).toString("hex");
    return {
      gas: Number(end?.gasUsed ?? 0n),
      failed,
      returnValue,
      structLogs: this.#logs,
    };
  }
}

function word(value: bigint): string {
  return value.toString(16).padStart(64, "0");
}

function hexWord(hex64: string): Uint8Array {
  return leftPad32(Uint8Array.from(Buffer.from(hex64, "hex")));
}
