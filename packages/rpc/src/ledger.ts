import {
  type Chain,
  cumulativeDifficulty,
  type MinedBlock,
  type MineOptions,
  type StoredBlock,
} from "@nodex/chain";
import type { BlockContext, CallOutcome, CallRequest, Executor } from "@nodex/evm";
import { type BloomBits, bloomBits, bloomHasBits, intrinsicGas } from "@nodex/evm";
import type { WorldState } from "@nodex/state";
import { type AddResult, type PoolHead, TxPool, TxPoolError } from "@nodex/txpool";
import {
  type Address,
  type BlockHeader,
  type BlockSelector,
  bytesToHex,
  decodeTransaction,
  equalBytes,
  formatBlockSelector,
  headerHash,
  type Log,
  type Receipt,
  type SignedTransaction,
} from "@nodex/types";
import { RPCError, RPCErrorCode } from "./errors.js";
import type { LogFilter } from "./logFilter.js";

/** How many read-only states (by root) stay open for reuse. */
const READ_STATE_CACHE = 8;

/** Block ranges up to this many blocks return every matching log (the spec's limits). */
export const LOGS_UNCAPPED_RANGE = 2000n;
/** Longer ranges are served while they return at most this many logs. */
export const LOGS_CAP = 10_000;

/** A log with where it is. */
export interface FoundLog {
  readonly log: Log;
  readonly block: StoredBlock;
  readonly transactionHash: Uint8Array;
  readonly transactionIndex: number;
  /** Position among all the block's logs. */
  readonly logIndex: number;
}

export interface LedgerOptions {
  /** Whether this node makes blocks of the transactions it receives (regtest and devnet). */
  readonly automine: boolean;
  /**
   * Seconds between blocks: transactions received wait until `minePending()` is called (by the
   * node's timer). 0 mines a block for each transaction as it arrives.
   */
  readonly mineInterval?: number;
  /** Beneficiary of mined blocks. */
  readonly coinbase: () => Address;
  /** The transaction pool; one without a journal when absent. */
  readonly pool?: TxPool;
}

/** The `pending` block: not sealed, not stored; its state lives in memory. */
export interface PendingBlock extends StoredBlock {
  readonly pending: true;
  readonly state: WorldState;
}

export function isPending(block: StoredBlock): block is PendingBlock {
  return (block as Partial<PendingBlock>).pending === true;
}

/** A transaction in its block. */
export interface IncludedTransaction {
  readonly tx: SignedTransaction;
  readonly block: StoredBlock;
  readonly index: number;
}

export interface IncludedReceipt extends IncludedTransaction {
  readonly receipt: Receipt;
  /** Gas used by this transaction alone. */
  readonly gasUsed: bigint;
  /** Index of the receipt's first log among all the block's logs. */
  readonly firstLogIndex: number;
}

/**
 * The chain as the JSON-RPC methods use it: block selectors resolved, state at a block,
 * transactions received and (on development networks) mined at once, calls and estimates.
 */
export class Ledger {
  readonly chain: Chain;
  readonly executor: Executor;
  readonly automine: boolean;
  readonly mineInterval: number;
  readonly #coinbase: () => Address;
  /** Transactions waiting for a block. */
  readonly pool: TxPool;
  /** Whether a block is mined for each transaction received (off: they wait, see `minePending`). */
  #autoMining: boolean;
  /** Whether blocks are made at all (`evm_stopMining` stops both automine and the interval). */
  #miningStopped = false;
  /** Seconds added to the clock for new blocks (`evm_increaseTime`, `evm_mine` with a time). */
  #timeOffset = 0n;
  /** `evm_snapshot`s, by id: the head, the waiting transactions and the clock offset then. */
  readonly #snapshots = new Map<
    bigint,
    { head: bigint; waiting: SignedTransaction[]; timeOffset: bigint }
  >();
  #nextSnapshot = 1n;
  /** The pool's update after the last new head (new transactions wait for it). */
  #poolUpdate: Promise<void> = Promise.resolve();
  #pendingBlock: { key: string; block: Promise<PendingBlock> } | undefined;
  /** Read-only states by state root, most recently used last. */
  readonly #states = new Map<string, Promise<WorldState>>();

