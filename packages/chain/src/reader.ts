import {
  type BlockContext,
  type BloomBits,
  bloomBits,
  bloomHasBits,
  type CallOutcome,
  type CallRequest,
  type ExecutionTracer,
  type Executor,
  intrinsicGas,
} from "@nodex/evm";
import { coinbaseHeight } from "@nodex/mergemining";
import { type AccountReader, orderedTrieProof, type WorldState } from "@nodex/state";
import {
  type Address,
  type BlockHeader,
  type BlockSelector,
  BlockTag,
  bytesToHex,
  encodeReceipt,
  equalBytes,
  formatBlockSelector,
  type Hash32,
  keccak256,
  type Log,
  type Receipt,
  type SignedTransaction,
} from "@nodex/types";
import { LRUCache } from "lru-cache";
import type { StoredBlock } from "./blockStore.js";
import type { Chain } from "./chain.js";
import { ChainError, ChainErrorCode } from "./errors.js";
import { LogIndexKind } from "./logIndex.js";
import { type LocatedLog, matchLogs } from "./logRecords.js";
import { replayBlock, type TracedTransaction } from "./replay.js";

/** Block ranges up to this many blocks return every matching log (the spec's limits). */
export const LOGS_UNCAPPED_RANGE = 2000n;
/** Longer ranges are served while they return at most this many logs. */
export const LOGS_CAP = 10_000;
/** Log queries read the log index over ranges of at least this many indexed blocks by default. */
export const LOG_INDEX_MIN_RANGE = 256n;
/** What `getLogsWithin` stops with past its budget (never seen outside this module). */
const OVER_BUDGET = Symbol("over the log query's budget");
/** Spans of blocks remembered per log index constraint found too common to read. */
const COMMON_SPANS = 16;
/** Blocks of a range whose log records are looked up together: the first chunk, the largest. */
const LOG_RECORD_FIRST_CHUNK = 64n;
const LOG_RECORD_LAST_CHUNK = 1024n;
/**
 * `bitcoinBestChainHeight` reads the merged-mining proofs of the best block and this many
 * blocks in all (the best block and its ancestors): about an hour of blocks at the chain's
 * 30-second target, six Bitcoin blocks.
 */
export const BITCOIN_HEIGHT_WINDOW = 128;
/** Read-only states (by state root) kept open for reuse by default. */
export const DEFAULT_STATE_CACHE = 8;

/** The `pending` block: not sealed, not stored; its state lives in memory. */
export interface PendingBlock extends StoredBlock {
  readonly pending: true;
  readonly state: WorldState;
  /** The receipts of its transactions, as they ran on that state. */
  readonly receipts: readonly Receipt[];
}

export function isPending(block: StoredBlock): block is PendingBlock {
  return (block as Partial<PendingBlock>).pending === true;
}

/**
 * Where the reader finds what waits for the next block: block production (the miner package)
 * provides it. Without one, `pending` reads as `latest`.
 */
export interface PendingSource {
  /** Whether transactions wait: otherwise the pending state is the head's. */
  hasPending(): boolean;
  /** The head plus the waiting transactions, built and executed. */
  pendingBlock(): Promise<PendingBlock>;
  /** The next nonce of `address` counting its waiting transactions; `stateNonce` is the head's. */
  pendingNonce(address: Address, stateNonce: bigint): bigint;
  /** A transaction waiting for a block. */
  pendingTransaction(hash: Uint8Array): SignedTransaction | undefined;
}

/** A log query: which blocks, which emitters, which topics by position. */
export interface LogQuery {
  readonly range:
    | { readonly blockHash: Hash32 }
    | { readonly from: BlockSelector; readonly to: BlockSelector };
  /** Empty: any address. */
  readonly addresses: readonly Address[];
  /** One entry per position: `null` matches anything, a list matches any of its topics. */
  readonly topics: readonly (readonly Hash32[] | null)[];
}

/**
 * A log with where it is; `block` when the log was read from the whole block (`blockLogs`, a
 * query by block hash, blocks older than the log records): queries over canonical ranges read
 * the blocks' log records and leave it out.
 */
