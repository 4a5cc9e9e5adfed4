import { randomBytes } from "node:crypto";
import type { FoundLog, HeadChange, LogQuery } from "@nodex/chain";
import { bytesToHex, type SignedTransaction } from "@nodex/types";
import { RPCError, RPCErrorCode } from "./errors.js";
import { headChangeLogs } from "./logFilter.js";
import type { ChainReaderService, NodeEvents } from "./services.js";

export interface FilterOptions {
  /** A filter not polled for this long is removed (the reference node's 5 minutes). */
  readonly timeoutMs: number;
  /** Filters installed at once; past it `eth_new*Filter` answers -32011. */
  readonly maxFilters: number;
  /** Changes a filter holds between polls; past it the oldest are dropped. */
  readonly maxChanges: number;
  /** Milliseconds; `Date.now` by default. */
  readonly now?: () => number;
}

export const DEFAULT_FILTER_OPTIONS: FilterOptions = {
  timeoutMs: 5 * 60_000,
  maxFilters: 10_000,
  maxChanges: 10_000,
};

/** A log change: a log that joined the canonical chain, or one a reorganization removed. */
export interface LogChange {
  readonly found: FoundLog;
  readonly removed: boolean;
}

export type FilterChanges =
  | { readonly kind: "logs"; readonly changes: readonly LogChange[] }
  | { readonly kind: "blocks" | "transactions"; readonly changes: readonly Uint8Array[] };

interface LogFilterState {
  kind: "logs";
  query: LogQuery;
  lastPoll: number;
  changes: LogChange[];
}

type Filter =
  | LogFilterState
  | { kind: "blocks" | "transactions"; lastPoll: number; changes: Uint8Array[] };

/**
 * What the filter methods call: the node's own filters (`FilterManager`), or the filters the
 * replicas of an endpoint share through Redis (`SharedFilterManager`).
 */
export interface FilterService {
  newLogFilter(query: LogQuery): bigint | Promise<bigint>;
  newBlockFilter(): bigint | Promise<bigint>;
  newPendingTransactionFilter(): bigint | Promise<bigint>;
  /** What happened since the last poll (or the install); the filter starts collecting anew. */
  changes(id: bigint): Promise<FilterChanges>;
  /** Every log a log filter matches now (its block range, against the chain as it is). */
  logs(id: bigint): Promise<FoundLog[]>;
  /** The log query of log filter `id` (`eth_getFilterLogs` runs it); counts as a poll. */
  logQuery(id: bigint): LogQuery | Promise<LogQuery>;
  /** `true` when the filter was there. */
  uninstall(id: bigint): boolean | Promise<boolean>;
  /** Stops following the node's events. */
  close(): void;
}

/**
 * The filters of `eth_newFilter`, `eth_newBlockFilter` and `eth_newPendingTransactionFilter`:
 * each collects what happened since its last poll from the node's events (logs of the blocks
 * that joined the chain, with `removed: true` for those of blocks that left it first; block
 * hashes; transaction hashes). Ids are random 128-bit QUANTITY values. A filter not polled for
 * `timeoutMs` is removed; one that is not polled holds at most `maxChanges` changes.
 */
export class FilterManager implements FilterService {
  readonly #reader: ChainReaderService;
  readonly #opts: FilterOptions;
  readonly #now: () => number;
  readonly #filters = new Map<bigint, Filter>();
  readonly #unsubscribe: (() => void)[];
  /** The head changes being turned into log changes, in order (polls wait for them). */
  #feed: Promise<void> = Promise.resolve();