  constructor(chain: Chain, executor: Executor, opts: LedgerOptions) {
    this.chain = chain;
    this.executor = executor;
    this.automine = opts.automine;
    this.mineInterval = opts.mineInterval ?? 0;
    this.#autoMining = this.automine && this.mineInterval === 0;
    this.pool = opts.pool ?? new TxPool({ chainId: chain.network.chainId });
    // Whatever moves the head (a block built here, a miner's, a reorganization, a rewind), the
    // pool drops what the new state makes stale and promotes what became executable.
    chain.onNewHead(() => {
      this.#poolUpdate = this.#poolUpdate
        .then(async () => {
          const { pending, queued } = this.pool.status();
          if (pending + queued > 0) await this.pool.onNewHead(await this.poolHead());
        })
        .catch(() => {});
    });
    this.#coinbase = opts.coinbase;
  }

  /** The block a selector names, or `null` when there is none. */
  async resolve(selector: BlockSelector): Promise<StoredBlock | null> {
    switch (selector.kind) {
      case "number":
        return (await this.chain.getBlockByNumber(selector.number)) ?? null;
      case "hash": {
        const block = await this.chain.getBlockByHash(selector.hash);
        if (block === undefined) return null;
        if (selector.requireCanonical) {
          const canonical = await this.chain.getCanonicalHash(block.block.header.number);
          if (canonical === undefined || !equalBytes(canonical, block.hash)) {
            throw new RPCError(
              RPCErrorCode.INVALID_PARAMS,
              `block ${bytesToHex(block.hash)} is not canonical`,
            );
          }
        }
        return block;
      }
      case "tag":
        switch (selector.tag) {
          case "latest":
            return this.chain.head;
          case "pending":
            return this.pendingBlock();
          case "earliest":
            return (await this.chain.getBlockByNumber(0n)) ?? null;
          default:
            // No finality on this chain: answered as the reference node answers.
            throw new RPCError(RPCErrorCode.INVALID_PARAMS, `invalid blocknumber ${selector.tag}`);
        }
    }
  }

  /** Like `resolve`, for methods that need a block: a missing one is an invalid parameter. */
  async require(selector: BlockSelector): Promise<StoredBlock> {
    const block = await this.resolve(selector);
    if (block === null) {
      throw new RPCError(
        RPCErrorCode.INVALID_PARAMS,
        `block ${formatBlockSelector(selector)} not found`,
      );
    }
    return block;
  }

  /**
   * The state after the selected block, for reads and calls: the same object is shared by
   * concurrent readers of that block (its caches with it). Calls never change it: the executor
   * runs each on a write layer of its own.
   */
  async state(selector: BlockSelector): Promise<WorldState> {
    // With nothing waiting, the pending state is the head's: no block to build.
    if (isPendingTag(selector) && this.pool.status().pending === 0)
      return this.#stateAt(this.chain.head.block.header);
    const block = await this.require(selector);
    return isPending(block) ? block.state : this.#stateAt(block.block.header);
  }

