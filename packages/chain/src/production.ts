import {
  type BlockContext,
  ExecutionError,
  ExecutionErrorCode,
  type Executor,
  logsBloom,
  orBloom,
} from "@nodex/evm";
import {
  type Database,
  type ForkSource,
  type NodeCache,
  NodeStore,
  orderedTrieRoot,
  WorldState,
} from "@nodex/state";
import {
  type Address,
  type Block,
  type BlockHeader,
  bytesToHex,
  encodeReceipt,
  headerHash,
  type Receipt,
  type SignedTransaction,
  unclesHash,
} from "@nodex/types";
import type { StoredBlock } from "./blockStore.js";
import { ChainError, ChainErrorCode } from "./errors.js";
import { type ConsensusRules, MAX_UNCLES, UNCLE_GENERATIONS } from "./validation.js";

/** A transaction a new block could not include, and why. */
export interface RejectedTransaction {
  readonly tx: SignedTransaction;
  readonly error: ExecutionError;
}

export interface MineOptions {
  readonly coinbase: Address;
  /** Seconds; at least the parent's timestamp + 1. Defaults to now. */
  readonly timestamp?: bigint;
  /** The block's gas limit (a development network's `evm_setBlockGasLimit`); the parent's by default. */
  readonly gasLimit?: bigint;
}

/** A block's transactions run on its parent's state. */
export interface Execution {
  readonly store: NodeStore;
  readonly state: WorldState;
  readonly stateRoot: Uint8Array;
  readonly included: SignedTransaction[];
  readonly receipts: Receipt[];
  readonly rejected: RejectedTransaction[];
  /** The included transactions that failed (status 0), with the EVM's error and return data. */
  readonly failed: FailedTransaction[];
  readonly bloom: Uint8Array;
  readonly gasUsed: bigint;
  readonly paidFees: bigint;
}

/** An included transaction whose execution failed: a revert or an exceptional halt. */
export interface FailedTransaction {
  readonly tx: SignedTransaction;
  /** The EVM's reason: `revert`, `out of gas`, `invalid opcode`, … */
  readonly error: string;
  /** The return data (a revert's reason or custom error). */
  readonly returnValue: Uint8Array;
}

/** The state after the head, kept for building the next block (with its caches and EVM). */
interface HeadState {
  readonly store: NodeStore;
  readonly state: WorldState;
  readonly root: string;
}

/**
 * Running blocks and assembling new ones: the execution of a block's transactions on its
 * parent's state, the context of the next block, and unsealed headers. Writes nothing: the
 * chain writes what an execution produced.
 */
export class BlockProduction {
  readonly #db: Database;
  readonly #nodes: NodeCache;
  readonly #executor: Executor;
  readonly #rules: ConsensusRules;
  readonly #stateRootOf: (header: BlockHeader) => Uint8Array;
  readonly #fork: ForkSource | undefined;
  #headState: HeadState | undefined;

  /**
   * `stateRootOf` names the state after a block (its header's root, or that state as edited);
   * `fork`, on a forked chain, fills in the upstream's state as blocks read it.
   */
  constructor(
    db: Database,
    nodes: NodeCache,
    executor: Executor,
    rules: ConsensusRules,
    stateRootOf: (header: BlockHeader) => Uint8Array = (header) => header.stateRoot,
    fork?: ForkSource,
  ) {
    this.#db = db;
    this.#nodes = nodes;
    this.#fork = fork;
    this.#executor = executor;
    this.#rules = rules;
    this.#stateRootOf = stateRootOf;
  }

  /** Keeps the state after the new head for the next block built on it. */
  keepHeadState(run: Execution): void {
    this.#headState = { store: run.store, state: run.state, root: bytesToHex(run.stateRoot) };
  }

  /** Drops the kept state (the head moved somewhere it does not follow from). */
  dropHeadState(): void {
    this.#headState = undefined;
  }

  /** The context a transaction or call runs in as part of the block after `parent`. */
  nextBlockContext(
    parent: BlockHeader,
    coinbase: Address,
    timestamp: bigint | undefined,
    uncleCount: number,
    blockHash: (number: bigint) => Promise<Uint8Array | undefined>,
  ): BlockContext {
    const now = timestamp ?? BigInt(Math.floor(Date.now() / 1000));
    const time = now > parent.timestamp ? now : parent.timestamp + 1n;
    return {
      number: parent.number + 1n,
      timestamp: time,
      coinbase,
      gasLimit: parent.gasLimit,
      difficulty: this.#rules.difficulty(parent, time, uncleCount),
      minimumGasPrice: parent.minimumGasPrice,
      blockHash,
    };
  }

