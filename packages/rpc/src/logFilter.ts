import { blockLogs, type FoundLog, type HeadChange, type LogQuery } from "@nodex/chain";
import {
  type Address,
  type BlockSelector,
  CodecError,
  type Hash32,
  parseAddress,
  parseBlockNumberOrTag,
  parseHash,
} from "@nodex/types";
import { jsonType } from "./json.js";

/** A log filter: the chain reader's log query (which blocks, which emitters, which topics). */
export type LogFilter = LogQuery;

const LATEST: BlockSelector = { kind: "tag", tag: "latest" };
const KNOWN_FIELDS = new Set(["fromBlock", "toBlock", "address", "topics", "blockHash"]);

/**
 * Decodes the spec's filter options object. `blockHash` excludes `fromBlock`/`toBlock`; both
 * default to `latest`. `allowBlockHash` is false for `eth_newFilter`.
 */
export function parseLogFilter(value: unknown, arg: number, allowBlockHash = true): LogFilter {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new CodecError(arg, `expected a filter object, got ${jsonType(value)}`);
  }
  const o = value as Record<string, unknown>;
  for (const key of Object.keys(o)) {
    if (!KNOWN_FIELDS.has(key))
      throw new CodecError(arg, `unknown filter field ${JSON.stringify(key)}`);
  }
  const nested = <T>(name: string, parse: () => T): T => {
    try {
      return parse();
    } catch (err) {
      if (err instanceof CodecError) throw new CodecError(arg, `${name}: ${err.reason}`);
      throw err;
    }
  };
  const present = (name: string) => o[name] !== undefined && o[name] !== null;
  let range: LogFilter["range"];
  if (present("blockHash")) {
    if (!allowBlockHash) throw new CodecError(arg, "blockHash is not allowed here");
    if (present("fromBlock") || present("toBlock")) {
      throw new CodecError(arg, "cannot specify both blockHash and fromBlock/toBlock");
    }
    range = { blockHash: nested("blockHash", () => parseHash(o.blockHash, arg)) };
  } else {
    range = {
      from: present("fromBlock")
        ? nested("fromBlock", () => parseBlockNumberOrTag(o.fromBlock, arg))
        : LATEST,
      to: present("toBlock")
        ? nested("toBlock", () => parseBlockNumberOrTag(o.toBlock, arg))
        : LATEST,
    };
  }
  let addresses: Address[] = [];
  if (present("address")) {
    const a = o.address;
    addresses = Array.isArray(a)
      ? a.map((item, i) => nested(`address[${i}]`, () => parseAddress(item, arg)))
      : [nested("address", () => parseAddress(a, arg))];
  }
  let topics: (Hash32[] | null)[] = [];
  if (present("topics")) {
    const t = o.topics;
    if (!Array.isArray(t))
      throw new CodecError(arg, `topics: expected an array, got ${jsonType(t)}`);
    if (t.length > 4) throw new CodecError(arg, "topics: at most 4 positions");
    topics = t.map((position, i) => {
      if (position === null) return null;
      if (Array.isArray(position)) {
        if (position.length === 0) return null;
        return position.map((x, j) => nested(`topics[${i}][${j}]`, () => parseHash(x, arg)));
      }
      return [nested(`topics[${i}]`, () => parseHash(position, arg))];
    });
  }
  return { range, addresses, topics };
}

/** Whether a log filter's `fromBlock`/`toBlock` take block `number` (tags other than earliest do). */
export function logInRange(query: LogQuery, number: bigint): boolean {
  if ("blockHash" in query.range) return false;
  const from = bound(query.range.from);
  const to = bound(query.range.to);
  return (from === undefined || number >= from) && (to === undefined || number <= to);
}

function bound(selector: BlockSelector): bigint | undefined {
  if (selector.kind === "number") return selector.number;
  if (selector.kind === "tag" && selector.tag === "earliest") return 0n;
  return undefined;
}

/**
 * The logs a head change moves, in the order clients get them: those of the blocks that left
 * the canonical chain (`removed`), then those of the blocks that joined it, each lowest block
 * first. `visit` is called for each log each of `queries` matches (`index` names the query).
 */
export async function headChangeLogs(
  change: HeadChange,
  queries: readonly LogQuery[],
  visit: (index: number, found: FoundLog, removed: boolean) => void,
): Promise<void> {
  const blocks = [
    ...change.removed.map((block) => ({ block, removed: true })),
    ...change.added.map((block) => ({ block, removed: false })),
  ];
  for (const { block, removed } of blocks) {
    const receipts = await change.receipts(block);
    if (receipts === undefined) continue;
    for (let i = 0; i < queries.length; i++) {
      const query = queries[i]!;
      if (!logInRange(query, block.block.header.number)) continue;
      for (const found of blockLogs(block, receipts, query)) visit(i, found, removed);
    }
  }
}