  /**
   * The `pending` block: built on the head from the transactions waiting for a block, with the
   * state after them. Rebuilt when the head or the waiting transactions change.
   */
  pendingBlock(): Promise<PendingBlock> {
    const head = this.chain.head;
    const key = `${bytesToHex(head.hash)}:${this.pool.version}`;
    if (this.#pendingBlock?.key !== key) {
      const block = this.chain
        .buildTemplate(this.pendingTransactions(), { coinbase: this.#coinbase() })
        .then(
          (template): PendingBlock => ({
            block: template.block,
            hash: headerHash(template.block.header),
            totalDifficulty: head.totalDifficulty + cumulativeDifficulty(template.block),
            pending: true,
            state: template.state,
          }),
        );
      block.catch(() => {
        if (this.#pendingBlock?.key === key) this.#pendingBlock = undefined;
      });
      this.#pendingBlock = { key, block };
    }
    return this.#pendingBlock.block;
  }

  #stateAt(header: BlockHeader): Promise<WorldState> {
    this.chain.assertStateRetained(header);
    const key = bytesToHex(header.stateRoot);
    let state = this.#states.get(key);
    if (state === undefined) {
      state = this.chain.stateAt(header);
      state.catch(() => this.#states.delete(key));
      if (this.#states.size >= READ_STATE_CACHE) {
        this.#states.delete(this.#states.keys().next().value as string);
      }
    } else {
      this.#states.delete(key);
    }
    this.#states.set(key, state);
    return state;
  }

  /** What the pool validates against: the head, its limits and its state. */
  async poolHead(): Promise<PoolHead> {
    const head = this.chain.head.block.header;
    return {
      number: head.number,
      gasLimit: head.gasLimit,
      minimumGasPrice: head.minimumGasPrice,
      state: await this.#stateAt(head),
    };
  }

  /**
   * Decodes a signed transaction, checks it and puts it in the pool; with automine, mines the
   * pool's executable transactions at once (a block as Hardhat makes one per transaction).
   * `local`: sent by this node's operator (kept across restarts). Returns the hash.
   */
  async sendRawTransaction(raw: Uint8Array, opts: { local?: boolean } = {}): Promise<Uint8Array> {
    const tx = decodeTransaction(raw);
    const chainId = this.chain.network.chainId;
    if (tx.chainId !== undefined && tx.chainId !== chainId) {
      throw new RPCError(
        RPCErrorCode.INVALID_PARAMS,
        `invalid chain id: transaction signed for chain ${tx.chainId}, this network is ${chainId}`,
      );
    }
    if ((await this.chain.getTransactionLocation(tx.hash)) !== undefined) {
      throw new RPCError(RPCErrorCode.TRANSACTION_REJECTED, "already known");
    }
    await this.#poolUpdate;
    let added: AddResult;
    try {
      added = await this.pool.add(tx, await this.poolHead(), { local: opts.local ?? false });
    } catch (err) {
      if (err instanceof TxPoolError)
        throw new RPCError(RPCErrorCode.TRANSACTION_REJECTED, err.message);
      throw err;
    }
    if (!this.#autoMining || added.status !== "pending") return tx.hash;
    const mined = await this.#minePending();
    const rejected = mined.rejected.find((r) => equalBytes(r.tx.hash, tx.hash));
    if (rejected !== undefined) {
      this.pool.remove([tx.hash]);
      throw new RPCError(RPCErrorCode.TRANSACTION_REJECTED, rejected.error.message);
    }
    return tx.hash;
  }

  /**
   * Mines one block (interval mining) with the waiting transactions that can run, each sender's
   * in nonce order. Those whose turn has not come (a nonce gap, no room left in the block) wait
   * for the next block; those that can never run are dropped.
   */
  async minePending(): Promise<MinedBlock | undefined> {
    if (this.#miningStopped) return undefined;
    return this.#minePending();
  }

  async #minePending(timestamp?: bigint): Promise<MinedBlock> {
    await this.#poolUpdate;
    const mined = await this.chain.mine(this.pool.pending(), this.#mineOptions(timestamp));
    // What the block took leaves the pool; the new head's update drops what became stale.
    this.pool.remove(mined.block.transactions.map((tx) => tx.hash));
    await this.#poolUpdate;
    return mined;
  }

  #mineOptions(timestamp?: bigint): MineOptions {
    if (timestamp !== undefined) return { coinbase: this.#coinbase(), timestamp };
    if (this.#timeOffset === 0n) return { coinbase: this.#coinbase() };
    return {
      coinbase: this.#coinbase(),
      timestamp: BigInt(Math.floor(Date.now() / 1000)) + this.#timeOffset,
    };
  }

  // Development controls: the evm_ methods (regtest and devnet).

  /** `evm_snapshot`: remembers the head, the waiting transactions and the clock; its id. */
  snapshot(): bigint {
    const id = this.#nextSnapshot++;
    this.#snapshots.set(id, {
      head: this.chain.head.block.header.number,
      waiting: this.#waiting(),
      timeOffset: this.#timeOffset,
    });
    return id;
  }

  /**
   * `evm_revert`: back to snapshot `id` (chain, waiting transactions, clock). Ids are single-use,
   * as in Hardhat and Ganache: this one and every later one are gone afterwards. `false` for an
   * unknown id.
   */
  async revert(id: bigint): Promise<boolean> {
    const snapshot = this.#snapshots.get(id);
    if (snapshot === undefined) return false;
    for (const key of [...this.#snapshots.keys()]) if (key >= id) this.#snapshots.delete(key);
    await this.chain.rewindTo(snapshot.head);
    await this.#poolUpdate;
    this.pool.clear();
    const head = await this.poolHead();
    for (const tx of snapshot.waiting) await this.pool.add(tx, head).catch(() => undefined);
    this.#timeOffset = snapshot.timeOffset;
    return true;
  }

  /** `evm_reset`: back to genesis, nothing waiting, no snapshots, the real clock. */
  async reset(): Promise<void> {
    this.#snapshots.clear();
    await this.chain.rewindTo(0n);
    await this.#poolUpdate;
    this.pool.clear();
    this.#timeOffset = 0n;
  }

  /** `evm_increaseTime`: moves the clock of new blocks forward; the total offset in seconds. */
  increaseTime(seconds: bigint): bigint {
    if (seconds > 0n) this.#timeOffset += seconds;
    return this.#timeOffset;
  }

  /**
   * `evm_mine`: a block now with the waiting transactions; with `timestamp`, at that time, and
   * the clock of later blocks continues from it.
   */
  async mineBlock(timestamp?: bigint): Promise<MinedBlock> {
    this.#requireBlockProduction("evm_mine");
    if (timestamp !== undefined) {
      const head = this.chain.head.block.header.timestamp;
      if (timestamp <= head) {
        throw new RPCError(
          RPCErrorCode.INVALID_PARAMS,
          `timestamp ${timestamp} is not after the head's ${head}`,
        );
      }
      this.#timeOffset = timestamp - BigInt(Math.floor(Date.now() / 1000));
    }
    return this.#minePending(timestamp);
  }

  /**
   * `evm_startMining` / `evm_stopMining`: whether blocks are made. Stopped, transactions wait
   * (neither automine nor the interval makes blocks); started again, the configured way
   * resumes, and automine mines what waits.
   */
  async setMining(on: boolean): Promise<void> {
    this.#requireBlockProduction(on ? "evm_startMining" : "evm_stopMining");
    this.#miningStopped = !on;
    this.#autoMining = on && this.automine && this.mineInterval === 0;
    if (this.#autoMining && this.pool.status().pending > 0) await this.#minePending();
  }

  /** Development networks make their own blocks; elsewhere only merged miners do. */
  #requireBlockProduction(method: string): void {
    if (this.automine) return;
    throw new RPCError(
      RPCErrorCode.SERVER_ERROR,
      `${method} works on regtest and devnet only: blocks of ${this.chain.network.name} are made by merged miners`,
    );
  }

  get miningStopped(): boolean {
    return this.#miningStopped;
  }

  /** The pool's executable transactions, in the order the next block takes them. */
  pendingTransactions(): SignedTransaction[] {
    return this.pool.pending();
  }

  /** Every transaction in the pool, pending and queued, each sender's in nonce order. */
  #waiting(): SignedTransaction[] {
    const { pending, queued } = this.pool.content();
    return [...pending.values(), ...queued.values()].flat();
  }

  /** A transaction waiting in the pool (pending or queued). */
  pendingTransaction(hash: Uint8Array): SignedTransaction | undefined {
    return this.pool.get(hash)?.tx;
  }

  /** The account's nonce after the selected block; for `pending`, after its waiting transactions. */
  async nonce(address: Address, selector: BlockSelector): Promise<bigint> {
    if (!isPendingTag(selector)) return (await this.state(selector)).getNonce(address);
    const head = await (await this.#stateAt(this.chain.head.block.header)).getNonce(address);
    return this.pool.pendingNonce(address, head);
  }

  async call(req: CallRequest, selector: BlockSelector): Promise<CallOutcome> {
    const { state, ctx } = await this.#callTarget(selector);
    return this.executor.call(state, req, ctx);
  }

  /**
   * Where a call at `selector` runs: on the state after the block, as part of the block after
   * it; for `pending`, on the pending state as part of the pending block.
   */
  async #callTarget(selector: BlockSelector): Promise<{ state: WorldState; ctx: BlockContext }> {
    const block = await this.require(selector);
    if (isPending(block)) {
      return {
        state: block.state,
        ctx: this.chain.nextBlockContext(this.chain.head.block.header, this.#coinbase()),
      };
    }
    const header = block.block.header;
    return {
      state: await this.#stateAt(header),
      ctx: this.chain.nextBlockContext(header, this.#coinbase()),
    };
  }

  /**
   * The least gas with which the call succeeds, by binary search up to `req.gas` or the block
   * gas limit. A call that fails even with all of it gets that upper bound as its estimate.
   */
  async estimateGas(req: CallRequest, selector: BlockSelector): Promise<bigint> {
    const { state, ctx } = await this.#callTarget(selector);
    const cap = req.gas ?? ctx.gasLimit;
    const run = (gas: bigint) => this.executor.call(state, { ...req, gas }, ctx);
    const first = await run(cap);
    if (!first.success) return cap;
    let lo = intrinsicGas({ to: req.to, data: req.data ?? new Uint8Array() }) - 1n;
    let hi = first.gasUsed > lo ? first.gasUsed : lo + 1n;
    if (!(await run(hi)).success) {
      lo = hi;
      hi = cap;
    }
    while (hi - lo > 1n) {
      const mid = (lo + hi) / 2n;
      if ((await run(mid)).success) hi = mid;
      else lo = mid;
    }
    return hi;
  }

  /** The logs `filter` selects, in chain order. */
  async getLogs(filter: LogFilter): Promise<FoundLog[]> {
    const found: FoundLog[] = [];
    const bits: FilterBits = {
      addresses: filter.addresses.map(bloomBits),
      topics: filter.topics.map((position) => position?.map(bloomBits) ?? null),
    };
    if ("blockHash" in filter.range) {
      const block = await this.chain.getBlockByHash(filter.range.blockHash);
      if (block === undefined) {
        throw new RPCError(
          RPCErrorCode.INVALID_PARAMS,
          `block ${bytesToHex(filter.range.blockHash)} not found`,
        );
      }
      await this.#collectLogs(block, filter, bits, found);
      return found;
    }
    const head = this.chain.head.block.header.number;
    const from = await this.#rangeEnd(filter.range.from, head);
    const to = await this.#rangeEnd(filter.range.to, head);
    if (from > to) {
      throw new RPCError(
        RPCErrorCode.INVALID_PARAMS,
        `invalid block range: fromBlock 0x${from.toString(16)} is after toBlock 0x${to.toString(16)}`,
      );
    }
    const capped = to - from + 1n > LOGS_UNCAPPED_RANGE;
    for (let n = from; n <= to && n <= head; n++) {
      const block = await this.chain.getBlockByNumber(n);
      if (block !== undefined) await this.#collectLogs(block, filter, bits, found);
      if (capped && found.length > LOGS_CAP) {
        throw new RPCError(
          RPCErrorCode.LOGS_LIMIT,
          `query returns more than ${LOGS_CAP} logs over more than ${LOGS_UNCAPPED_RANGE} blocks: ` +
            `ask for at most ${LOGS_UNCAPPED_RANGE} blocks at a time, such as 0x${from.toString(16)} to 0x${(from + LOGS_UNCAPPED_RANGE - 1n).toString(16)}`,
        );
      }
    }
    return found;
  }

  async #rangeEnd(selector: BlockSelector, head: bigint): Promise<bigint> {
    if (selector.kind === "number") return selector.number;
    const block = await this.resolve(selector);
    return block === null ? head : block.block.header.number;
  }

  async #collectLogs(
    block: StoredBlock,
    filter: LogFilter,
    bits: FilterBits,
    out: FoundLog[],
  ): Promise<void> {
    const bloom = block.block.header.logsBloom;
    if (bits.addresses.length > 0 && !bits.addresses.some((a) => bloomHasBits(bloom, a))) return;
    for (const position of bits.topics) {
      if (position !== null && !position.some((t) => bloomHasBits(bloom, t))) return;
    }
    const receipts = await this.chain.getReceipts(block.hash);
    if (receipts === undefined) return;
    let logIndex = 0;
    receipts.forEach((receipt, txIndex) => {
      for (const log of receipt.logs) {
        if (logMatches(log, filter)) {
          out.push({
            log,
            block,
            transactionHash: block.block.transactions[txIndex]!.hash,
            transactionIndex: txIndex,
            logIndex,
          });
        }
        logIndex++;
      }
    });
  }

  async transaction(hash: Uint8Array): Promise<IncludedTransaction | null> {
    const where = await this.chain.getTransactionLocation(hash);
    if (where === undefined) return null;
    const block = await this.chain.getBlockByHash(where.blockHash);
    const tx = block?.block.transactions[where.index];
    return block === undefined || tx === undefined ? null : { tx, block, index: where.index };
  }

  async receipt(hash: Uint8Array): Promise<IncludedReceipt | null> {
    const found = await this.transaction(hash);
    if (found === null) return null;
    const receipts = await this.chain.getReceipts(found.block.hash);
    const receipt = receipts?.[found.index];
    if (receipts === undefined || receipt === undefined) return null;
    const previous = found.index === 0 ? 0n : receipts[found.index - 1]!.cumulativeGasUsed;
    let firstLogIndex = 0;
    for (let i = 0; i < found.index; i++) firstLogIndex += receipts[i]!.logs.length;
    return { ...found, receipt, gasUsed: receipt.cumulativeGasUsed - previous, firstLogIndex };
  }
}

/** A log filter's addresses and topics as bloom bits, computed once per query. */
interface FilterBits {
  readonly addresses: readonly BloomBits[];
  readonly topics: readonly (readonly BloomBits[] | null)[];
}

function isPendingTag(selector: BlockSelector): boolean {
  return selector.kind === "tag" && selector.tag === "pending";
}

function logMatches(log: Log, filter: LogFilter): boolean {
  if (filter.addresses.length > 0 && !filter.addresses.some((a) => equalBytes(a, log.address)))
    return false;
  for (let i = 0; i < filter.topics.length; i++) {
    const wanted = filter.topics[i];
    if (wanted === null || wanted === undefined) continue;
    const topic = log.topics[i];
    if (topic === undefined || !wanted.some((t) => equalBytes(t, topic))) return false;
  }
  return true;
}