  /**
   * Runs `txs` on `parent` with `uncles` and assembles the unsealed header of the block. With
   * `keepHeadState` the kept head state is left untouched (a template, not the next head).
   */
  async build(
    parent: StoredBlock,
    uncles: BlockHeader[],
    txs: readonly SignedTransaction[],
    opts: MineOptions,
    keepHeadState: boolean,
    blockHash: (number: bigint) => Promise<Uint8Array | undefined>,
  ): Promise<{ header: BlockHeader; uncles: BlockHeader[]; run: Execution }> {
    const parentHeader = parent.block.header;
    const next = this.nextBlockContext(
      parentHeader,
      opts.coinbase,
      opts.timestamp,
      uncles.length,
      blockHash,
    );
    const ctx = opts.gasLimit === undefined ? next : { ...next, gasLimit: opts.gasLimit };
    const run = await this.execute(parentHeader, ctx, txs, false, keepHeadState);
    const header: BlockHeader = {
      parentHash: parent.hash,
      unclesHash: unclesHash(uncles),
      coinbase: opts.coinbase,
      stateRoot: run.stateRoot,
      transactionsRoot: await orderedTrieRoot(run.included.map((tx) => tx.raw)),
      receiptsRoot: await orderedTrieRoot(run.receipts.map(encodeReceipt)),
      logsBloom: run.bloom,
      difficulty: ctx.difficulty,
      number: ctx.number,
      gasLimit: ctx.gasLimit,
      gasUsed: run.gasUsed,
      timestamp: ctx.timestamp,
      extraData: new Uint8Array(),
      paidFees: run.paidFees,
      minimumGasPrice: ctx.minimumGasPrice,
      uncleCount: uncles.length,
      ummRoot: new Uint8Array(),
      bitcoinMergedMiningHeader: new Uint8Array(),
      bitcoinMergedMiningMerkleProof: new Uint8Array(),
      bitcoinMergedMiningCoinbaseTransaction: new Uint8Array(),
    };
    return { header, uncles, run };
  }

  /**
   * Runs `txs` on the state after `parent` as the block `ctx`. With `strict`, a transaction that
   * cannot run makes the whole block invalid (imported blocks); otherwise it is left out.
   */
  async execute(
    parent: BlockHeader,
    ctx: BlockContext,
    txs: readonly SignedTransaction[],
    strict: boolean,
    keepHeadState = false,
  ): Promise<Execution> {
    const root = this.#stateRootOf(parent);
    const parentRoot = bytesToHex(root);
    const reuse =
      !keepHeadState && this.#headState?.root === parentRoot ? this.#headState : undefined;
    if (reuse !== undefined) this.#headState = undefined;
    const store =
      reuse?.store ??
      new NodeStore(this.#db, this.#nodes, this.#fork === undefined ? {} : { fork: this.#fork });
    let state = reuse?.state;
    if (state === undefined) {
      try {
        state = await WorldState.open(store, root);
      } catch {
        throw new ChainError(
          ChainErrorCode.STATE_MISSING,
          `state of block ${parent.number} is not available`,
        );
      }
    }
    const included: SignedTransaction[] = [];
    const receipts: Receipt[] = [];
    const rejected: RejectedTransaction[] = [];
    const failed: FailedTransaction[] = [];
    const bloom = new Uint8Array(256);
    let gasUsed = 0n;
    let paidFees = 0n;
    // One checkpoint around the whole block: the state manager writes its account and storage
    // caches into the trie when its last checkpoint closes, which without this is at the end
    // of every transaction. The trie then takes each account once per block, not once per
    // transaction that touches it (the miner's, a busy sender's); the root is the same.
    await state.manager.checkpoint();
    let closed = false;
    try {
      for (const tx of txs) {
        // A full block (a pool of thousands, a block of hundreds) turns most of them away for
        // gas: the executor's own first check, here without making an error nobody may read.
        if (!strict && gasUsed + tx.gasLimit > ctx.gasLimit && tx.gasPrice >= ctx.minimumGasPrice) {
          rejected.push(outOfBlockGas(tx, ctx.gasLimit - gasUsed));
          continue;
        }
        try {
          const outcome = await this.#executor.executeTransaction(state, tx, ctx, gasUsed);
          included.push(tx);
          receipts.push(outcome.receipt);
          if (outcome.status === 0)
            failed.push({ tx, error: outcome.error ?? "failed", returnValue: outcome.returnValue });
          orBloom(bloom, logsBloom(outcome.logs));
          gasUsed = outcome.cumulativeGasUsed;
          paidFees += outcome.fee;
        } catch (err) {
          if (!(err instanceof ExecutionError)) throw err;
          if (strict) {
            throw new ChainError(
              ChainErrorCode.INVALID_BLOCK,
              `transaction ${bytesToHex(tx.hash)} cannot run: ${err.message}`,
            );
          }
          rejected.push({ tx, error: err });
        }
      }
      await state.manager.commit();
      closed = true;
    } finally {
      // A block that failed leaves nothing behind in a state that may be used again.
      if (!closed) await state.manager.revert().catch(() => undefined);
    }
    const stateRoot = await state.commit();
    return {
      store,
      state,
      stateRoot,
      included,
      receipts,
      rejected,
      failed,
      bloom,
      gasUsed,
      paidFees,
    };
  }
}

/** A transaction left out for the block's remaining gas, its error made when first read. */
function outOfBlockGas(tx: SignedTransaction, remaining: bigint): RejectedTransaction {
  let error: ExecutionError | undefined;
  return {
    tx,
    get error() {
      error ??= new ExecutionError(
        ExecutionErrorCode.BLOCK_GAS_LIMIT,
        `transaction gas ${tx.gasLimit} exceeds the block's remaining gas ${remaining}`,
      );
      return error;
    },
  };
}

/**
 * Recent blocks off the canonical chain, by number and hash: the uncles the next blocks may
 * include. Blocks older than the uncle window are forgotten.
 */
export class SideBlocks {
  readonly #byNumber = new Map<bigint, Map<string, StoredBlock>>();