export interface FoundLog extends LocatedLog {
  readonly block?: StoredBlock;
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

export interface ChainReaderOptions {
  /** The beneficiary calls run with (the block after the selected one is theirs). */
  readonly coinbase: () => Address;
  /**
   * The time of the next block, when the node's clock is not the wall clock (a development
   * network's `evm_increaseTime`, `evm_setNextBlockTimestamp`): calls run at it. Now when
   * absent or `undefined`.
   */
  readonly nextTimestamp?: () => bigint | undefined;
  /**
   * The gas limit of the next block when the node sets it (a development network's
   * `--block-gas-limit`, `evm_setBlockGasLimit`): calls and the pool's checks use it. The
   * head's when absent or `undefined`.
   */
  readonly nextGasLimit?: () => bigint | undefined;
  /** Read-only states kept open for reuse, by state root; `DEFAULT_STATE_CACHE` when absent. */
  readonly stateCache?: number;
  /** Log queries over at most this many blocks are never capped; `LOGS_UNCAPPED_RANGE` when absent. */
  readonly logsUncappedRange?: bigint;
  /** Longer log queries fail past this many logs; `LOGS_CAP` when absent. */
  readonly logsCap?: number;
  /**
   * Log queries read the log index when it covers at least this many blocks of their range
   * (fewer headers are cheaper to test than the index to read); `LOG_INDEX_MIN_RANGE` when absent.
   */
  readonly logIndexMinRange?: bigint;
}

/**
 * The chain as its readers see it: block selectors resolved (`pending`, `safe` and `finalized`
 * included), the state after a block, calls and gas estimates on it, transactions and receipts
 * by hash, and the log query. Reads never wait for the write queue.
 */
export class ChainReader {
  readonly chain: Chain;
  readonly #executor: Executor;
  readonly #coinbase: () => Address;
  readonly #nextTimestamp: () => bigint | undefined;
  readonly #nextGasLimit: () => bigint | undefined;
  #pending: PendingSource | undefined;
  /** Read-only states by state root. */
  readonly #states: LRUCache<string, Promise<WorldState>>;
  readonly #logsUncappedRange: bigint;
  readonly #logsCap: number;
  readonly #logIndexMinRange: bigint;
  /**
   * Log index constraints (kind and values) found too common to read: for each, up to
   * `COMMON_SPANS` spans of blocks that hold more than `most` entries, the latest first (each
   * from where a read began to the block where it passed `most`, so that a later query over any
   * range containing it skips the read: windows that slide near the head contain most of
   * them). Skipping them again is only ever slower than reading them (a reorganization may
   * have made one rarer since), never wrong: the index only narrows the blocks a query reads.
   */
  readonly #common = new LRUCache<string, { from: bigint; to: bigint; most: number }[]>({
    max: 1024,
  });

  constructor(chain: Chain, executor: Executor, opts: ChainReaderOptions) {
    this.chain = chain;
    this.#executor = executor;
    this.#coinbase = opts.coinbase;
    this.#nextTimestamp = opts.nextTimestamp ?? (() => undefined);
    this.#nextGasLimit = opts.nextGasLimit ?? (() => undefined);
    const size = opts.stateCache ?? DEFAULT_STATE_CACHE;
    if (!Number.isSafeInteger(size) || size < 1)
      throw new RangeError(`the state cache must hold at least 1 state, got ${size}`);
    this.#states = new LRUCache({ max: size });
    this.#logsUncappedRange = opts.logsUncappedRange ?? LOGS_UNCAPPED_RANGE;
    this.#logsCap = opts.logsCap ?? LOGS_CAP;
    this.#logIndexMinRange = opts.logIndexMinRange ?? LOG_INDEX_MIN_RANGE;
    if (this.#logsUncappedRange < 1n)
      throw new RangeError(
        `the uncapped log range must be at least 1 block, got ${this.#logsUncappedRange}`,
      );
    if (!Number.isSafeInteger(this.#logsCap) || this.#logsCap < 1)
      throw new RangeError(`the log cap must be at least 1 log, got ${this.#logsCap}`);
  }

  /** Where `pending` comes from from now on (block production, once it exists). */
  setPendingSource(source: PendingSource): void {
    this.#pending = source;
  }

  get head(): StoredBlock {
    return this.chain.head;
  }

  /**
   * The number of the chain's first block (genesis, or an anchor: `Chain.firstBlock`). A block
   * numbered below it resolves to `null` as one after the head does; this tells the two apart
   * (an anchored chain's older blocks are its upstream's).
   */
  get firstNumber(): bigint {
    return this.chain.firstBlock.number;
  }

  /** Whether block `number` is before the chain's first block (not this chain's to answer). */
  isBeforeFirst(number: bigint): boolean {
    return number < this.chain.firstBlock.number;
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
            throw new ChainError(
              ChainErrorCode.NOT_CANONICAL,
              `block ${bytesToHex(block.hash)} is not canonical`,
            );
          }
        }
        return block;
      }
      case "tag":
        switch (selector.tag) {
          case BlockTag.LATEST:
            return this.chain.head;
          case BlockTag.PENDING:
            return this.#pending === undefined ? this.chain.head : this.#pending.pendingBlock();
          case BlockTag.EARLIEST:
            // The chain's first block: genesis, or the anchor of an anchored chain.
            return (await this.chain.getBlockByNumber(this.chain.firstBlock.number)) ?? null;
          case BlockTag.SAFE:
            return this.#confirmed(this.chain.network.safeDepth);
          case BlockTag.FINALIZED:
            return this.#confirmed(this.chain.network.finalizedDepth);
        }
    }
  }

  /** The canonical block `depth` blocks below the head (the first block on a shorter chain). */
  async #confirmed(depth: bigint): Promise<StoredBlock | null> {
    const head = this.chain.head.block.header.number;
    const first = this.chain.firstBlock.number;
    const number = head - depth > first ? head - depth : first;
    return (await this.chain.getBlockByNumber(number)) ?? null;
  }

  /** Like `resolve`, for methods that need a block: a missing one is `UNKNOWN_BLOCK`. */
  async require(selector: BlockSelector): Promise<StoredBlock> {
    const block = await this.resolve(selector);
    if (block === null) {
      throw new ChainError(
        ChainErrorCode.UNKNOWN_BLOCK,
        `block ${formatBlockSelector(selector)} not found`,
      );
    }
    return block;
  }

  /** A stored block by hash, canonical or not. */
  async blockByHash(hash: Uint8Array): Promise<StoredBlock | null> {
    return (await this.chain.getBlockByHash(hash)) ?? null;
  }

  /**
   * The state after the selected block, for reads and calls: the same object is shared by
   * concurrent readers of that block (its caches with it). Calls never change it: the executor
   * runs each on a write layer of its own.
   */
  async state(selector: BlockSelector): Promise<WorldState> {
    // With nothing waiting, the pending state is the head's: no block to build.
    if (isPendingTag(selector) && !this.#pending?.hasPending())
      return this.stateAt(this.chain.head.block.header);
    const block = await this.require(selector);
    return isPending(block) ? block.state : this.stateAt(block.block.header);
  }

  /**
   * The accounts after `header`, read straight from its state's trie, for readers of nothing
   * else (the pool's nonce and balance checks): no state is opened for them.
   */
  accountsAt(header: BlockHeader): Pick<AccountReader, "getAccount"> {
    return this.chain.accountsAt(header);
  }

  /** The state after `header`, shared with other readers of it (kept while recently used). */
  stateAt(header: BlockHeader): Promise<WorldState> {
    this.chain.assertStateRetained(header);
    const key = bytesToHex(this.chain.stateRootOf(header));
    let state = this.#states.get(key);
    if (state === undefined) {
      state = this.chain.stateAt(header);
      state.catch(() => this.#states.delete(key));
      this.#states.set(key, state);
    }
    return state;
  }

  /** The account's nonce after the selected block; for `pending`, after its waiting transactions. */
  async nonce(address: Address, selector: BlockSelector): Promise<bigint> {
    if (!isPendingTag(selector) || this.#pending === undefined)
      return (await this.state(selector)).getNonce(address);
    const head = await (await this.stateAt(this.chain.head.block.header)).getNonce(address);
    return this.#pending.pendingNonce(address, head);
  }

  /** A transaction waiting for a block (pending or queued). */
  pendingTransaction(hash: Uint8Array): SignedTransaction | undefined {
    return this.#pending?.pendingTransaction(hash);
  }

  /** `opts.deadline`: when the call stops (`TraceAbort`), see `CallOptions.deadline`. */
  async call(
    req: CallRequest,
    selector: BlockSelector,
    opts: { readonly deadline?: number } = {},
  ): Promise<CallOutcome> {
    const { state, ctx } = await this.#callTarget(selector);
    return this.#executor.call(state, req, ctx, opts);
  }

  /**
   * Runs `req` as `call` does, heard by `tracer` as a transaction would be (`debug_traceCall`),
   * on a copy of the state that is thrown away.
   */
  async traceCall<T extends ExecutionTracer>(
    req: CallRequest,
    selector: BlockSelector,
    tracer: T,
  ): Promise<{ readonly outcome: CallOutcome; readonly tracer: T }> {
    const { state, ctx } = await this.#callTarget(selector);
    return { outcome: await this.#executor.traceCall(state, req, ctx, tracer), tracer };
  }

  /** The gas limit of the next block: the node's setting, or the head's. */
  nextBlockGasLimit(): bigint {
    return this.#nextGasLimit() ?? this.chain.head.block.header.gasLimit;
  }

  #withGasLimit(ctx: BlockContext): BlockContext {
    const gasLimit = this.#nextGasLimit();
    return gasLimit === undefined || gasLimit === ctx.gasLimit ? ctx : { ...ctx, gasLimit };
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
        ctx: this.#withGasLimit(
          this.chain.nextBlockContext(
            this.chain.head.block.header,
            this.#coinbase(),
            this.#nextTimestamp(),
          ),
        ),
      };
    }
    const header = block.block.header;
    return {
      state: await this.stateAt(header),
      ctx: this.#withGasLimit(
        this.chain.nextBlockContext(header, this.#coinbase(), this.#nextTimestamp()),
      ),
    };
  }

  /**
   * The least gas with which the call succeeds, by binary search up to `req.gas` or the block
   * gas limit; or, when the call fails even with all of it (a revert, an invalid opcode, out of
   * gas), that failure, as `call` tells it (its error, revert reason and return data), so that
   * the client hears why before it sends the transaction. A sender short of the value is not a
   * failure here: calls top its balance up, so the estimate is that of the call with the value.
   */
  async estimateGas(
    req: CallRequest,
    selector: BlockSelector,
    opts: { readonly deadline?: number } = {},
  ): Promise<bigint | CallOutcome> {
    const { state, ctx } = await this.#callTarget(selector);
    const cap = req.gas ?? ctx.gasLimit;
    // Probes: only success and gas used count, so a halt needs no second run on the library.
    // The deadline holds for the search as a whole: each probe stops at it.
    const run = (gas: bigint) =>
      this.#executor.call(state, Object.assign({}, req, { gas }), ctx, {
        probe: true,
        ...opts,
      });
    const first = await run(cap);
    if (!first.success) {
      const failure = await this.#executor.call(
        state,
        Object.assign({}, req, { gas: cap }),
        ctx,
        opts,
      );
      return failure.success ? cap : failure;
    }
    let lo =
      intrinsicGas({
        to: req.to,
        data: req.data ?? new Uint8Array(),
        accessListBytes: req.accessListBytes ?? 0,
      }) - 1n;
    let hi = first.gasUsed > lo ? first.gasUsed : lo + 1n;
    if (!(await run(hi)).success) {
      lo = hi;
      hi = cap;
    } else if (hi - lo > 1n) {
      // Most calls need just the gas they used (no refund, nothing that reads GAS): one run
      // below it settles the search, which otherwise takes some seventeen.
      if ((await run(hi - 1n)).success) hi -= 1n;
      else lo = hi - 1n;
    }
    while (hi - lo > 1n) {
      const mid = (lo + hi) / 2n;
      if ((await run(mid)).success) hi = mid;
      else lo = mid;
    }
    return hi;
  }

  /** The logs `query` selects, in chain order. */
  getLogs(query: LogQuery): Promise<FoundLog[]> {
    return this.#getLogs(query, undefined) as Promise<FoundLog[]>;
  }

  /**
   * `getLogs`, or `undefined` as soon as the query turns out to cover more than
   * `budget.blocks` blocks or to match more than `budget.logs` logs: for a caller that would
   * rather have such a query served elsewhere. Throws what `getLogs` throws for a bad range.
   */
  getLogsWithin(
    query: LogQuery,
    budget: { readonly blocks: bigint; readonly logs: number },
  ): Promise<FoundLog[] | undefined> {
    return this.#getLogs(query, budget).catch((err: unknown) => {
      if (err === OVER_BUDGET) return undefined;
      throw err;
    });
  }

  async #getLogs(
    query: LogQuery,
    budget: { readonly blocks: bigint; readonly logs: number } | undefined,
  ): Promise<FoundLog[]> {
    const found: FoundLog[] = [];
    const bits: QueryBits = {
      addresses: query.addresses.map(bloomBits),
      topics: query.topics.map((position) => position?.map(bloomBits) ?? null),
    };
    if ("blockHash" in query.range) {
      const block = await this.chain.getBlockByHash(query.range.blockHash);
      if (block === undefined) {
        throw new ChainError(
          ChainErrorCode.UNKNOWN_BLOCK,
          `block ${bytesToHex(query.range.blockHash)} not found`,
        );
      }
      await this.#collectLogs(block, query, bits, found);
      if (budget !== undefined && found.length > budget.logs) throw OVER_BUDGET;
      return found;
    }
    const head = this.chain.head.block.header.number;
    const asked = await this.#rangeEnd(query.range.from, head);
    const to = await this.#rangeEnd(query.range.to, head);
    // Blocks below the chain's first (an anchored chain's upstream's) hold no logs of its own.
    const firstNumber = this.chain.firstBlock.number;
    const from = asked < firstNumber && to >= firstNumber ? firstNumber : asked;
    if (from > to) {
      throw new ChainError(
        ChainErrorCode.INVALID_RANGE,
        `invalid block range: fromBlock 0x${from.toString(16)} is after toBlock 0x${to.toString(16)}`,
      );
    }
    if (from > head) {
      throw new ChainError(
        ChainErrorCode.RANGE_BEYOND_HEAD,
        "block range extends beyond current head block",
        { from, head },
      );
    }
    if (to < firstNumber) return found;
    const range = this.#logsUncappedRange;
    const cap = this.#logsCap;
    const capped = to - from + 1n > range;
    if (budget !== undefined && (to < head ? to : head) - from + 1n > budget.blocks)
      throw OVER_BUDGET;
    const checkCap = () => {
      if (budget !== undefined && found.length > budget.logs) throw OVER_BUDGET;
      if (capped && found.length > cap) {
        throw new ChainError(
          ChainErrorCode.LOGS_LIMIT,
          `query returns more than ${cap} logs over more than ${range} blocks: ` +
            `ask for at most ${range} blocks at a time, such as 0x${from.toString(16)} to 0x${(from + range - 1n).toString(16)}`,
        );
      }
    };
    /**
     * For a block without a log record: tests its bloom and collects its logs. A block likely
     * to match (one the index names, or after a match: runs of matches are common) is read
     * whole at once; any other by its header first, and whole only if its bloom matches.
     * Receipts only of matching blocks.
     */
    const visit = async (n: bigint, likely: boolean): Promise<boolean> => {
      const hash = await this.chain.getCanonicalHash(n);
      let matched = false;
      if (hash !== undefined) {
        const header = likely ? undefined : await this.chain.getHeaderByHash(hash);
        if (header === undefined || bloomMatches(header.logsBloom, bits)) {
          const block = await this.chain.getBlockByHash(hash);
          if (block !== undefined) matched = await this.#collectLogs(block, query, bits, found);
        }
      }
      checkCap();
      return matched;
    };
    const index = this.chain.logIndex;
    /** For a block with a log record (or none: no logs): its matching logs from the record. */
    const read = async (n: bigint): Promise<boolean> => {
      const logs = await index.logRecord(n);
      if (logs === undefined) return false;
      matchLogs(logs, query, found);
      checkCap();
      return true;
    };
    const last = to < head ? to : head;
    const indexed = await this.#indexedBlocks(query, from, last);
    const scanEnd = indexed === undefined ? last : indexed.start - 1n;
    // Blocks from `recorded` on have log records; older ones are read whole.
    const recorded = (await index.logRecordStart()) ?? last + 1n;
    let likely = false;
    const wholeEnd = scanEnd < recorded ? scanEnd : recorded - 1n;
    for (let n = from; n <= wholeEnd; n++) likely = await visit(n, likely);
    // Only the blocks with logs have records. Chunk by chunk (64 blocks, then twice as many
    // each time up to 1,024): where the last chunk had records for at least an eighth of its
    // blocks, each block's record is looked up; where it had fewer, one key read names the
    // blocks that have one.
    let dense = true;
    let chunk = LOG_RECORD_FIRST_CHUNK;
    for (let n = from > recorded ? from : recorded; n <= scanEnd; ) {
      const end = scanEnd - n < chunk ? scanEnd : n + chunk - 1n;
      const blocks = Number(end - n + 1n);
      let present = 0;
      if (dense) {
        for (let m = n; m <= end; m++) if (await read(m)) present++;
      } else {
        const numbers = await index.logRecordNumbers(n, end, blocks);
        for (const m of numbers) await read(m);
        present = numbers.length;
      }
      dense = present * 8 >= blocks;
      if (chunk < LOG_RECORD_LAST_CHUNK) chunk *= 2n;
      n = end + 1n;
    }
    for (const n of indexed?.blocks ?? []) {
      if (n < recorded) await visit(n, true);
      else await read(n);
    }
    return found;
  }

  /**
   * The blocks of [`from`, `last`] the log index allows to match `query`: the blocks it covers
   * where each constrained position (the addresses, each topic position with a list) has one of
   * its values, and where it starts. `undefined` when the query constrains nothing or the index
   * covers none of the range (the blooms of every block are tested then).
   */
  async #indexedBlocks(
    query: LogQuery,
    from: bigint,
    last: bigint,
  ): Promise<{ start: bigint; blocks: readonly bigint[] } | undefined> {
    const constraints: [number, readonly Uint8Array[]][] = [];
    query.topics.forEach((position, i) => {
      if (position !== null) constraints.push([LogIndexKind.TOPIC + i, position]);
    });
    if (query.addresses.length > 0) constraints.push([LogIndexKind.ADDRESS, query.addresses]);
    if (constraints.length === 0) return undefined;
    const index = this.chain.logIndex;
    const first = await index.logIndexStart();
    if (first === undefined || first > last) return undefined;
    const start = first > from ? first : from;
    const length = last - start + 1n;
    if (length < this.#logIndexMinRange) return undefined;
    // A constraint met in more than an eighth of the blocks saves too few reads: skip it.
    const limit = Math.max(1, Number(length / 8n));
    /** The blocks where a constraint is met, `undefined` past `most` entries (or known to be). */
    const probe = async (kind: number, values: readonly Uint8Array[], most: number) => {
      const key = `${kind}:${values.map(bytesToHex).join()}`;
      const spans = this.#common.get(key);
      // Known to have more entries over a range this one contains: more here too.
      if (spans?.some((s) => s.from >= start && s.to <= last && s.most >= most)) return undefined;
      let reach = last;
      const found = await index.logIndexBlocks(kind, values, start, last, most, (at) => {
        reach = at;
      });
      if (found === undefined) {
        const span = { from: start, to: reach, most };
        this.#common.set(key, [span, ...(spans ?? []).slice(0, COMMON_SPANS - 1)]);
      }
      return found;
    };
    // In rounds of growing bounds (64 entries, then 8 times as many up to the limit), so that a
    // rare constraint is found after a few entries of the common ones are read. Once some
    // blocks are named, another position is worth reading only if it is rarer.
    let blocks: bigint[] | undefined;
    let pending = constraints;
    for (let most = Math.min(limit, 64); pending.length > 0; most = Math.min(limit, most * 8)) {
      const again: typeof constraints = [];
      for (const [kind, values] of pending) {
        const bound = blocks === undefined ? most : Math.min(limit, blocks.length * 4);
        const found = await probe(kind, values, bound);
        if (found === undefined) {
          if (blocks === undefined && bound < limit) again.push([kind, values]);
          continue;
        }
        if (blocks === undefined) blocks = found;
        else {
          const set = new Set(found);
          blocks = blocks.filter((n) => set.has(n));
        }
        if (blocks.length === 0) return { start, blocks };
      }
      pending = again;
    }
    return blocks === undefined ? undefined : { start, blocks };
  }

  /** A range end as a number: `pending` (no logs of its own) and a missing block are the head. */
  async #rangeEnd(selector: BlockSelector, head: bigint): Promise<bigint> {
    if (selector.kind === "number") return selector.number;
    if (isPendingTag(selector)) return head;
    const block = await this.resolve(selector);
    return block === null ? head : block.block.header.number;
  }

  async #collectLogs(
    block: StoredBlock,
    query: LogQuery,
    bits: QueryBits,
    out: FoundLog[],
  ): Promise<boolean> {
    if (!bloomMatches(block.block.header.logsBloom, bits)) return false;
    const receipts = await this.chain.getReceipts(block.hash);
    if (receipts === undefined) return false;
    out.push(...blockLogs(block, receipts, query));
    return true;
  }

  async transaction(hash: Uint8Array): Promise<IncludedTransaction | null> {
    const where = await this.chain.getTransactionLocation(hash);
    if (where === undefined) return null;
    const block = await this.chain.getBlockByHash(where.blockHash);
    const tx = block?.block.transactions[where.index];
    return block === undefined || tx === undefined ? null : { tx, block, index: where.index };
  }

  /**
   * The receipt-trie nodes that prove the receipt of `txHash` in block `blockHash` (any block
   * taken in, canonical or not), leaf first, as the reference node orders them: reversed, a
   * root-first Merkle proof of key RLP(index) against the header's `receiptsRoot`. The trie is
   * the one `receiptsRoot` is built from (`orderedTrieRoot` of the encoded receipts); the root
   * of the proof is checked against the header before it is returned. Throws `UNKNOWN_BLOCK`
   * for an unknown block, `UNKNOWN_TRANSACTION` for a transaction not in it, and `CORRUPT`
   * when the block's receipts are missing or do not give its receipts root.
   */
  /** State trie nodes by hash (see `Chain.trieNodes`). */
  trieNodes(hashes: readonly Uint8Array[]): Promise<(Uint8Array | undefined)[]> {
    return this.chain.trieNodes(hashes);
  }

  async receiptNodes(blockHash: Uint8Array, txHash: Uint8Array): Promise<Uint8Array[]> {
    const block = await this.chain.getBlockByHash(blockHash);
    if (block === undefined) {
      throw new ChainError(
        ChainErrorCode.UNKNOWN_BLOCK,
        `block ${bytesToHex(blockHash)} not found`,
      );
    }
    const txs = block.block.transactions;
    const index = txs.findIndex((tx) => equalBytes(tx.hash, txHash));
    if (index < 0) {
      throw new ChainError(
        ChainErrorCode.UNKNOWN_TRANSACTION,
        `transaction ${bytesToHex(txHash)} is not in block ${bytesToHex(blockHash)}`,
      );
    }
    const receipts = await this.chain.getReceipts(block.hash);
    if (receipts === undefined || receipts.length !== txs.length) {
      throw new ChainError(
        ChainErrorCode.CORRUPT,
        `the receipts of block ${bytesToHex(blockHash)} are missing`,
        { blockHash: bytesToHex(blockHash) },
      );
    }
    const nodes = orderedTrieProof(receipts.map(encodeReceipt), index);
    if (!equalBytes(keccak256(nodes[0]!), block.block.header.receiptsRoot)) {
      throw new ChainError(
        ChainErrorCode.CORRUPT,
        `the receipts of block ${bytesToHex(blockHash)} do not give its receipts root`,
        { blockHash: bytesToHex(blockHash) },
      );
    }
    return nodes.reverse();
  }

  /**
   * The height of the best Bitcoin block the merged-mining proofs of the best block and its
   * ancestors state (`BITCOIN_HEIGHT_WINDOW` blocks in all): the highest BIP34 height among
   * their coinbases (`coinbaseHeight` of `@nodex/mergemining`: only a coinbase the proof keeps
   * whole states one), or 0 when none states a height.
   */
  async bitcoinBestChainHeight(window = BITCOIN_HEIGHT_WINDOW): Promise<bigint> {
    let best = 0n;
    let header: BlockHeader | undefined = this.chain.head.block.header;
    for (let i = 0; i < window && header !== undefined; i++) {
      const height = coinbaseHeight(header.bitcoinMergedMiningCoinbaseTransaction);
      if (height !== undefined && height > best) best = height;
      if (header.number <= this.chain.firstBlock.number) break;
      header = await this.chain.getHeaderByHash(header.parentHash);
    }
    return best;
  }

  /**
   * Runs transaction `hash` again in its block (on the parent's state, after the transactions
   * before it) with a tracer from `make`; `null` when the transaction is unknown. `ChainError`
   * `STATE_MISSING` when the parent's state is no longer kept.
   */
  async traceTransaction<T extends ExecutionTracer>(
    hash: Uint8Array,
    make: (found: IncludedTransaction) => T,
  ): Promise<{ readonly found: IncludedTransaction; readonly tracer: T } | null> {
    const found = await this.transaction(hash);
    if (found === null) return null;
    const traced = await replayBlock(
      this.chain,
      this.#executor,
      found.block,
      () => make(found),
      found.index,
    );
    return { found, tracer: traced[0]!.tracer };
  }

  /** Runs every transaction of `block` again, each with a tracer from `make`. */
  traceBlock<T extends ExecutionTracer>(
    block: StoredBlock,
    make: (tx: SignedTransaction, index: number) => T,
  ): Promise<TracedTransaction<T>[]> {
    return replayBlock(this.chain, this.#executor, block, make);
  }

  /**
   * Every receipt of `block`, in its order, each as `receipt` gives it; for the pending block,
   * the receipts of its execution. Throws `CORRUPT` when a stored block's receipts are missing.
   */
  async blockReceipts(block: StoredBlock): Promise<IncludedReceipt[]> {
    const txs = block.block.transactions;
    if (txs.length === 0) return [];
    const receipts = isPending(block) ? block.receipts : await this.chain.getReceipts(block.hash);
    if (receipts === undefined || receipts.length !== txs.length) {
      throw new ChainError(
        ChainErrorCode.CORRUPT,
        `the receipts of block ${bytesToHex(block.hash)} are missing`,
        { blockHash: bytesToHex(block.hash) },
      );
    }
    const out: IncludedReceipt[] = [];
    let previous = 0n;
    let firstLogIndex = 0;
    for (let index = 0; index < txs.length; index++) {
      const receipt = receipts[index]!;
      out.push({
        tx: txs[index]!,
        block,
        index,
        receipt,
        gasUsed: receipt.cumulativeGasUsed - previous,
        firstLogIndex,
      });
      previous = receipt.cumulativeGasUsed;
      firstLogIndex += receipt.logs.length;
    }
    return out;
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
    return {
      tx: found.tx,
      block: found.block,
      index: found.index,
      receipt,
      gasUsed: receipt.cumulativeGasUsed - previous,
      firstLogIndex,
    };
  }
}

