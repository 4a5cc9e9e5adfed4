import type { LogQuery } from "@nodex/chain";
import type { CallRequest } from "@nodex/evm";
import { type Address, type BlockSelector, NodexError } from "@nodex/types";
import { RawJson } from "./results.js";

/** The options of `debug_trace*`, decoded. */
export interface TraceConfig {
  readonly tracer: "structLogger" | "callTracer" | "prestateTracer";
  readonly disableStack: boolean;
  readonly disableMemory: boolean;
  readonly disableStorage: boolean;
  readonly enableReturnData: boolean;
  readonly onlyTopCall: boolean;
  readonly withLog: boolean;
  readonly diffMode: boolean;
}

/** `trace_filter`'s options, decoded (the limits are checked by the method). */
export interface TraceFilter {
  readonly fromBlock: BlockSelector;
  readonly toBlock: BlockSelector;
  readonly fromAddress: readonly Address[];
  readonly toAddress: readonly Address[];
  readonly after: number;
  readonly count: number;
}

/** What bounds one trace: when it stops, and how much struct log it may capture. */
export interface TraceBudget {
  /** When the tracers stop (`Date.now()` milliseconds); 0 for never. */
  readonly deadline: number;
  /** The most a struct-log trace (of a transaction or of a block) may capture, in JSON bytes. */
  readonly structLogBytes?: number;
}

/**
 * A request that may hold a thread for long (a trace runs transactions again; a log query may
 * read and format thousands of logs), with its decoded params: plain values that cross to a
 * worker thread as they are (structured clone). None of them names the `pending` block, which
 * lives in the main thread's memory: those are served there.
 */
export type HeavyRequest =
  | {
      readonly method: "debug_traceTransaction";
      readonly hash: Uint8Array;
      readonly config: TraceConfig;
      readonly budget: TraceBudget;
    }
  | {
      readonly method: "debug_traceBlockByHash";
      readonly hash: Uint8Array;
      readonly config: TraceConfig;
      readonly budget: TraceBudget;
    }
  | {
      readonly method: "debug_traceBlockByNumber";
      readonly selector: BlockSelector;
      readonly config: TraceConfig;
      readonly budget: TraceBudget;
    }
  | {
      readonly method: "debug_traceCall";
      readonly call: CallRequest;
      readonly selector: BlockSelector;
      readonly config: TraceConfig;
      readonly budget: TraceBudget;
    }
  | {
      readonly method: "trace_transaction";
      readonly hash: Uint8Array;
      readonly budget: TraceBudget;
    }
  | {
      readonly method: "trace_block";
      readonly selector: BlockSelector;
      readonly budget: TraceBudget;
    }
  | {
      readonly method: "trace_filter";
      readonly filter: TraceFilter;
      readonly budget: TraceBudget;
    }
  | { readonly method: "eth_getLogs"; readonly query: LogQuery };

/**
 * Serves heavy requests away from the thread that answers the others (the node's worker
 * threads): the result of each as the JSON text the method answers, the same text the method
 * would answer on the main thread. Domain errors come back as domain errors (the same JSON-RPC
 * error); anything else (a worker thread that stopped) is an internal error.
 */
export interface HeavyRequestService {
  /** The result's JSON: text, or UTF-8 bytes (`eth_getLogs`'s). */
  run(request: HeavyRequest): Promise<string | Uint8Array>;
  /**
   * Whether a thread is ready to take a request; starts the threads when they are not started.
   * `debug_traceCall`, one call like `eth_call`'s, runs on the calling thread while none is
   * ready, rather than waiting for them to start.
   */
  ready?(): boolean;
}

export const HeavyErrorCode = {
  /** Too many heavy requests wait for a thread already (answered as -32011). */
  QUEUE_FULL: "RPC_HEAVY_QUEUE_FULL",
} as const;
export type HeavyErrorCode = (typeof HeavyErrorCode)[keyof typeof HeavyErrorCode];

/** A heavy request the service does not take. */
export class HeavyRequestError extends NodexError<HeavyErrorCode> {
  constructor(code: HeavyErrorCode, message: string, meta: Record<string, unknown> = {}) {
    super(code, message, meta);
    this.name = "HeavyRequestError";
  }
}

/**
 * `request` served by `heavy` when there is one (its text as the result), or by `local` on this
 * thread.
 */
export function offload(
  heavy: HeavyRequestService | undefined,
  request: HeavyRequest,
  local: () => Promise<unknown>,
): Promise<unknown> {
  if (heavy === undefined) return local();
  return heavy.run(request).then((text) => new RawJson(text));
}

/** A request's trace budget: its deadline counted from now. */
export function traceBudget(limits: {
  readonly timeoutMs: number;
  readonly structLogBytes?: number;
}): TraceBudget {
  const deadline = limits.timeoutMs > 0 ? Date.now() + limits.timeoutMs : 0;
  return limits.structLogBytes === undefined
    ? { deadline }
    : { deadline, structLogBytes: limits.structLogBytes };
}
