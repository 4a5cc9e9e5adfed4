import {
  ChainError,
  ChainErrorCode,
  type IncludedTransaction,
  isPendingTag,
  type StoredBlock,
} from "@nodex/chain";
import {
  type CallRequest,
  CallTracer,
  type ExecutionTracer,
  PrestateTracer,
  StructLogger,
  toGethCallFrame,
} from "@nodex/evm";
import {
  type BlockSelector,
  BlockTag,
  bytesToHex,
  CodecError,
  type SignedTransaction,
} from "@nodex/types";
import { checkCallGas } from "../callObject.js";
import {
  type HeavyRequestService,
  offload,
  type TraceBudget,
  type TraceConfig,
  traceBudget,
} from "../heavyRequests.js";
import { jsonType, type ParamSpec, p } from "../params.js";
import { defineModule, method } from "../registry.js";
import { r } from "../results.js";
import type { ChainReaderService, TracingService } from "../services.js";

export type { TraceConfig } from "../heavyRequests.js";

const DEFAULT_TRACE_CONFIG: TraceConfig = {
  tracer: "structLogger",
  disableStack: false,
  disableMemory: false,
  disableStorage: false,
  enableReturnData: false,
  onlyTopCall: false,
  withLog: false,
  diffMode: false,
};

const FLAGS = [
  "disableStack",
  "disableMemory",
  "disableStorage",
  "enableReturnData",
  "onlyTopCall",
  "withLog",
  "diffMode",
] as const;

/**
 * Geth's trace options: `tracer` (`callTracer`, `prestateTracer`; absent for the struct
 * logger), `disableStack`, `disableMemory`, `disableStorage`, `enableReturnData`, and the
 * tracer's `tracerConfig` (`onlyTopCall`, `withLog`, `diffMode`), whose keys are also taken at the top
 * level as the reference node does. Other keys (`enableMemory`, `timeout`, …) are ignored.
 */
export function parseTraceConfig(value: unknown, arg: number): TraceConfig {
  if (typeof value !== "object" || value === null || Array.isArray(value))
    throw new CodecError(arg, `expected a trace options object, got ${jsonType(value)}`);
  const raw = value as Record<string, unknown>;
  const inner = raw.tracerConfig;
  if (inner !== undefined && inner !== null && (typeof inner !== "object" || Array.isArray(inner)))
    throw new CodecError(arg, `tracerConfig: expected an object, got ${jsonType(inner)}`);
  const merged: Record<string, unknown> = { ...raw, ...((inner as object | null) ?? {}) };
  const flags: Record<(typeof FLAGS)[number], boolean> = { ...DEFAULT_TRACE_CONFIG };
  for (const flag of FLAGS) {
    const v = merged[flag];
    if (v === undefined || v === null) continue;
    if (typeof v !== "boolean")
      throw new CodecError(arg, `${flag}: expected a boolean, got ${jsonType(v)}`);
    flags[flag] = v;
  }
  const name = raw.tracer;
  let tracer: TraceConfig["tracer"];
  if (name === undefined || name === null || name === "") tracer = "structLogger";
  else if (name === "callTracer" || name === "prestateTracer") tracer = name;
  else
    throw new CodecError(
      arg,
      `tracer ${JSON.stringify(name)} is not supported: use callTracer, prestateTracer or no tracer (the struct logger)`,
    );
  return { ...flags, tracer };
}

const traceConfig: ParamSpec<TraceConfig> = p.optional(
  { name: "trace options", parse: parseTraceConfig, optional: false, defaultValue: undefined },
  DEFAULT_TRACE_CONFIG,
);

/**
 * `debug_traceCall`'s options: `debug_traceTransaction`'s, and geth's `stateOverrides` and
 * `blockOverrides`, which are refused (-32602) rather than ignored: a trace of another state
 * than the one asked for would mislead.
 */
export function parseTraceCallConfig(value: unknown, arg: number): TraceConfig {
  const config = parseTraceConfig(value, arg);
  const raw = value as Record<string, unknown>;
  for (const key of ["stateOverrides", "blockOverrides"])
    if (raw[key] !== undefined && raw[key] !== null)
      throw new CodecError(arg, `${key} is not supported`);
  return config;
}

const traceCallConfig: ParamSpec<TraceConfig> = p.optional(
  {
    name: "trace options",
    parse: parseTraceCallConfig,
    optional: false,
    defaultValue: undefined,
  },
  DEFAULT_TRACE_CONFIG,
);

const LATEST: BlockSelector = { kind: "tag", tag: BlockTag.LATEST };

export interface TraceLimits {
  /** The request's time budget (the dispatcher's); 0 for none. */
  readonly timeoutMs: number;
  /** The most a struct-log trace (of a transaction or of a block) may capture, in JSON bytes. */
  readonly structLogBytes?: number;
}

type AnyTracer = StructLogger | CallTracer | PrestateTracer;

/** The tracers of one request: one per transaction, sharing a deadline and a size budget. */
function tracerFactory(config: TraceConfig, limits: TraceBudget): () => AnyTracer {
  const { deadline } = limits;
  const budget = { used: 0 };
  return () => {
    switch (config.tracer) {
      case "callTracer":
        return new CallTracer({ deadline });
      case "prestateTracer":
        return new PrestateTracer({ diffMode: config.diffMode, deadline });
      default:
        return new StructLogger({
          disableStack: config.disableStack,
          disableMemory: config.disableMemory,
          disableStorage: config.disableStorage,
          enableReturnData: config.enableReturnData,
          deadline,
          budget,
          ...(limits.structLogBytes === undefined ? {} : { limitBytes: limits.structLogBytes }),
        });
    }
  };
}

