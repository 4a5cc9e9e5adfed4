import { isPending, type StoredBlock } from "@nodex/chain";
import type { CallOutcome } from "@nodex/evm";
import { BlockTag, bytesToHex, headerHash } from "@nodex/types";
import { LRUCache } from "lru-cache";
import { RPCError, RPCErrorCode } from "../errors.js";
import type { HeavyRequestService } from "../heavyRequests.js";
import type { LogFilter } from "../logFilter.js";
import { p } from "../params.js";
import { defineModule, method } from "../registry.js";
import { RawJson, r } from "../results.js";
import { type ChainReaderService, hostedOwner, type TransactionService } from "../services.js";
import { callWithAccessList, createAccessList } from "./accessList.js";
import { blockCount, feeHistory, rewardPercentiles } from "./feeHistory.js";
import {
  formatBlock,
  formatLogsJsonBytes,
  formatProof,
  formatReceipt,
  formatTransaction,
} from "./format.js";

/** `eth_getLogs`'s result as JSON bytes. */
export async function logsResult(
  reader: Pick<ChainReaderService, "getLogs">,
  filter: LogFilter,
): Promise<Uint8Array> {
  return formatLogsJsonBytes(await reader.getLogs(filter));
}

/**
 * Log queries this thread answers itself although worker threads serve the others: at most
 * this many blocks and logs (it stops reading past them, and the query goes to a worker).
 * Such a query takes a few milliseconds here, about what handing it to a thread and its
 * answer back costs in waking the two threads on a busy machine (500 logs over 1,000 blocks
 * near the head: ~2.5 ms of CPU; the answer was twice as slow through a worker).
 */
export const LOCAL_LOGS_BUDGET = { blocks: 2_000n, logs: 1_000 } as const;

/**
 * `eth_getLogs`'s (and `eth_getFilterLogs`') result for `query`: on this thread when there are
 * no worker threads, or while the query stays within `LOCAL_LOGS_BUDGET`; on a worker
 * otherwise. The same text either way.
 */
export async function logsAnswer(
  reader: Pick<ChainReaderService, "getLogs" | "getLogsWithin">,
  heavy: HeavyRequestService | undefined,
  query: LogFilter,
): Promise<RawJson> {
  // The bytes of formatLogsJsonBytes, here or on a worker: their buffer is theirs alone.
  const own = { ownBuffer: true };
  if (heavy === undefined) return new RawJson(await logsResult(reader, query), own);
  const local = await reader.getLogsWithin?.(query, LOCAL_LOGS_BUDGET);
  if (local !== undefined) return new RawJson(formatLogsJsonBytes(local, true), own);
  return new RawJson(await heavy.run({ method: "eth_getLogs", query }), own);
}

/** Block objects by hash and form: a block never changes once it has its hash. */
class BlockJsonCache {
  readonly #entries = new LRUCache<string, Record<string, unknown>>({ max: BLOCK_JSON_CACHE });

  constructor(readonly typedTransactionsFrom: bigint | null) {}

  get(found: StoredBlock, full: boolean): Record<string, unknown> {
    const key = `${bytesToHex(found.hash)}${full ? "+" : "-"}`;
    let json = this.#entries.get(key);
    if (json === undefined) {
      json = formatBlock(found, full, this.typedTransactionsFrom);
      this.#entries.set(key, json);
    }
    return json;
  }
}

/** Block objects kept serialized (by hash and form). */
const BLOCK_JSON_CACHE = 256;

/**
 * The transaction of `eth_getTransactionByBlock*AndIndex`: the spec's object plus the string
 * `_id` the spec gives these two methods without saying what it means; Nodex puts the
 * transaction's hash there, the one identifier a transaction has.
 */
function transactionAt(found: StoredBlock, index: bigint): Record<string, unknown> | null {
  const tx =
    index < BigInt(found.block.transactions.length)
      ? found.block.transactions[Number(index)]
      : undefined;
  if (tx === undefined) return null;
  const json = formatTransaction(tx, isPending(found) ? undefined : found, Number(index));
  json._id = json.hash;
  return json;
}

/** An uncle as a block object without transactions; its total difficulty is not tracked. */
function uncleAt(found: StoredBlock, index: bigint): Record<string, unknown> | null {
  const uncle =
    index < BigInt(found.block.uncles.length) ? found.block.uncles[Number(index)] : undefined;
  if (uncle === undefined) return null;
  return formatBlock(
    {
      block: { header: uncle, transactions: [], uncles: [] },
      hash: headerHash(uncle),
      totalDifficulty: 0n,
    },
    false,
  );
}

const LATEST = { kind: "tag", tag: BlockTag.LATEST } as const;
const PENDING = { kind: "tag", tag: BlockTag.PENDING } as const;
const REVERT_PREFIX = "VM Exception while processing transaction: ";

