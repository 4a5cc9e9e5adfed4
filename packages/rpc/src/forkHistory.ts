/**
 * A fork's history: on a development chain that goes on from another network's block (the fork
 * block), what happened at or before that block is the upstream's. The local chain holds the
 * fork block's header and state, and everything after it; blocks, transactions, receipts, logs
 * and states before it are asked of the upstream. This module decides, per call and from its
 * params as they came, which side answers.
 */

/** The upstream side of a forked chain, as the node wires it. */
export interface ForkHistory {
  /** The fork block's number: blocks up to it are the upstream's. */
  readonly forkBlock: bigint;
  /** The upstream's hash of the fork block (0x-hex). */
  readonly forkBlockHash?: string | undefined;
  /** The upstream's URLs as the node was given them (`hardhat_reset` compares its params). */
  readonly upstreamUrls: readonly string[];
  /** The local chain's head number (the fork block until a block is made on it). */
  head(): bigint;
  /** Whether a block of this hash is the local chain's own (one after the fork block). */
  isLocalBlock(hash: string): Promise<boolean>;
  /** Whether the local chain or its pool knows a transaction of this hash. */
  isLocalTransaction(hash: string): Promise<boolean>;
  /** The upstream's result for a call (its error, an `Error` with the upstream's message). */
  forward(method: string, params: readonly unknown[]): Promise<unknown>;
}

/**
 * What `hardhat_metadata` and `anvil_metadata` say of a fork (`forkedNetwork`): the upstream's
 * chain id (asked once; its answer is kept with the history), the fork block's number and hash.
 */
export async function forkedNetwork(history: ForkHistory): Promise<Record<string, unknown>> {
  const chainId = await history.forward("eth_chainId", []).catch(() => undefined);
  return {
    chainId: typeof chainId === "string" && /^0x[0-9a-f]+$/i.test(chainId) ? Number(chainId) : null,
    forkBlockNumber: Number(history.forkBlock),
    forkBlockHash: history.forkBlockHash ?? null,
  };
}

/** An upstream's result, written as it came: no local encoder applies to it. */
export class Forwarded {
  constructor(readonly result: unknown) {}
}

/** Where a call's block is and how it is compared with the fork block. */
interface BlockParam {
  readonly index: number;
  /** A state read at the fork block is local (the fork's state is its), a block's content is not. */
  readonly state: boolean;
}

/** Methods whose param at `index` names a block (number, tag or EIP-1898 object). */
const BY_BLOCK: Readonly<Record<string, BlockParam>> = {
  eth_getBlockByNumber: { index: 0, state: false },
  eth_getBlockTransactionCountByNumber: { index: 0, state: false },
  eth_getTransactionByBlockNumberAndIndex: { index: 0, state: false },
  eth_getUncleCountByBlockNumber: { index: 0, state: false },
  eth_getUncleByBlockNumberAndIndex: { index: 0, state: false },
  eth_getBlockReceipts: { index: 0, state: false },
  debug_getRawBlock: { index: 0, state: false },
  debug_getRawHeader: { index: 0, state: false },
  debug_getRawReceipts: { index: 0, state: false },
  debug_traceBlockByNumber: { index: 0, state: false },
  trace_block: { index: 0, state: false },
  eth_getBalance: { index: 1, state: true },
  eth_getTransactionCount: { index: 1, state: true },
  eth_getCode: { index: 1, state: true },
  eth_getStorageAt: { index: 2, state: true },
  eth_getProof: { index: 2, state: true },
  eth_call: { index: 1, state: true },
  eth_estimateGas: { index: 1, state: true },
  eth_createAccessList: { index: 1, state: true },
  debug_traceCall: { index: 1, state: true },
};

/** Methods whose first param is a block hash. */
const BY_BLOCK_HASH = new Set([
  "eth_getBlockByHash",
  "eth_getBlockTransactionCountByHash",
  "eth_getTransactionByBlockHashAndIndex",
  "eth_getUncleCountByBlockHash",
  "eth_getUncleByBlockHashAndIndex",
  "debug_traceBlockByHash",
]);

/** Methods whose first param is a transaction hash. */
const BY_TRANSACTION = new Set([
  "eth_getTransactionByHash",
  "eth_getTransactionReceipt",
  "eth_getRawTransactionByHash",
  "debug_getRawTransaction",
  "debug_traceTransaction",
  "trace_transaction",
]);

/**
 * The answer of `method` with `params` (already checked by its decoder) on a forked chain:
 * `undefined` when the local chain answers as usual, otherwise a promise of the answer:
 * a `Forwarded` upstream result, or what `local` gave for the part the local chain holds.
 * `local(params)` runs the method locally with other params (the local part of a log query).
 */
export function routeForkHistory(
  history: ForkHistory,
  method: string,
  params: readonly unknown[],
  local: (params: readonly unknown[]) => unknown,
): Promise<unknown> | undefined {
  const block = BY_BLOCK[method];
  if (block !== undefined) {
    const where = blockSide(history, params[block.index], block.state);
    if (where === "local") return undefined;
    return where.then((side) =>
      side === "local" ? local(params) : forward(history, method, params),
    );
  }
  if (BY_BLOCK_HASH.has(method) && typeof params[0] === "string")
    return history
      .isLocalBlock(params[0])
      .then((mine) => (mine ? local(params) : forward(history, method, params)));
  if (BY_TRANSACTION.has(method) && typeof params[0] === "string")
    return history
      .isLocalTransaction(params[0])
      .then((mine) => (mine ? local(params) : forward(history, method, params)));
  if (method === "eth_getLogs") return logs(history, params, local);
  return undefined;
}