  constructor(reader: ChainReaderService, events: NodeEvents, opts: Partial<FilterOptions> = {}) {
    this.#reader = reader;
    this.#opts = { ...DEFAULT_FILTER_OPTIONS, ...opts };
    this.#now = this.#opts.now ?? Date.now;
    this.#unsubscribe = [
      events.onHeadChange((change) => this.#onHeadChange(change)),
      events.onNewTransaction((tx) => this.#onNewTransaction(tx)),
    ];
  }

  /** Stops following the node's events and drops every filter. */
  close(): void {
    for (const stop of this.#unsubscribe) stop();
    this.#filters.clear();
  }

  get size(): number {
    return this.#filters.size;
  }

  newLogFilter(query: LogQuery): bigint {
    return this.#install({ kind: "logs", query, lastPoll: this.#now(), changes: [] });
  }

  newBlockFilter(): bigint {
    return this.#install({ kind: "blocks", lastPoll: this.#now(), changes: [] });
  }

  newPendingTransactionFilter(): bigint {
    return this.#install({ kind: "transactions", lastPoll: this.#now(), changes: [] });
  }

  /** What happened since the last poll (or the install); the filter starts collecting anew. */
  async changes(id: bigint): Promise<FilterChanges> {
    await this.#feed;
    const filter = this.#get(id);
    filter.lastPoll = this.#now();
    const taken = { kind: filter.kind, changes: filter.changes } as FilterChanges;
    filter.changes = [];
    return taken;
  }

  /** Every log a log filter matches now (its block range, against the chain as it is). */
  async logs(id: bigint): Promise<FoundLog[]> {
    return this.#reader.getLogs(this.logQuery(id));
  }

  /** The log query of log filter `id` (`eth_getFilterLogs` runs it); counts as a poll. */
  logQuery(id: bigint): LogQuery {
    const filter = this.#get(id);
    filter.lastPoll = this.#now();
    if (filter.kind !== "logs") {
      throw new RPCError(
        RPCErrorCode.INVALID_PARAMS,
        `filter ${formatId(id)} is a ${filter.kind === "blocks" ? "block" : "pending transaction"} filter: eth_getFilterLogs takes a log filter (eth_newFilter)`,
      );
    }
    return filter.query;
  }

  /** `true` when the filter was there. */
  uninstall(id: bigint): boolean {
    this.#sweep();
    return this.#filters.delete(id);
  }

  #install(filter: Filter): bigint {
    this.#sweep();
    if (this.#filters.size >= this.#opts.maxFilters) {
      throw new RPCError(
        RPCErrorCode.LIMIT_EXCEEDED,
        `too many filters: this node keeps at most ${this.#opts.maxFilters}; uninstall unused ones (eth_uninstallFilter) or let them expire (${Math.round(this.#opts.timeoutMs / 1000)} s without a poll)`,
      );
    }
    let id: bigint;
    do id = BigInt(bytesToHex(randomBytes(16)));
    while (id === 0n || this.#filters.has(id));
    this.#filters.set(id, filter);
    return id;
  }

  #get(id: bigint): Filter {
    this.#sweep();
    const filter = this.#filters.get(id);
    if (filter === undefined) throw new RPCError(RPCErrorCode.FILTER_NOT_FOUND, "filter not found");
    return filter;
  }

  /** Removes the filters nobody polled for `timeoutMs`. */
  #sweep(): void {
    const oldest = this.#now() - this.#opts.timeoutMs;
    for (const [id, filter] of this.#filters)
      if (filter.lastPoll < oldest) this.#filters.delete(id);
  }

  #onHeadChange(change: HeadChange): void {
    this.#sweep();
    const logFilters: LogFilterState[] = [];
    for (const filter of this.#filters.values()) {
      if (filter.kind === "logs") logFilters.push(filter);
      else if (filter.kind === "blocks")
        for (const block of change.added) push(filter.changes, block.hash, this.#opts.maxChanges);
    }
    if (logFilters.length === 0) return;
    this.#feed = this.#feed
      .then(() =>
        headChangeLogs(
          change,
          logFilters.map((f) => f.query),
          (i, found, removed) =>
            push(
              logFilters[i]!.changes,
              { found: withoutBlock(found), removed },
              this.#opts.maxChanges,
            ),
        ),
      )
      .catch(() => {});
  }

  #onNewTransaction(tx: SignedTransaction): void {
    for (const filter of this.#filters.values())
      if (filter.kind === "transactions") push(filter.changes, tx.hash, this.#opts.maxChanges);
  }
}

export function formatId(id: bigint): string {
  return `0x${id.toString(16)}`;
}

/**
 * `found` without its block: a filter's changes wait for a poll (up to the timeout, up to
 * `maxChanges` of them), and each would keep its whole block, transactions and all, in memory
 * long after the block store's cache let it go.
 */
function withoutBlock(found: FoundLog): FoundLog {
  if (found.block === undefined) return found;
  return {
    log: found.log,
    blockHash: found.blockHash,
    blockNumber: found.blockNumber,
    transactionHash: found.transactionHash,
    transactionIndex: found.transactionIndex,
    logIndex: found.logIndex,
  };
}

function push<T>(list: T[], item: T, max: number): void {
  list.push(item);
  if (list.length > max) list.splice(0, list.length - max);
}