/**
 * A failed call as the reference node tells it (-32015): `revert <reason>` for a revert with
 * `Error(string)` or a panic, `transaction reverted` for one without, the EVM's error for a halt;
 * `data` is the call's return data, left out when there is none.
 */
function callFailure(out: CallOutcome): RPCError {
  // A revert always says what it returned, `0x` for nothing (Hardhat's chai matchers tell a
  // revert without a reason by it); a halt returns nothing to say.
  const data =
    out.error === "revert" || out.returnValue.length > 0 ? bytesToHex(out.returnValue) : undefined;
  const why =
    out.error === "revert"
      ? out.revertReason === undefined
        ? "transaction reverted"
        : `revert ${out.revertReason}`
      : (out.error ?? "execution failed");
  return new RPCError(RPCErrorCode.REVERTED, `${REVERT_PREFIX}${why}`, data);
}

/**
 * The chain methods of the eth module, served from the chain reader; `eth_sendRawTransaction`
 * when the node takes transactions.
 */
export function ethChainModule(
  reader: ChainReaderService,
  transactions?: TransactionService,
  /** Where `eth_getLogs` runs, off the thread that answers the other requests. */
  heavy?: HeavyRequestService,
  /** The network's first block with typed transactions (its blocks show `baseFeePerGas`). */
  typedTransactionsFrom: bigint | null = null,
  /** Time budget of a call or an estimate's execution in milliseconds; 0 for none. */
  callBudgetMs = 0,
) {
  const budget = () => (callBudgetMs > 0 ? { deadline: Date.now() + callBudgetMs } : {});
  const stateAt = p.optional(p.blockSelector, LATEST);
  const blocks = new BlockJsonCache(typedTransactionsFrom);
  return defineModule("eth", {
    getBalance: method({
      params: [p.address, stateAt],
      result: r.quantity,
      handler: async (_s, [address, block]) => (await reader.state(block)).getBalance(address),
    }),
    getTransactionCount: method({
      params: [p.address, stateAt],
      result: r.quantity,
      handler: (_s, [address, block]) => reader.nonce(address, block),
    }),
    getCode: method({
      params: [p.address, stateAt],
      result: r.data,
      handler: async (_s, [address, block]) => (await reader.state(block)).getCode(address),
    }),
    getStorageAt: method({
      params: [p.address, p.storageSlot, stateAt],
      result: r.data,
      handler: async (_s, [address, position, block]) => {
        const slot = new Uint8Array(32);
        let n = position;
        for (let i = 31; i >= 0 && n > 0n; i--, n >>= 8n) slot[i] = Number(n & 0xffn);
        return (await reader.state(block)).getStorage(address, slot);
      },
    }),
    getBlockByNumber: method({
      params: [p.blockNumberOrTag, p.optional(p.boolean, false)],
      result: r.json,
      handler: async (_s, [block, full]) => {
        const found = await reader.resolve(block);
        if (found === null) return null;
        return isPending(found)
          ? formatBlock(found, full, typedTransactionsFrom)
          : blocks.get(found, full);
      },
    }),
    getBlockByHash: method({
      params: [p.hash, p.optional(p.boolean, false)],
      result: r.json,
      handler: async (_s, [hash, full]) => {
        const found = await reader.blockByHash(hash);
        return found === null ? null : blocks.get(found, full);
      },
    }),
    getBlockTransactionCountByNumber: method({
      params: [p.blockNumberOrTag],
      result: r.nullable(r.quantity),
      handler: async (_s, [block]) =>
        (await reader.resolve(block))?.block.transactions.length ?? null,
    }),
    getBlockTransactionCountByHash: method({
      params: [p.hash],
      result: r.nullable(r.quantity),
      handler: async (_s, [hash]) =>
        (await reader.blockByHash(hash))?.block.transactions.length ?? null,
    }),
    getTransactionByBlockHashAndIndex: method({
      params: [p.hash, p.quantity],
      result: r.json,
      handler: async (_s, [hash, index]) => {
        const found = await reader.blockByHash(hash);
        return found === null ? null : transactionAt(found, index);
      },
    }),
    getTransactionByBlockNumberAndIndex: method({
      params: [p.blockNumberOrTag, p.quantity],
      result: r.json,
      handler: async (_s, [block, index]) => {
        const found = await reader.resolve(block);
        return found === null ? null : transactionAt(found, index);
      },
    }),
    getUncleCountByBlockHash: method({
      params: [p.hash],
      result: r.nullable(r.quantity),
      handler: async (_s, [hash]) => (await reader.blockByHash(hash))?.block.uncles.length ?? null,
    }),
    getUncleCountByBlockNumber: method({
      params: [p.blockNumberOrTag],
      result: r.nullable(r.quantity),
      handler: async (_s, [block]) => (await reader.resolve(block))?.block.uncles.length ?? null,
    }),
    getUncleByBlockHashAndIndex: method({
      params: [p.hash, p.quantity],
      result: r.json,
      handler: async (_s, [hash, index]) => {
        const found = await reader.blockByHash(hash);
        return found === null ? null : uncleAt(found, index);
      },
    }),
    getUncleByBlockNumberAndIndex: method({
      params: [p.blockNumberOrTag, p.quantity],
      result: r.json,
      handler: async (_s, [block, index]) => {
        const found = await reader.resolve(block);
        return found === null ? null : uncleAt(found, index);
      },
    }),
    getProof: method({
      params: [p.address, p.storageKeys, stateAt],
      result: r.json,
      handler: async (_s, [address, { keys, asked }, block]) =>
        formatProof(await (await reader.state(block)).getProof(address, keys), asked),
    }),
    // The reference node's shape. Nodex runs no bridge contract: nothing waits for signatures;
    // the height is what the recent merged-mining proofs state (docs/rpc.md).
    bridgeState: method({
      params: [],
      result: r.json,
      handler: async () => ({
        rskTxsWaitingForSignatures: [],
        btcBlockchainBestChainHeight: Number(await reader.bitcoinBestChainHeight()),
      }),
    }),
    getTransactionByHash: method({
      params: [p.hash],
      result: r.json,
      handler: async (_s, [hash]) => {
        const found = await reader.transaction(hash);
        if (found !== null) return formatTransaction(found.tx, found.block, found.index);
        const pending = reader.pendingTransaction(hash);
        return pending === undefined ? null : formatTransaction(pending, undefined, 0);
      },
    }),
    // Geth's: every receipt of the block as eth_getTransactionReceipt gives it, null for an
    // unknown block; `pending` answers the receipts of the pending block's execution (as geth
    // does), with blockHash and blockNumber null as that block shows them.
    // No base fee (its history is zeros); the rewards are the gas prices paid (feeHistory.ts).
    feeHistory: method({
      params: [blockCount, p.blockNumberOrTag, rewardPercentiles],
      result: r.json,
      handler: (_s, [count, newest, percentiles]) => feeHistory(reader, count, newest, percentiles),
    }),
    getBlockReceipts: method({
      params: [p.blockSelector],
      result: r.json,
      handler: async (_s, [block]) => {
        const found = await reader.resolve(block);
        if (found === null) return null;
        return (await reader.blockReceipts(found)).map(formatReceipt);
      },
    }),
    getTransactionReceipt: method({
      params: [p.hash],
      result: r.json,
      handler: async (_s, [hash]) => {
        const found = await reader.receipt(hash);
        return found === null ? null : formatReceipt(found);
      },
    }),
    call: method({
      params: [p.callObject, stateAt],
      result: r.data,
      handler: async (_s, [req, block]) => {
        const out = await reader.call(req, block, budget());
        if (out.success) return out.returnValue;
        throw callFailure(out);
      },
    }),
    // geth's: the call's access list and the gas a typed transaction with it uses; the block
    // defaults to `pending`, as in geth.
    createAccessList: method({
      params: [callWithAccessList, p.optional(p.blockSelector, PENDING)],
      result: r.json,
      handler: (_s, [call, block]) =>
        createAccessList(reader, call, block, typedTransactionsFrom !== null),
    }),
    getLogs: method({
      params: [p.logFilter],
      result: r.raw,
      handler: (_s, [filter]) => logsAnswer(reader, heavy, filter),
    }),
    estimateGas: method({
      params: [p.callObject, stateAt],
      result: r.quantity,
      // A call that fails even with all the gas is answered as eth_call answers it (-32015 with
      // the reason and data), as the reference node does: tools then report the reason before
      // they send. The spec's "an estimate, not an error" is kept for a short balance.
      handler: async (_s, [req, block]) => {
        // Where typed transactions are active, a request that does not say it is legacy may be
        // sent as a typed one, whose access list (an empty one is 1 byte of RLP) costs 80 gas a
        // byte: the estimate counts that byte, so that the transaction it prices gets in. viem
        // and web3.js estimate without the list and send type 2 with an empty one.
        // (On a network with an activation height ahead, 80 gas too many is harmless.)
        const typed = req.accessListBytes === undefined && typedTransactionsFrom !== null;
        const out = await reader.estimateGas(
          typed ? Object.assign({}, req, { accessListBytes: 1 }) : req,
          block,
          budget(),
        );
        if (typeof out === "bigint") return out;
        throw callFailure(out);
      },
    }),
    // Every network: into the pool (a user's transaction, kept across restarts, as geth keeps
    // its RPC's); development networks mine it (automine), elsewhere the blocks built for
    // merged miners take it.
    ...(transactions === undefined
      ? {}
      : {
          sendRawTransaction: method({
            params: [p.data],
            result: r.data,
            handler: (_s, [raw], ctx) =>
              transactions.sendTransaction(raw, { local: true, ...hostedOwner(ctx) }),
          }),
        }),
  });
}
