import { NodexError } from "@nodex/types";
import { RPCError } from "./errors.js";
import type { HeavyRequest } from "./heavyRequests.js";
import {
  traceTransactionResult as debugTransaction,
  traceBlockByHashResult,
  traceBlockByNumberResult,
  traceCallResult,
} from "./modules/debug.js";
import { logsResult } from "./modules/ethChain.js";
import {
  traceTransactionResult as parityTransaction,
  traceBlockResult,
  traceFilterResult,
} from "./modules/trace.js";
import type { ChainReaderService, TracingService } from "./services.js";

/** What serving a heavy request reads: a chain reader and its tracing (a worker thread's own). */
export interface HeavyWorkDeps {
  readonly reader: Pick<ChainReaderService, "resolve" | "blockByHash" | "getLogs" | "traceCall">;
  readonly tracing: TracingService;
}

/**
 * Serves `request` on `deps` as its method would on the main thread, and answers the JSON of its
 * result, as text or (`eth_getLogs`) as bytes in a buffer of their own, which the worker thread
 * hands over without a copy: what the node's worker threads run.
 */
export async function serveHeavyRequest(
  deps: HeavyWorkDeps,
  request: HeavyRequest,
): Promise<string | Uint8Array> {
  const { reader, tracing } = deps;
  switch (request.method) {
    case "eth_getLogs":
      return logsResult(reader, request.query);
    case "debug_traceTransaction":
      return JSON.stringify(
        await debugTransaction(tracing, request.hash, request.config, request.budget),
      );
    case "debug_traceBlockByHash":
      return JSON.stringify(
        await traceBlockByHashResult(reader, tracing, request.hash, request.config, request.budget),
      );
    case "debug_traceBlockByNumber":
      return JSON.stringify(
        await traceBlockByNumberResult(
          reader,
          tracing,
          request.selector,
          request.config,
          request.budget,
        ),
      );
    case "debug_traceCall":
      return JSON.stringify(
        await traceCallResult(
          reader,
          request.call,
          request.selector,
          request.config,
          request.budget,
        ),
      );
    case "trace_transaction":
      return JSON.stringify(await parityTransaction(tracing, request.hash, request.budget));
    case "trace_block":
      return JSON.stringify(
        await traceBlockResult(reader, tracing, request.selector, request.budget),
      );
    case "trace_filter":
      return JSON.stringify(
        await traceFilterResult(reader, tracing, request.filter, request.budget),
      );
  }
}

/** An error of a heavy request as it crosses threads (structured clone keeps no class). */
export type HeavyFailure =
  | {
      readonly kind: "rpc";
      readonly code: number;
      readonly message: string;
      readonly data?: string;
    }
  | { readonly kind: "domain"; readonly code: string; readonly message: string }
  | { readonly kind: "unexpected"; readonly message: string; readonly stack?: string };

export function encodeHeavyFailure(err: unknown): HeavyFailure {
  if (err instanceof RPCError)
    return err.data === undefined
      ? { kind: "rpc", code: err.code, message: err.message }
      : { kind: "rpc", code: err.code, message: err.message, data: err.data };
  if (err instanceof NodexError) return { kind: "domain", code: err.code, message: err.message };
  const e = err instanceof Error ? err : new Error(String(err));
  return e.stack === undefined
    ? { kind: "unexpected", message: e.message }
    : { kind: "unexpected", message: e.message, stack: e.stack };
}

/**
 * The error to throw on the main thread: the same JSON-RPC error as the original would be
 * answered with; an unexpected one stays unexpected (-32603, logged with its stack).
 */
export function decodeHeavyFailure(failure: HeavyFailure): Error {
  switch (failure.kind) {
    case "rpc":
      return new RPCError(failure.code, failure.message, failure.data);
    case "domain":
      return new NodexError(failure.code, failure.message);
    case "unexpected": {
      const err = new Error(`in a worker thread: ${failure.message}`);
      if (failure.stack !== undefined) err.stack = failure.stack;
      return err;
    }
  }
}
