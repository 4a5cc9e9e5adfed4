import { isPendingTag, LOGS_UNCAPPED_RANGE, type StoredBlock } from "@nodex/chain";
import { CallTracer, type ParityTrace, toParityTraces } from "@nodex/evm";
import {
  type Address,
  type BlockSelector,
  bytesToHex,
  CodecError,
  parseAddress,
  parseBlockNumberOrTag,
} from "@nodex/types";
import { invalidParams } from "../errors.js";
import {
  type HeavyRequestService,
  offload,
  type TraceBudget,
  type TraceFilter,
  traceBudget,
} from "../heavyRequests.js";
import { jsonType, type ParamSpec, p } from "../params.js";
import { defineModule, method } from "../registry.js";
import { r } from "../results.js";
import type { ChainReaderService, TracingService } from "../services.js";
import type { TraceLimits } from "./debug.js";

/** The most traces one `trace_filter` answer holds (the reference node's `maxTracesPerRequest`). */
export const MAX_TRACES_PER_REQUEST = 10_000;

export type { TraceFilter } from "../heavyRequests.js";

function parseAddresses(value: unknown, arg: number): Address[] {
  if (value === undefined || value === null) return [];
  if (typeof value === "string") return [parseAddress(value, arg)];
  if (!Array.isArray(value))
    throw new CodecError(arg, `expected an address or a list of addresses, got ${jsonType(value)}`);
  return value.map((a) => parseAddress(a, arg));
}

function parseCount(value: unknown, arg: number, name: string, fallback: number): number {
  if (value === undefined || value === null) return fallback;
  if (typeof value === "number" && Number.isInteger(value)) return value;
  if (typeof value === "string" && /^0x[0-9a-fA-F]+$/.test(value))
    return Number.parseInt(value, 16);
  throw new CodecError(arg, `${name}: expected an integer, got ${jsonType(value)}`);
}

export function parseTraceFilter(value: unknown, arg: number): TraceFilter {
  if (typeof value !== "object" || value === null || Array.isArray(value))
    throw new CodecError(arg, `expected a filter object, got ${jsonType(value)}`);
  const o = value as Record<string, unknown>;
  return {
    fromBlock:
      o.fromBlock === undefined || o.fromBlock === null
        ? { kind: "tag", tag: "earliest" }
        : parseBlockNumberOrTag(o.fromBlock, arg),
    toBlock:
      o.toBlock === undefined || o.toBlock === null
        ? { kind: "tag", tag: "latest" }
        : parseBlockNumberOrTag(o.toBlock, arg),
    fromAddress: parseAddresses(o.fromAddress, arg),
    toAddress: parseAddresses(o.toAddress, arg),
    after: parseCount(o.after, arg, "after", 0),
    count: parseCount(o.count, arg, "count", MAX_TRACES_PER_REQUEST),
  };
}

const traceFilter: ParamSpec<TraceFilter> = {
  name: "filter",
  parse: parseTraceFilter,
  optional: false,
  defaultValue: undefined,
};

/** Every transaction of `block` as OpenEthereum's flat traces, in order. */
async function blockTraces(
  tracing: TracingService,
  block: StoredBlock,
  deadline: number,
): Promise<ParityTrace[]> {
  const traced = await tracing.traceBlock(block, () => new CallTracer({ deadline }));
  return traced.flatMap(({ tx, index, tracer }) =>
    toParityTraces(tracer.result(), {
      blockHash: block.hash,
      blockNumber: block.block.header.number,
      transactionHash: tx.hash,
      transactionPosition: index,
    }),
  );
}

/** The accounts a trace goes from and to, as OpenEthereum's filter matches them. */
function endpoints(trace: ParityTrace): { from: string | undefined; to: string | undefined } {
  const a = trace.action;
  if (trace.type === "suicide") return { from: a.address, to: a.refundAddress };
  if (trace.type === "create") return { from: a.from, to: trace.result?.address };
  return { from: a.from, to: a.to };
}

/** `trace_transaction`'s result: `null` for an unknown transaction. */
export async function traceTransactionResult(
  tracing: TracingService,
  hash: Uint8Array,
  budget: TraceBudget,
): Promise<ParityTrace[] | null> {
  const { deadline } = budget;
  const traced = await tracing.traceTransaction(hash, () => new CallTracer({ deadline }));
  if (traced === null) return null;
  const { found, tracer } = traced;
  return toParityTraces(tracer.result(), {
    blockHash: found.block.hash,
    blockNumber: found.block.block.header.number,
    transactionHash: found.tx.hash,
    transactionPosition: found.index,
  });
}