/** A query's addresses and topics as bloom bits, computed once per query. */
interface QueryBits {
  readonly addresses: readonly BloomBits[];
  readonly topics: readonly (readonly BloomBits[] | null)[];
}

/** Whether a block with `bloom` may hold a log the query selects (no false negatives). */
function bloomMatches(bloom: Uint8Array, bits: QueryBits): boolean {
  if (bits.addresses.length > 0 && !bits.addresses.some((a) => bloomHasBits(bloom, a)))
    return false;
  for (const position of bits.topics) {
    if (position !== null && !position.some((t) => bloomHasBits(bloom, t))) return false;
  }
  return true;
}

export function isPendingTag(selector: BlockSelector): boolean {
  return selector.kind === "tag" && selector.tag === BlockTag.PENDING;
}

/** The logs of `block` (with its `receipts`) that `query`'s addresses and topics select. */
export function blockLogs(
  block: StoredBlock,
  receipts: readonly Receipt[],
  query: Pick<LogQuery, "addresses" | "topics">,
): FoundLog[] {
  const out: FoundLog[] = [];
  let logIndex = 0;
  receipts.forEach((receipt, txIndex) => {
    for (const log of receipt.logs) {
      if (logMatches(log, query)) {
        out.push({
          log,
          blockHash: block.hash,
          blockNumber: block.block.header.number,
          block,
          transactionHash: block.block.transactions[txIndex]!.hash,
          transactionIndex: txIndex,
          logIndex,
        });
      }
      logIndex++;
    }
  });
  return out;
}

function logMatches(log: Log, query: Pick<LogQuery, "addresses" | "topics">): boolean {
  if (query.addresses.length > 0 && !query.addresses.some((a) => equalBytes(a, log.address)))
    return false;
  for (let i = 0; i < query.topics.length; i++) {
    const wanted = query.topics[i];
    if (wanted === null || wanted === undefined) continue;
    const topic = log.topics[i];
    if (topic === undefined || !wanted.some((t) => equalBytes(t, topic))) return false;
  }
  return true;
}