async function forward(
  history: ForkHistory,
  method: string,
  params: readonly unknown[],
): Promise<Forwarded> {
  return new Forwarded(await history.forward(method, params));
}

/**
 * The side a block param falls on: "local" at once for tags of the head and for numbers after
 * the fork block, a promise for a block hash (looked up locally) and for numbers up to it.
 */
function blockSide(
  history: ForkHistory,
  param: unknown,
  state: boolean,
): "local" | Promise<"local" | "upstream"> {
  const number = blockNumberOf(param);
  if (number === "hash") {
    const hash = (param as { blockHash: string }).blockHash;
    return history.isLocalBlock(hash).then((mine) => (mine ? "local" : "upstream"));
  }
  if (number === undefined) return "local";
  // The fork block's state is the fork's own; its transactions and logs are the upstream's.
  const upstream = state ? number < history.forkBlock : number <= history.forkBlock;
  return upstream ? Promise.resolve("upstream") : "local";
}

/**
 * The number a block param names: `undefined` for the head's tags (and an absent param),
 * "hash" for an EIP-1898 object with a block hash.
 */
function blockNumberOf(param: unknown): bigint | "hash" | undefined {
  if (typeof param === "string") {
    if (param === "earliest") return 0n;
    return param.startsWith("0x") ? BigInt(param) : undefined;
  }
  if (typeof param === "object" && param !== null) {
    const o = param as { blockNumber?: unknown; blockHash?: unknown };
    if (typeof o.blockHash === "string") return "hash";
    if (typeof o.blockNumber === "string") return blockNumberOf(o.blockNumber);
  }
  return undefined;
}

/**
 * `eth_getLogs` over a range that reaches into the upstream's blocks: the upstream's logs up to
 * the fork block, then the local chain's after it, in block order.
 */
function logs(
  history: ForkHistory,
  params: readonly unknown[],
  local: (params: readonly unknown[]) => unknown,
): Promise<unknown> | undefined {
  const filter = params[0] as Record<string, unknown> | undefined;
  if (filter === undefined || typeof filter !== "object") return undefined;
  if (typeof filter.blockHash === "string") {
    return history
      .isLocalBlock(filter.blockHash)
      .then((mine) => (mine ? local(params) : forward(history, "eth_getLogs", params)));
  }
  const from = blockNumberOf(filter.fromBlock);
  const to = blockNumberOf(filter.toBlock);
  if (from === "hash" || to === "hash") return undefined;
  return forkFilterLogs(history, { from: from ?? "head", to: to ?? "head" }, filter, () =>
    local([{ ...filter, fromBlock: hex(history.forkBlock + 1n) }]),
  );
}

/** What a log query's range names, as far as its split at the fork block needs. */
export interface FilterRange {
  readonly from: bigint | "head";
  readonly to: bigint | "head";
}

/**
 * An installed log filter's logs (`eth_getFilterLogs`) on a forked chain: `undefined` when the
 * local chain holds its whole range, else the upstream's logs up to the fork block (`filter`
 * is the filter as JSON, with its range rewritten) followed by `local()`'s after it.
 */
export function forkFilterLogs(
  history: ForkHistory,
  range: FilterRange,
  filter: Record<string, unknown>,
  local: () => unknown,
): Promise<Forwarded> | undefined {
  if (range.from === "head" || range.from > history.forkBlock) return undefined;
  if (typeof range.to === "bigint" && range.to < range.from) return undefined;
  const upTo = range.to !== "head" && range.to <= history.forkBlock ? range.to : history.forkBlock;
  const upstream = history.forward("eth_getLogs", [
    { ...filter, fromBlock: hex(range.from), toBlock: hex(upTo) },
  ]);
  // A range up to the head's tags holds no local block while the head is the fork block.
  if (upTo === range.to || (range.to === "head" && history.head() <= history.forkBlock))
    return upstream.then((result) => new Forwarded(result));
  return Promise.all([upstream, Promise.resolve(local())]).then(([theirs, ours]) => {
    if (!Array.isArray(theirs)) throw new Error("the upstream's eth_getLogs answer is not a list");
    return new Forwarded([...theirs, ...jsonList(ours)]);
  });
}

/** The local `eth_getLogs` result as JSON values (it comes as raw JSON text or bytes). */
function jsonList(value: unknown): unknown[] {
  const raw = value as { text?: string | Uint8Array };
  const text =
    typeof raw?.text === "string"
      ? raw.text
      : raw?.text instanceof Uint8Array
        ? Buffer.from(raw.text.buffer, raw.text.byteOffset, raw.text.byteLength).toString("utf8")
        : undefined;
  const list = text === undefined ? value : JSON.parse(text);
  if (!Array.isArray(list)) throw new Error("the local eth_getLogs answer is not a list");
  return list;
}

const hex = (n: bigint) => `0x${n.toString(16)}`;