  /** Remembers a block that is not (or no longer) canonical, as a possible uncle. */
  add(stored: StoredBlock, headNumber: bigint): void {
    const number = stored.block.header.number;
    let atHeight = this.#byNumber.get(number);
    if (atHeight === undefined) {
      atHeight = new Map();
      this.#byNumber.set(number, atHeight);
    }
    atHeight.set(bytesToHex(stored.hash), stored);
    const oldest = headNumber - BigInt(UNCLE_GENERATIONS) - 1n;
    for (const n of this.#byNumber.keys()) if (n < oldest) this.#byNumber.delete(n);
  }

  /** Forgets a block that became canonical. */
  delete(stored: StoredBlock): void {
    this.#byNumber.get(stored.block.header.number)?.delete(bytesToHex(stored.hash));
  }

  clear(): void {
    this.#byNumber.clear();
  }

  /**
   * Side blocks a child of `ancestors[0]` may include as uncles: at most ten, from the last six
   * heights, each a child of one of the child's last seven ancestors, not included before.
   */
  candidates(ancestors: readonly StoredBlock[]): BlockHeader[] {
    if (this.#byNumber.size === 0 || ancestors.length === 0) return [];
    const number = ancestors[0]!.block.header.number + 1n;
    const ancestorHashes = new Set<string>(ancestors.map((a) => bytesToHex(a.hash)));
    const used = includedUncles(ancestors);
    const out: BlockHeader[] = [];
    for (let n = number - BigInt(UNCLE_GENERATIONS) + 1n; n < number; n++) {
      for (const [hash, side] of this.#byNumber.get(n) ?? []) {
        if (out.length >= MAX_UNCLES) return out;
        const header = side.block.header;
        if (used.has(hash) || ancestorHashes.has(hash)) continue;
        if (!ancestorHashes.has(bytesToHex(header.parentHash))) continue;
        out.push(header);
      }
    }
    return out;
  }

  get size(): number {
    return this.#byNumber.size;
  }
}

/** The hashes of every uncle the blocks include. */
export function includedUncles(blocks: readonly StoredBlock[]): Set<string> {
  return new Set(blocks.flatMap((a) => a.block.uncles.map((u) => bytesToHex(headerHash(u)))));
}

/** A built block put together: header, included transactions and uncles. */
export function assembled(header: BlockHeader, run: Execution, uncles: BlockHeader[]): Block {
  return { header, transactions: run.included, uncles };
}
