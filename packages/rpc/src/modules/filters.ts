import { type FilterService, formatId } from "../filters.js";
import type { HeavyRequestService } from "../heavyRequests.js";
import { parseLogFilter } from "../logFilter.js";
import { p } from "../params.js";
import { defineModule, method } from "../registry.js";
import { RawJson, r } from "../results.js";
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

/** The filter methods of the eth module, served from the node's filters or the ones replicas share. */
export function filterModule(
  filters: FilterService,
  /** Where `eth_getFilterLogs` runs, off the thread that answers the other requests. */
  heavy?: HeavyRequestService,
) {
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
        if (heavy === undefined)
          return new RawJson(
            JSON.stringify((await filters.logs(filter)).map((log) => formatLog(log))),
          );
        // eth_getLogs' text is the same: each log as JSON.stringify(formatLog(log)) writes it.
        const query = await filters.logQuery(filter);
        return new RawJson(await heavy.run({ method: "eth_getLogs", query }));
      },
    }),
    uninstallFilter: method({
      params: [filterId],
      result: r.boolean,
      handler: (_s, [filter]) => filters.uninstall(filter),
    }),
  });
}