function resultOf(tracer: AnyTracer, config: TraceConfig): unknown {
  if (tracer instanceof CallTracer)
    return toGethCallFrame(tracer.result(), {
      onlyTopCall: config.onlyTopCall,
      withLog: config.withLog,
    });
  return tracer.result();
}

async function traceBlock(
  tracing: TracingService,
  block: StoredBlock,
  config: TraceConfig,
  limits: TraceBudget,
): Promise<{ txHash: string; result: unknown }[]> {
  const make = tracerFactory(config, limits);
  const traced = await tracing.traceBlock<ExecutionTracer & AnyTracer>(
    block,
    (_tx: SignedTransaction) => make(),
  );
  return traced.map(({ tx, tracer }) => ({
    txHash: bytesToHex(tx.hash),
    result: resultOf(tracer, config),
  }));
}

/** `debug_traceTransaction`'s result: `null` for an unknown transaction. */
export async function traceTransactionResult(
  tracing: TracingService,
  hash: Uint8Array,
  config: TraceConfig,
  budget: TraceBudget,
): Promise<unknown> {
  const make = tracerFactory(config, budget);
  const traced = await tracing.traceTransaction<ExecutionTracer & AnyTracer>(
    hash,
    (_found: IncludedTransaction) => make(),
  );
  return traced === null ? null : resultOf(traced.tracer, config);
}

/**
 * `debug_traceCall`'s result: the call traced as `debug_traceTransaction` traces a transaction,
 * run as `eth_call` runs it (on the state after the selected block, as part of the next one).
 */
export async function traceCallResult(
  reader: Pick<ChainReaderService, "traceCall">,
  req: CallRequest,
  selector: BlockSelector,
  config: TraceConfig,
  budget: TraceBudget,
): Promise<unknown> {
  const { tracer } = await reader.traceCall(req, selector, tracerFactory(config, budget)());
  return resultOf(tracer, config);
}

/** `debug_traceBlockByHash`'s result; an unknown block is `UNKNOWN_BLOCK`. */
export async function traceBlockByHashResult(
  reader: Pick<ChainReaderService, "blockByHash">,
  tracing: TracingService,
  hash: Uint8Array,
  config: TraceConfig,
  budget: TraceBudget,
): Promise<unknown> {
  const block = await reader.blockByHash(hash);
  if (block === null) throw unknownBlock(bytesToHex(hash));
  return traceBlock(tracing, block, config, budget);
}

/** `debug_traceBlockByNumber`'s result; an unknown block is `UNKNOWN_BLOCK`. */
export async function traceBlockByNumberResult(
  reader: Pick<ChainReaderService, "resolve">,
  tracing: TracingService,
  selector: BlockSelector,
  config: TraceConfig,
  budget: TraceBudget,
): Promise<unknown> {
  const block = await reader.resolve(selector);
  if (block === null) throw unknownBlock(selector.kind === "number" ? `#${selector.number}` : "");
  return traceBlock(tracing, block, config, budget);
}

/**
 * The `debug_trace*` methods in geth's formats: the struct logger by default, `callTracer`
 * and `prestateTracer`. Blocks answer `[{txHash, result}]`; `debug_traceCall` traces a call
 * as `eth_call` runs it. An unknown transaction is `null`;
 * an unknown block is -32602. With `heavy`, traces run there (off the thread that answers the
 * other requests), but those of the `pending` block.
 */
export function debugTraceModule(
  reader: ChainReaderService,
  tracing: TracingService,
  limits: TraceLimits,
  heavy?: HeavyRequestService,
) {
  return defineModule("debug", {
    traceTransaction: method({
      params: [p.hash, traceConfig],
      result: r.json,
      handler: (_s, [hash, config]) => {
        const budget = traceBudget(limits);
        return offload(heavy, { method: "debug_traceTransaction", hash, config, budget }, () =>
          traceTransactionResult(tracing, hash, config, budget),
        );
      },
    }),
    // geth's [callObject, blockNrOrHash, options]; the block defaults to `latest`. Served here
    // for the `pending` block (in this thread's memory) and while no thread of `heavy` is ready,
    // by `heavy` otherwise.
    traceCall: method({
      params: [p.callObject, p.optional(p.blockSelector, LATEST), traceCallConfig],
      result: r.json,
      handler: (_s, [req, selector, config]) => {
        checkCallGas(req);
        const budget = traceBudget(limits);
        const local = () => traceCallResult(reader, req, selector, config, budget);
        // One call, as eth_call runs here: it does not wait for the threads to start.
        if (isPendingTag(selector) || heavy?.ready?.() === false) return local();
        return offload(
          heavy,
          { method: "debug_traceCall", call: req, selector, config, budget },
          local,
        );
      },
    }),
    traceBlockByHash: method({
      params: [p.hash, traceConfig],
      result: r.json,
      handler: (_s, [hash, config]) => {
        const budget = traceBudget(limits);
        return offload(heavy, { method: "debug_traceBlockByHash", hash, config, budget }, () =>
          traceBlockByHashResult(reader, tracing, hash, config, budget),
        );
      },
    }),
    traceBlockByNumber: method({
      params: [p.blockNumberOrTag, traceConfig],
      result: r.json,
      handler: (_s, [selector, config]) => {
        const budget = traceBudget(limits);
        const local = () => traceBlockByNumberResult(reader, tracing, selector, config, budget);
        if (isPendingTag(selector)) return local();
        return offload(
          heavy,
          { method: "debug_traceBlockByNumber", selector, config, budget },
          local,
        );
      },
    }),
  });
}

function unknownBlock(which: string): ChainError {
  return new ChainError(
    ChainErrorCode.UNKNOWN_BLOCK,
    `block ${which} not found`.replace("  ", " "),
  );
}