/** `trace_block`'s result: `null` for an unknown block. */
export async function traceBlockResult(
  reader: Pick<ChainReaderService, "blockByHash" | "resolve">,
  tracing: TracingService,
  selector: BlockSelector,
  budget: TraceBudget,
): Promise<ParityTrace[] | null> {
  const block =
    selector.kind === "hash"
      ? await reader.blockByHash(selector.hash)
      : await reader.resolve(selector);
  if (block === null) return null;
  return blockTraces(tracing, block, budget.deadline);
}

/** `trace_filter`'s result (its count and range checked here). */
export async function traceFilterResult(
  reader: Pick<ChainReaderService, "resolve">,
  tracing: TracingService,
  filter: TraceFilter,
  budget: TraceBudget,
): Promise<ParityTrace[]> {
  if (filter.count > MAX_TRACES_PER_REQUEST)
    throw invalidParams(`Count value too big. Maximum ${MAX_TRACES_PER_REQUEST} traces allowed.`);
  if (filter.after < 0) throw invalidParams("After value cannot be negative.");
  if (filter.count < 0) throw invalidParams("Count value cannot be negative.");
  const from = await reader.resolve(filter.fromBlock);
  const to = await reader.resolve(filter.toBlock);
  if (from === null || to === null) return [];
  const first = from.block.header.number;
  const last = to.block.header.number;
  if (first > last) throw invalidParams("fromBlock cannot be greater than toBlock");
  if (last - first + 1n > LOGS_UNCAPPED_RANGE)
    throw invalidParams(
      `block range too large: trace_filter reads at most ${LOGS_UNCAPPED_RANGE} blocks`,
    );
  const { deadline } = budget;
  const fromSet = new Set<string>(filter.fromAddress.map((a) => bytesToHex(a)));
  const toSet = new Set<string>(filter.toAddress.map((a) => bytesToHex(a)));
  const out: ParityTrace[] = [];
  let skip = filter.after;
  for (let n = first; n <= last && out.length < filter.count; n++) {
    const block = n === last ? to : await reader.resolve({ kind: "number", number: n });
    if (block === null || block.block.transactions.length === 0) continue;
    for (const trace of await blockTraces(tracing, block, deadline)) {
      const ends = endpoints(trace);
      if (fromSet.size > 0 && (ends.from === undefined || !fromSet.has(ends.from))) continue;
      if (toSet.size > 0 && (ends.to === undefined || !toSet.has(ends.to))) continue;
      if (skip > 0) {
        skip--;
        continue;
      }
      out.push(trace);
      if (out.length >= filter.count) break;
    }
  }
  return out;
}

/**
 * The `trace_*` methods in OpenEthereum's format: `trace_transaction` and `trace_block` (`null`
 * for an unknown transaction or block, `[]` for a block without transactions) and
 * `trace_filter`, over at most `LOGS_UNCAPPED_RANGE` blocks (the uncapped `eth_getLogs` range)
 * and `MAX_TRACES_PER_REQUEST` traces. With `heavy`, traces run there (off the thread that
 * answers the other requests), but those of the `pending` block.
 */
export function traceModule(
  reader: ChainReaderService,
  tracing: TracingService,
  limits: TraceLimits,
  heavy?: HeavyRequestService,
) {
  return defineModule("trace", {
    transaction: method({
      params: [p.hash],
      result: r.json,
      handler: (_s, [hash]) => {
        const budget = traceBudget(limits);
        return offload(heavy, { method: "trace_transaction", hash, budget }, () =>
          traceTransactionResult(tracing, hash, budget),
        );
      },
    }),
    block: method({
      params: [p.blockSelector],
      result: r.json,
      handler: (_s, [selector]) => {
        const budget = traceBudget(limits);
        const local = () => traceBlockResult(reader, tracing, selector, budget);
        if (isPendingTag(selector)) return local();
        return offload(heavy, { method: "trace_block", selector, budget }, local);
      },
    }),
    filter: method({
      params: [traceFilter],
      result: r.json,
      handler: (_s, [filter]) => {
        const budget = traceBudget(limits);
        const local = () => traceFilterResult(reader, tracing, filter, budget);
        if (isPendingTag(filter.fromBlock) || isPendingTag(filter.toBlock)) return local();
        return offload(heavy, { method: "trace_filter", filter, budget }, local);
      },
    }),
  });
}
