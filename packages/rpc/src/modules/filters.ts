import type { LogQuery } from "@nodex/chain";
import { bytesToHex } from "@nodex/types";
import { type FilterService, formatId } from "../filters.js";
import { type ForkHistory, forkFilterLogs } from "../forkHistory.js";
import type { HeavyRequestService } from "../heavyRequests.js";
import { parseLogFilter } from "../logFilter.js";
import { p } from "../params.js";
import { defineModule, method } from "../registry.js";
import { RawJson, r } from "../results.js";
import type { ChainReaderService } from "../services.js";
import { formatLog } from "./format.js";

/** `eth_newFilter`'s options: the `eth_getLogs` object without `blockHash`. */
const filterOptions = {
  name: "filter",
  optional: false,
  defaultValue: undefined,
  parse: (value: unknown, arg: number) => parseLogFilter(value, arg, false),
};

/** A filter id: the QUANTITY `eth_new*Filter` answered. */
const filterId = p.quantity;

const id = (value: bigint) => formatId(value);

/** A filter range's end as a number, or "head" for the head's tags. */
function rangeEnd(
  selector: LogQuery["range"] extends infer R ? (R extends { from: infer F } ? F : never) : never,
): bigint | "head" {
  if (selector.kind === "number") return selector.number;
  if (selector.kind === "tag" && selector.tag === "earliest") return 0n;
  return "head";
}

/** A log filter's addresses and topics as JSON (its range is set by the caller). */
function filterJson(query: LogQuery): Record<string, unknown> {
  return {
    ...(query.addresses.length === 0 ? {} : { address: query.addresses.map((a) => bytesToHex(a)) }),
    topics: query.topics.map((t) => (t === null ? null : t.map((h) => bytesToHex(h)))),
  };
}

/** The filter methods of the eth module, served from the node's filters or the ones replicas share. */
export function filterModule(
  filters: FilterService,
  /** Where `eth_getFilterLogs` runs, off the thread that answers the other requests. */
  heavy?: HeavyRequestService,
  /**
   * On a forked chain: the upstream, whose logs a filter's range up to the fork block holds,
   * and the reader that finds the local part.
   */
  fork?: { readonly history: ForkHistory; readonly reader: Pick<ChainReaderService, "getLogs"> },
) {
  const history = fork?.history;
  /** The filter's logs from the local chain (`query` narrowed to its blocks on a fork). */
  const localLogs = async (filter: bigint, query?: LogQuery) => {
    if (heavy === undefined && query === undefined)
      return new RawJson(JSON.stringify((await filters.logs(filter)).map((log) => formatLog(log))));
    // eth_getLogs' text is the same: each log as JSON.stringify(formatLog(log)) writes it.
    const q = query ?? (await filters.logQuery(filter));
    if (heavy === undefined)
      return new RawJson(
        JSON.stringify((await fork!.reader.getLogs(q)).map((log) => formatLog(log))),
      );
    return new RawJson(await heavy.run({ method: "eth_getLogs", query: q }));
  };
  return defineModule("eth", {
    newFilter: method({
      params: [filterOptions],
      result: id,
      handler: (_s, [query]) => filters.newLogFilter(query),
    }),
    newBlockFilter: method({
      params: [],
      result: id,
      handler: () => filters.newBlockFilter(),
    }),
    newPendingTransactionFilter: method({
      params: [],
      result: id,
      handler: () => filters.newPendingTransactionFilter(),
    }),
    getFilterChanges: method({
      params: [filterId],
      result: r.raw,
      handler: async (_s, [filter]) => {
        const found = await filters.changes(filter);
        if (found.kind === "logs") {
          return new RawJson(
            JSON.stringify(found.changes.map((c) => formatLog(c.found, c.removed))),
          );
        }
        return new RawJson(JSON.stringify(found.changes.map(r.data)));
      },
    }),
    getFilterLogs: method({
      params: [filterId],
      result: r.raw,
      handler: async (_s, [filter]) => {
        if (history === undefined) return localLogs(filter);
        const query = await filters.logQuery(filter);
        if (!("from" in query.range)) return localLogs(filter, query);
        const { from, to } = query.range;
        const split = forkFilterLogs(
          history,
          { from: rangeEnd(from), to: rangeEnd(to) },
          filterJson(query),
          () =>
            localLogs(filter, {
              ...query,
              range: { from: { kind: "number", number: history.forkBlock + 1n }, to },
            }),
        );
        if (split === undefined) return localLogs(filter, query);
        return new RawJson(JSON.stringify((await split).result));
      },
    }),
    uninstallFilter: method({
      params: [filterId],
      result: r.boolean,
      handler: (_s, [filter]) => filters.uninstall(filter),
    }),
  });
}
