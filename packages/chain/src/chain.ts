import { type BlockContext, ExecutionError, type Executor, logsBloom, orBloom } from "@nodex/evm";
import { cpvHeights, FORK_DETECTION_UNCLE_WINDOW, forkDetectionData } from "@nodex/mergemining";
import {
  Bucket,
  type Database,
  NodeCache,
  NodeStore,
  orderedTrieRoot,
  pruneTrieNodes,
  WorldState,
  type WriteOp,
} from "@nodex/state";
import {
  type Address,
  type Block,
  type BlockHeader,
  bigintToBytes,
  bytesToBigint,
  bytesToHex,
  decodeBody,
  decodeHeader,
  decodeReceiptList,
  encodeBody,
  encodeHeader,
  encodeReceipt,
  encodeReceiptList,
  equalBytes,
  FORK_DETECTION_HEIGHT,
  hashForMergedMiningBase,
  headerHash,
  type Logger,
  type NetworkPreset,
  type Receipt,
  rlpDecode,
  rlpEncode,
  type SignedTransaction,
  unclesHash,
  withForkDetectionData,
} from "@nodex/types";
import { ChainError, ChainErrorCode } from "./errors.js";
import { genesisHeader, writeGenesisState } from "./genesis.js";
import {
  type ConsensusRules,
  checkHeader,
  checkUncles,
  MAX_UNCLES,
  NO_PROOF_OF_WORK,
  UNCLE_GENERATIONS,
} from "./validation.js";

const HEAD_KEY = new TextEncoder().encode("head");
/** Decoded blocks kept in memory. */
const BLOCK_CACHE = 256;
/** Decoded receipt lists kept in memory (eth_getLogs reads them block by block). */
const RECEIPTS_CACHE = 1024;
/** Stands for the Bitcoin header of a block without a proof in fork-detection data. */
const EMPTY_BITCOIN_HEADER = new Uint8Array(80);
/** Headers kept in memory apart from their blocks. */
const HEADER_CACHE = 2048;
/** Canonical number → hash entries kept in memory. */
const CANONICAL_CACHE = 8192;

/** A block of the chain with what the store knows of it. */
export interface StoredBlock {
  readonly block: Block;
  readonly hash: Uint8Array;
  readonly totalDifficulty: bigint;
}

/** Where a transaction is: its block and index. */
export interface TransactionLocation {
  readonly blockHash: Uint8Array;
  readonly index: number;
}

/** A transaction a new block could not include, and why. */
export interface RejectedTransaction {
  readonly tx: SignedTransaction;
  readonly error: ExecutionError;
}

export interface MinedBlock extends StoredBlock {
  readonly receipts: readonly Receipt[];
  readonly rejected: readonly RejectedTransaction[];
}

/** A block's transactions run on its parent's state. */
interface Execution {
  readonly store: NodeStore;
  readonly state: WorldState;
  readonly stateRoot: Uint8Array;
  readonly included: SignedTransaction[];
  readonly receipts: Receipt[];
  readonly rejected: RejectedTransaction[];
  readonly bloom: Uint8Array;
  readonly gasUsed: bigint;
  readonly paidFees: bigint;
}

/** How the canonical chain changes when a block becomes the head. */
interface SwitchPlan {
  /** Numbers that leave the canonical chain (the old chain was longer). */
  readonly removed: bigint[];
  /** Blocks of the old chain that are no longer canonical. */
  readonly removedBlocks: StoredBlock[];
  /** The new branch from the common ancestor's child up to the new head, in order. */
  readonly added: StoredBlock[];
}

/** Work for miners: a block on `parentHash` without its seal, and what could not go in. */
export interface BlockTemplate {
  readonly block: Block;
  readonly parentHash: Uint8Array;
  /** What a miner's proof must commit to, after `RSKBLOCK:` in the Bitcoin coinbase. */
  readonly hashForMergedMining: Uint8Array;
  /** The state after the block's transactions (in memory: the pending state). */
  readonly state: WorldState;
  readonly receipts: readonly Receipt[];
  readonly rejected: readonly RejectedTransaction[];
}

/** What became of a block given to `importBlock`, named as the reference node names it. */
export type ImportResult =
  | {
      readonly result: "IMPORTED_BEST" | "IMPORTED_NOT_BEST" | "EXIST";
      readonly block: StoredBlock;
    }
  | { readonly result: "NO_PARENT" | "INVALID_BLOCK"; readonly reason: string };

export interface MineOptions {
  readonly coinbase: Address;
  /** Seconds; at least the parent's timestamp + 1. Defaults to now. */
  readonly timestamp?: bigint;
}

/**
 * Completes a built block with its proof of work: the merged-mining fields of the header. Block
 * production calls it once per block, after the state and every root are final.
 */
export interface BlockSealer {
  /** `header` with its merged-mining fields filled in: a proof that commits to `hashForMergedMining`. */
  seal(header: BlockHeader, hashForMergedMining: Uint8Array): Promise<BlockHeader>;
}

/** Leaves the merged-mining fields empty (with rules that check no proof of work). */
export const UNSEALED: BlockSealer = { seal: async (header) => header };

export interface ChainDeps {
  readonly db: Database;
  readonly executor: Executor;
  readonly logger: Logger;
  /**
   * How many of the latest blocks keep their state: older state is deleted from the database
   * every `stateWindow` blocks. `undefined` keeps the state of every block (archive).
   */
  readonly stateWindow?: number;
  /** Seals the blocks this chain builds; `UNSEALED` when absent. */
  readonly sealer?: BlockSealer;
  /** Difficulty and seal rules of built and imported blocks; `NO_PROOF_OF_WORK` when absent. */
  readonly rules?: ConsensusRules;
}

/**
 * The block store and canonical chain: writes genesis on first start, builds and imports blocks
 * (state, block data, indexes and head in one atomic batch), answers lookups.
 */
export class Chain {
  readonly network: NetworkPreset;
  readonly #db: Database;
  readonly #executor: Executor;
  readonly #log: Logger;
  readonly #stateWindow: number | undefined;
  readonly #sealer: BlockSealer;
  readonly #rules: ConsensusRules;
  #head: StoredBlock;
  #queue: Promise<unknown> = Promise.resolve();
  /** The state after the head, kept for building the next block (with its caches and EVM). */
  #headState: { store: NodeStore; state: WorldState; root: string } | undefined;
  /** Recently used blocks by hash: reading a block recovers every sender, which is slow. */
  readonly #blocks = new Map<string, StoredBlock>();
  /** Called after each change of the head. */
  readonly #headListeners = new Set<(head: StoredBlock) => void>();
  /** Recent blocks off the canonical chain, by number and hash: uncles for the next blocks. */
  readonly #sideBlocks = new Map<bigint, Map<string, StoredBlock>>();
  /** Headers read alone (for fork-detection data), by hash. */
  readonly #headers = new Map<string, BlockHeader>();
  /** Receipts of recently used blocks by block hash. */
  readonly #receipts = new Map<string, Receipt[]>();
  /**
   * Canonical hashes by number. Entries are set when a block becomes canonical; a change of
   * the canonical chain must replace the entries of the blocks it changes.
   */
  readonly #canonical = new Map<bigint, Uint8Array>();
  /** Trie nodes read from disk, shared by every state this chain opens. */
  readonly #nodes = new NodeCache();

  private constructor(network: NetworkPreset, deps: ChainDeps, head: StoredBlock) {
    this.network = network;
    this.#db = deps.db;
    this.#executor = deps.executor;
    this.#log = deps.logger;
    this.#stateWindow = deps.stateWindow;
    this.#sealer = deps.sealer ?? UNSEALED;
    this.#rules = deps.rules ?? NO_PROOF_OF_WORK;
    if (this.#stateWindow !== undefined && !(this.#stateWindow >= 1))
      throw new RangeError(`state window must be at least 1 block, got ${this.#stateWindow}`);
    this.#head = head;
  }

  /** Opens the chain in `db`, writing genesis when the database is new. */
  static async open(network: NetworkPreset, deps: ChainDeps): Promise<Chain> {
    const headHash = await deps.db.get(Bucket.META, HEAD_KEY);
    if (headHash === undefined) {
      const head = await writeGenesis(network, deps.db);
      deps.logger.info("Wrote genesis", { network: network.name, hash: bytesToHex(head.hash) });
      return new Chain(network, deps, head);
    }
    const chain = new Chain(network, deps, undefined as unknown as StoredBlock);
    const head = await chain.getBlockByHash(headHash);
    if (head === undefined) {
      throw new ChainError(
        ChainErrorCode.CORRUPT,
        `head block ${bytesToHex(headHash)} is missing from the database`,
      );
    }
    chain.#head = head;
    const store = new NodeStore(deps.db);
    try {
      await WorldState.open(store, head.block.header.stateRoot);
    } catch {
      throw new ChainError(
        ChainErrorCode.STATE_MISSING,
        `state of head block ${head.block.header.number} is missing`,
      );
    }
    deps.logger.info("Opened chain", {
      head: head.block.header.number,
      hash: bytesToHex(head.hash),
    });
    return chain;
  }

  get head(): StoredBlock {
    return this.#head;
  }

  /**
   * Calls `listener` after each change of the head (a block built or imported on it, a
   * reorganization, a rewind), with the new head. Returns the function that unsubscribes.
   */
  onNewHead(listener: (head: StoredBlock) => void): () => void {
    this.#headListeners.add(listener);
    return () => this.#headListeners.delete(listener);
  }

  #setHead(head: StoredBlock): void {
    this.#head = head;
    for (const listener of this.#headListeners) {
      try {
        listener(head);
      } catch (err) {
        this.#log.error("A new-head listener failed", { error: (err as Error).message });
      }
    }
  }

  async getBlockByHash(hash: Uint8Array): Promise<StoredBlock | undefined> {
    const key = bytesToHex(hash);
    const cached = this.#blocks.get(key);
    if (cached !== undefined) return cached;
    const stored = await this.#readBlock(hash);
    if (stored !== undefined) this.#remember(key, stored);
    return stored;
  }

  #remember(key: string, stored: StoredBlock): void {
    remember(this.#blocks, key, stored, BLOCK_CACHE);
  }

  async #readBlock(hash: Uint8Array): Promise<StoredBlock | undefined> {
    const [headerBytes, bodyBytes, tdBytes] = await Promise.all([
      this.#db.get(Bucket.HEADER, hash),
      this.#db.get(Bucket.BODY, hash),
      this.#db.get(Bucket.TOTAL_DIFFICULTY, hash),
    ]);
    if (headerBytes === undefined || bodyBytes === undefined || tdBytes === undefined)
      return undefined;
    const header = decodeHeader(headerBytes);
    return {
      block: { header, ...decodeBody(bodyBytes) },
      hash,
      totalDifficulty: bytesToBigint(tdBytes, "total difficulty"),
    };
  }

  async getCanonicalHash(number: bigint): Promise<Uint8Array | undefined> {
    if (number < 0n || number > this.#head.block.header.number) return undefined;
    const cached = this.#canonical.get(number);
    if (cached !== undefined) return cached;
    const hash = await this.#db.get(Bucket.CANONICAL, numberKey(number));
    if (hash !== undefined) remember(this.#canonical, number, hash, CANONICAL_CACHE);
    return hash;
  }

  async getBlockByNumber(number: bigint): Promise<StoredBlock | undefined> {
    const hash = await this.getCanonicalHash(number);
    return hash === undefined ? undefined : this.getBlockByHash(hash);
  }

  /** The receipts of a block, in transaction order. The array is shared: do not change it. */
  async getReceipts(blockHash: Uint8Array): Promise<readonly Receipt[] | undefined> {
    const key = bytesToHex(blockHash);
    const cached = this.#receipts.get(key);
    if (cached !== undefined) return cached;
    const bytes = await this.#db.get(Bucket.RECEIPTS, blockHash);
    if (bytes === undefined) return undefined;
    const receipts = decodeReceiptList(bytes);
    remember(this.#receipts, key, receipts, RECEIPTS_CACHE);
    return receipts;
  }

  async getTransactionLocation(txHash: Uint8Array): Promise<TransactionLocation | undefined> {
    const bytes = await this.#db.get(Bucket.TX_LOOKUP, txHash);
    if (bytes === undefined) return undefined;
    const [blockHash, index] = rlpDecode(bytes, "transaction location") as Uint8Array[];
    return { blockHash: blockHash!, index: Number(bytesToBigint(index!, "transaction index")) };
  }

  /** A block's header alone (cheaper than the block: no transaction is decoded). */
  async getHeaderByHash(hash: Uint8Array): Promise<BlockHeader | undefined> {
    const key = bytesToHex(hash);
    const block = this.#blocks.get(key);
    if (block !== undefined) return block.block.header;
    const cached = this.#headers.get(key);
    if (cached !== undefined) return cached;
    const bytes = await this.#db.get(Bucket.HEADER, hash);
    if (bytes === undefined) return undefined;
    const header = decodeHeader(bytes);
    remember(this.#headers, key, header, HEADER_CACHE);
    return header;
  }

  /**
   * What a proof of work of `header` commits to: keccak256 of the header without merged-mining
   * fields, its last 12 bytes replaced from block 449 by fork-detection data computed from the
   * header's ancestors (their Bitcoin headers at the checkpoint heights, their uncle counts).
   * Throws `ChainError` when an ancestor is missing.
   */
  async hashForMergedMining(header: BlockHeader): Promise<Uint8Array> {
    const base = hashForMergedMiningBase(header);
    if (header.number < FORK_DETECTION_HEIGHT) return base;
    const parent = await this.getHeaderByHash(header.parentHash);
    if (parent === undefined) {
      throw new ChainError(
        ChainErrorCode.CORRUPT,
        `parent of block ${header.number} is not known: no fork-detection data`,
      );
    }
    const ancestors = await this.#ancestorHeaders(header.parentHash, parent, header.number - 32n);
    const uncleCounts = ancestors.slice(0, FORK_DETECTION_UNCLE_WINDOW).map((h) => h.uncleCount);
    const cpvBitcoinHeaders: Uint8Array[] = [];
    for (const height of cpvHeights(header.number)) {
      const at = await this.#ancestorHeaderAt(header.parentHash, parent, height);
      // A block without a proof (one built with rules that check none) counts as a Bitcoin
      // header of zeros, the same on every node.
      const bitcoinHeader = at.bitcoinMergedMiningHeader;
      cpvBitcoinHeaders.push(bitcoinHeader.length === 80 ? bitcoinHeader : EMPTY_BITCOIN_HEADER);
    }
    return withForkDetectionData(
      base,
      forkDetectionData({ cpvBitcoinHeaders, uncleCounts, height: header.number }),
    );
  }

  /** Like `hashForMergedMining`, but empty when an ancestor is missing (then no seal passes). */
  async #hashForMergedMiningOrEmpty(header: BlockHeader): Promise<Uint8Array> {
    try {
      return await this.hashForMergedMining(header);
    } catch (err) {
      if (err instanceof ChainError) return new Uint8Array(32);
      throw err;
    }
  }

  /** Headers from `header` (hash `hash`) back to height `down` (not below 1), newest first. */
  async #ancestorHeaders(
    hash: Uint8Array,
    header: BlockHeader,
    down: bigint,
  ): Promise<BlockHeader[]> {
    const out: BlockHeader[] = [];
    let current: BlockHeader | undefined = header;
    let currentHash = hash;
    while (current !== undefined && current.number >= (down < 1n ? 1n : down)) {
      out.push(current);
      if (current.number === 0n) break;
      currentHash = current.parentHash;
      current = await this.getHeaderByHash(currentHash);
    }
    return out;
  }

  /**
   * The header at `height` on the branch of `header` (hash `hash`): walked back by parent until
   * the branch meets the canonical chain, then read from the canonical index.
   */
  async #ancestorHeaderAt(
    hash: Uint8Array,
    header: BlockHeader,
    height: bigint,
  ): Promise<BlockHeader> {
    let current = header;
    let currentHash = hash;
    for (;;) {
      if (current.number === height) return current;
      const canonical = await this.getCanonicalHash(current.number);
      if (canonical !== undefined && equalBytes(canonical, currentHash)) {
        const at = await this.getCanonicalHash(height);
        const found = at === undefined ? undefined : await this.getHeaderByHash(at);
        if (found !== undefined) return found;
        break;
      }
      const parent = await this.getHeaderByHash(current.parentHash);
      if (parent === undefined) break;
      currentHash = current.parentHash;
      current = parent;
    }
    throw new ChainError(ChainErrorCode.CORRUPT, `no ancestor at height ${height}`);
  }

  /** Blocks that keep their state, counting back from the head; `undefined` for all (archive). */
  get stateWindow(): number | undefined {
    return this.#stateWindow;
  }

  /**
   * Throws `ChainError` (`STATE_MISSING`) when the state after `header` is older than the state
   * window. Callers that keep states open check again before each use.
   */
  assertStateRetained(header: BlockHeader): void {
    const window = this.#stateWindow;
    if (window === undefined || header.number + BigInt(window) > this.#head.block.header.number)
      return;
    throw new ChainError(
      ChainErrorCode.STATE_MISSING,
      `state of block ${header.number} is pruned: this node keeps the state of the last ${window} blocks (archive mode keeps all)`,
    );
  }

  /** The world state after `header`; throws `ChainError` when it is not in the database. */
  async stateAt(header: BlockHeader): Promise<WorldState> {
    this.assertStateRetained(header);
    try {
      return await WorldState.open(new NodeStore(this.#db, this.#nodes), header.stateRoot);
    } catch {
      throw new ChainError(
        ChainErrorCode.STATE_MISSING,
        `state of block ${header.number} is not available`,
      );
    }
  }

  /** The context a transaction or call runs in as part of the block after `parent`. */
  nextBlockContext(
    parent: BlockHeader,
    coinbase: Address,
    timestamp?: bigint,
    uncleCount = 0,
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
    };
  }

  /**
   * Checks a block from outside (a miner's solution, a peer, a chain file) against the consensus
   * rules and by running it on its parent's state, and stores it: it becomes the head, with a
   * reorganization when it is on another branch, when its chain is heavier than the head's.
   * Blocks are imported and built one at a time.
   */
  importBlock(block: Block): Promise<ImportResult> {
    const run = this.#queue.then(() => this.#import(block));
    this.#queue = run.catch(() => {});
    return run;
  }

  async #import(block: Block): Promise<ImportResult> {
    const { header } = block;
    const hash = headerHash(header);
    const known = await this.getBlockByHash(hash);
    if (known !== undefined) return { result: "EXIST", block: known };
    const parent = await this.getBlockByHash(header.parentHash);
    if (parent === undefined)
      return {
        result: "NO_PARENT",
        reason: `parent ${bytesToHex(header.parentHash)} is not known`,
      };
    const invalid = (reason: string): ImportResult => {
      this.#log.warn("Refused block", { number: header.number, hash: bytesToHex(hash), reason });
      return {
        result: "INVALID_BLOCK",
        reason: `block ${header.number} ${bytesToHex(hash)}: ${reason}`,
      };
    };
    const now = BigInt(Math.floor(Date.now() / 1000));
    const hfmm = await this.hashForMergedMining(header);
    const headerWhy = checkHeader(header, parent.block.header, this.#rules, now, hfmm);
    if (headerWhy !== undefined) return invalid(headerWhy);
    const ancestors = await this.#ancestors(parent, UNCLE_GENERATIONS);
    const used = new Set(
      ancestors.flatMap((a) => a.block.uncles.map((u) => bytesToHex(headerHash(u)))),
    );
    const unclesWhy = checkUncles(
      block,
      ancestors.map((a) => ({ hash: a.hash, header: a.block.header })),
      used,
      this.#rules,
      await Promise.all(block.uncles.map((uncle) => this.#hashForMergedMiningOrEmpty(uncle))),
    );
    if (unclesWhy !== undefined) return invalid(unclesWhy);
    const txRoot = await orderedTrieRoot(block.transactions.map((tx) => tx.raw));
    if (!equalBytes(txRoot, header.transactionsRoot))
      return invalid("transactions root does not match the transactions");
    const ctx: BlockContext = {
      number: header.number,
      timestamp: header.timestamp,
      coinbase: header.coinbase as Address,
      gasLimit: header.gasLimit,
      difficulty: header.difficulty,
      minimumGasPrice: header.minimumGasPrice,
    };
    let run: Execution;
    try {
      run = await this.#execute(parent.block.header, ctx, block.transactions, true);
    } catch (err) {
      if (err instanceof ChainError) return invalid(err.message);
      throw err;
    }
    const receiptsRoot = await orderedTrieRoot(run.receipts.map(encodeReceipt));
    const mismatch =
      run.gasUsed !== header.gasUsed
        ? `gas used ${header.gasUsed}, the transactions use ${run.gasUsed}`
        : run.paidFees !== header.paidFees
          ? `paid fees ${header.paidFees}, the transactions pay ${run.paidFees}`
          : !equalBytes(run.stateRoot, header.stateRoot)
            ? "state root does not match the state after the transactions"
            : !equalBytes(receiptsRoot, header.receiptsRoot)
              ? "receipts root does not match the receipts"
              : !equalBytes(run.bloom, header.logsBloom)
                ? "logs bloom does not match the logs"
                : undefined;
    if (mismatch !== undefined) return invalid(mismatch);
    const wasHead = this.#head;
    const stored = await this.#write(block, parent, run);
    const best = this.#head === stored;
    this.#log.info(best ? "Imported block" : "Imported side block", {
      number: header.number,
      hash: bytesToHex(hash),
      txs: block.transactions.length,
      ...(best && !equalBytes(wasHead.hash, header.parentHash)
        ? { reorganizedFrom: bytesToHex(wasHead.hash) }
        : {}),
    });
    return { result: best ? "IMPORTED_BEST" : "IMPORTED_NOT_BEST", block: stored };
  }

  /** Up to `count` ancestors of a block, starting with `parent`. */
  async #ancestors(parent: StoredBlock, count: number): Promise<StoredBlock[]> {
    const out: StoredBlock[] = [parent];
    while (out.length < count) {
      const last = out[out.length - 1]!;
      if (last.block.header.number === 0n) break;
      const next = await this.getBlockByHash(last.block.header.parentHash);
      if (next === undefined) break;
      out.push(next);
    }
    return out;
  }

  /**
   * Builds a block on the head with as many of `txs` as can run, in order, and makes it the new
   * head. Blocks are built one at a time.
   */
  mine(txs: readonly SignedTransaction[], opts: MineOptions): Promise<MinedBlock> {
    const run = this.#queue.then(() => this.#mine(txs, opts));
    this.#queue = run.catch(() => {});
    return run;
  }

  /**
   * Makes canonical block `number` the head again and deletes the blocks above it, with their
   * indexes, in one batch: what a development network's `evm_revert` and `evm_reset` do. Throws
   * `ChainError` when there is no such block or its state is no longer kept.
   */
  rewindTo(number: bigint): Promise<StoredBlock> {
    const run = this.#queue.then(() => this.#rewindTo(number));
    this.#queue = run.catch(() => {});
    return run;
  }

  async #rewindTo(number: bigint): Promise<StoredBlock> {
    const target = await this.getBlockByNumber(number);
    if (target === undefined)
      throw new ChainError(ChainErrorCode.NOT_FOUND, `no block ${number} on the chain`);
    await this.stateAt(target.block.header);
    const head = this.#head.block.header.number;
    const removed: StoredBlock[] = [];
    for (let n = number + 1n; n <= head; n++) {
      const block = await this.getBlockByNumber(n);
      if (block !== undefined) removed.push(block);
    }
    const ops: WriteOp[] = [];
    for (const block of removed) {
      ops.push({
        type: "del",
        bucket: Bucket.CANONICAL,
        key: numberKey(block.block.header.number),
      });
      for (const tx of block.block.transactions)
        ops.push({ type: "del", bucket: Bucket.TX_LOOKUP, key: tx.hash });
      for (const bucket of [Bucket.HEADER, Bucket.BODY, Bucket.RECEIPTS, Bucket.TOTAL_DIFFICULTY])
        ops.push({ type: "del", bucket, key: block.hash });
    }
    ops.push({ type: "put", bucket: Bucket.META, key: HEAD_KEY, value: target.hash });
    await this.#db.write(ops);
    for (const block of removed) {
      const key = bytesToHex(block.hash);
      this.#canonical.delete(block.block.header.number);
      this.#blocks.delete(key);
      this.#receipts.delete(key);
      this.#headers.delete(key);
    }
    this.#sideBlocks.clear();
    this.#headState = undefined;
    this.#setHead(target);
    this.#log.info("Rewound the chain", { head: number, removedBlocks: removed.length });
    return target;
  }

  /**
   * A block on the head with as many of `txs` as can run, complete but for its seal (the
   * merged-mining fields are empty): work for miners. Nothing is written; the head's state is
   * left as it is.
   */
  buildTemplate(txs: readonly SignedTransaction[], opts: MineOptions): Promise<BlockTemplate> {
    const run = this.#queue.then(async () => {
      const parent = this.#head;
      const built = await this.#build(parent, txs, opts, true);
      return {
        block: { header: built.header, transactions: built.run.included, uncles: built.uncles },
        parentHash: parent.hash,
        hashForMergedMining: await this.hashForMergedMining(built.header),
        rejected: built.run.rejected,
        state: built.run.state,
        receipts: built.run.receipts,
      };
    });
    this.#queue = run.catch(() => {});
    return run;
  }

  /** Runs `txs` on `parent` and assembles the unsealed header of the block. */
  async #build(
    parent: StoredBlock,
    txs: readonly SignedTransaction[],
    opts: MineOptions,
    keepHeadState: boolean,
  ): Promise<{ header: BlockHeader; uncles: BlockHeader[]; run: Execution }> {
    const parentHeader = parent.block.header;
    const uncles = await this.#uncleCandidates(parent);
    const ctx = this.nextBlockContext(parentHeader, opts.coinbase, opts.timestamp, uncles.length);
    const run = await this.#execute(parentHeader, ctx, txs, false, keepHeadState);
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
   * Side blocks a child of `parent` may include as uncles: at most ten, from the last six
   * heights, each a child of one of the child's last seven ancestors, not included before.
   */
  async #uncleCandidates(parent: StoredBlock): Promise<BlockHeader[]> {
    if (this.#sideBlocks.size === 0) return [];
    const number = parent.block.header.number + 1n;
    const ancestors = await this.#ancestors(parent, UNCLE_GENERATIONS);
    const ancestorHashes = new Set<string>(ancestors.map((a) => bytesToHex(a.hash)));
    const used = new Set<string>(
      ancestors.flatMap((a) => a.block.uncles.map((u) => bytesToHex(headerHash(u)))),
    );
    const out: BlockHeader[] = [];
    for (let n = number - BigInt(UNCLE_GENERATIONS) + 1n; n < number; n++) {
      for (const [hash, side] of this.#sideBlocks.get(n) ?? []) {
        if (out.length >= MAX_UNCLES) return out;
        const header = side.block.header;
        if (used.has(hash) || ancestorHashes.has(hash)) continue;
        if (!ancestorHashes.has(bytesToHex(header.parentHash))) continue;
        out.push(header);
      }
    }
    return out;
  }

  /** Remembers a block that is not (or no longer) canonical, as a possible uncle. */
  #rememberSide(stored: StoredBlock): void {
    const number = stored.block.header.number;
    let atHeight = this.#sideBlocks.get(number);
    if (atHeight === undefined) {
      atHeight = new Map();
      this.#sideBlocks.set(number, atHeight);
    }
    atHeight.set(bytesToHex(stored.hash), stored);
    const oldest = this.#head.block.header.number - BigInt(UNCLE_GENERATIONS) - 1n;
    for (const n of this.#sideBlocks.keys()) if (n < oldest) this.#sideBlocks.delete(n);
  }

  async #mine(txs: readonly SignedTransaction[], opts: MineOptions): Promise<MinedBlock> {
    const parent = this.#head;
    const { header: unsealed, uncles, run } = await this.#build(parent, txs, opts, false);
    const hfmm = await this.hashForMergedMining(unsealed);
    const header = await this.#sealer.seal(unsealed, hfmm);
    const seal = this.#rules.checkSeal(header, hfmm);
    if (seal !== undefined) {
      throw new ChainError(
        ChainErrorCode.INVALID_BLOCK,
        `the sealer made an invalid merged-mining proof: ${seal}`,
      );
    }
    const block: Block = { header, transactions: run.included, uncles };
    const stored = await this.#write(block, parent, run);
    this.#log.info("Mined block", {
      number: header.number,
      hash: bytesToHex(stored.hash),
      txs: run.included.length,
      gasUsed: header.gasUsed,
    });
    return { ...stored, receipts: run.receipts, rejected: run.rejected };
  }

  /**
   * Runs `txs` on the state after `parent` as the block `ctx`. With `strict`, a transaction that
   * cannot run makes the whole block invalid (imported blocks); otherwise it is left out.
   */
  async #execute(
    parent: BlockHeader,
    ctx: BlockContext,
    txs: readonly SignedTransaction[],
    strict: boolean,
    keepHeadState = false,
  ): Promise<Execution> {
    const parentRoot = bytesToHex(parent.stateRoot);
    const reuse =
      !keepHeadState && this.#headState?.root === parentRoot ? this.#headState : undefined;
    if (reuse !== undefined) this.#headState = undefined;
    const store = reuse?.store ?? new NodeStore(this.#db, this.#nodes);
    let state = reuse?.state;
    if (state === undefined) {
      try {
        state = await WorldState.open(store, parent.stateRoot);
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
    const bloom = new Uint8Array(256);
    let gasUsed = 0n;
    let paidFees = 0n;
    for (const tx of txs) {
      try {
        const outcome = await this.#executor.executeTransaction(state, tx, ctx, gasUsed);
        included.push(tx);
        receipts.push(outcome.receipt);
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
    const stateRoot = await state.commit();
    return { store, state, stateRoot, included, receipts, rejected, bloom, gasUsed, paidFees };
  }

  /**
   * Writes `block`, executed as `run`, on `parent` in one batch. It becomes the head when its
   * total difficulty is higher than the head's: the canonical index and the transaction index
   * switch over from the common ancestor in the same batch.
   */
  async #write(block: Block, parent: StoredBlock, run: Execution): Promise<StoredBlock> {
    const { header } = block;
    const hash = headerHash(header);
    const totalDifficulty = parent.totalDifficulty + cumulativeDifficulty(block);
    const stored: StoredBlock = { block, hash, totalDifficulty };
    const becomesHead = totalDifficulty > this.#head.totalDifficulty;
    const ops: WriteOp[] = [
      ...run.store.takeWrites([run.stateRoot]),
      ...blockData(block, hash, totalDifficulty, run.receipts),
    ];
    let canonical: SwitchPlan | undefined;
    if (becomesHead) {
      canonical = await this.#switchPlan(stored);
      for (const n of canonical.removed)
        ops.push({ type: "del", bucket: Bucket.CANONICAL, key: numberKey(n) });
      for (const old of canonical.removedBlocks) {
        for (const tx of old.block.transactions)
          ops.push({ type: "del", bucket: Bucket.TX_LOOKUP, key: tx.hash });
      }
      for (const added of canonical.added) ops.push(...canonicalWrites(added));
      ops.push({ type: "put", bucket: Bucket.META, key: HEAD_KEY, value: hash });
    }
    await this.#db.write(ops);
    run.store.confirmWrites();
    this.#remember(bytesToHex(hash), stored);
    remember(this.#receipts, bytesToHex(hash), run.receipts, RECEIPTS_CACHE);
    if (canonical === undefined) this.#rememberSide(stored);
    if (canonical !== undefined) {
      for (const old of canonical.removedBlocks) this.#rememberSide(old);
      for (const added of canonical.added)
        this.#sideBlocks.get(added.block.header.number)?.delete(bytesToHex(added.hash));
      for (const n of canonical.removed) this.#canonical.delete(n);
      for (const added of canonical.added)
        remember(this.#canonical, added.block.header.number, added.hash, CANONICAL_CACHE);
      this.#headState = { store: run.store, state: run.state, root: bytesToHex(run.stateRoot) };
      this.#setHead(stored);
      const window = this.#stateWindow;
      if (window !== undefined && header.number % BigInt(window) === 0n) {
        // After this block, before the next: no block is written while nodes are swept.
        this.#queue = this.#queue.then(() => this.#prune(window)).catch(() => {});
      }
    }
    return stored;
  }

  /**
   * What changes in the canonical chain when `tip` becomes the head: the blocks from the common
   * ancestor up to `tip` join it (in order); numbers above `tip` that the old chain had leave it,
   * with the blocks they held, and so do the old blocks the new branch replaces.
   */
  async #switchPlan(tip: StoredBlock): Promise<SwitchPlan> {
    const added: StoredBlock[] = [tip];
    let cursor = tip;
    for (;;) {
      const n = cursor.block.header.number - 1n;
      if (n < 0n) break;
      const parent = await this.getBlockByHash(cursor.block.header.parentHash);
      if (parent === undefined)
        throw new ChainError(ChainErrorCode.CORRUPT, `missing ancestor at ${n}`);
      const canonicalHash = await this.getCanonicalHash(n);
      if (canonicalHash !== undefined && equalBytes(canonicalHash, parent.hash)) break;
      added.unshift(parent);
      cursor = parent;
    }
    const removedBlocks: StoredBlock[] = [];
    const removed: bigint[] = [];
    const fork = added[0]!.block.header.number;
    const oldHead = this.#head.block.header.number;
    for (let n = fork; n <= oldHead; n++) {
      const old = await this.getBlockByNumber(n);
      const replacement = added[Number(n - fork)];
      if (
        old !== undefined &&
        (replacement === undefined || !equalBytes(old.hash, replacement.hash))
      )
        removedBlocks.push(old);
      if (n > tip.block.header.number) removed.push(n);
    }
    return { removed, removedBlocks, added };
  }

  /** Deletes the state of blocks older than the window. */
  async #prune(window: number): Promise<void> {
    const head = this.#head.block.header.number;
    const first = head - BigInt(window) + 1n;
    const roots: Uint8Array[] = [];
    for (let n = first < 0n ? 0n : first; n <= head; n++) {
      const block = await this.getBlockByNumber(n);
      if (block !== undefined) roots.push(block.block.header.stateRoot);
    }
    const started = performance.now();
    try {
      const { live, deleted } = await pruneTrieNodes(this.#db, roots, this.#nodes);
      this.#log.info("Pruned old state", {
        keptFrom: first < 0n ? 0n : first,
        head,
        liveNodes: live,
        deletedNodes: deleted,
        ms: Math.round(performance.now() - started),
      });
    } catch (err) {
      this.#log.error("Pruning old state failed; it is tried again later", {
        error: (err as Error).message,
      });
    }
  }
}

async function writeGenesis(network: NetworkPreset, db: Database): Promise<StoredBlock> {
  const store = new NodeStore(db);
  const state = await WorldState.open(store);
  await writeGenesisState(state, network);
  const header = genesisHeader(network, await state.commit());
  const block: Block = { header, transactions: [], uncles: [] };
  const hash = headerHash(header);
  const stored = { block, hash, totalDifficulty: header.difficulty };
  await db.write([
    ...store.takeWrites([header.stateRoot]),
    ...blockData(block, hash, header.difficulty, []),
    ...canonicalWrites(stored),
    { type: "put", bucket: Bucket.META, key: HEAD_KEY, value: hash },
  ]);
  store.confirmWrites();
  return stored;
}

/** A block's own data, stored whether or not it is canonical. */
function blockData(
  block: Block,
  hash: Uint8Array,
  totalDifficulty: bigint,
  receipts: readonly Receipt[],
): WriteOp[] {
  return [
    { type: "put", bucket: Bucket.HEADER, key: hash, value: encodeHeader(block.header) },
    { type: "put", bucket: Bucket.BODY, key: hash, value: encodeBody(block) },
    { type: "put", bucket: Bucket.RECEIPTS, key: hash, value: encodeReceiptList(receipts) },
    {
      type: "put",
      bucket: Bucket.TOTAL_DIFFICULTY,
      key: hash,
      value: bigintToBytes(totalDifficulty),
    },
  ];
}

/** The indexes of a canonical block: its number and the location of each transaction. */
function canonicalWrites(stored: StoredBlock): WriteOp[] {
  const ops: WriteOp[] = [
    {
      type: "put",
      bucket: Bucket.CANONICAL,
      key: numberKey(stored.block.header.number),
      value: stored.hash,
    },
  ];
  stored.block.transactions.forEach((tx, i) => {
    ops.push({
      type: "put",
      bucket: Bucket.TX_LOOKUP,
      key: tx.hash,
      value: rlpEncode([stored.hash, bigintToBytes(BigInt(i))]),
    });
  });
  return ops;
}

/** A block's difficulty plus its uncles': what it adds to the total difficulty of its chain. */
export function cumulativeDifficulty(block: Block): bigint {
  return block.uncles.reduce((sum, uncle) => sum + uncle.difficulty, block.header.difficulty);
}

/** Puts `value` in `cache`, first dropping the oldest entry when it holds `max`. */
function remember<K, V>(cache: Map<K, V>, key: K, value: V, max: number): void {
  if (cache.size >= max && !cache.has(key)) cache.delete(cache.keys().next().value as K);
  cache.set(key, value);
}

function numberKey(number: bigint): Uint8Array {
  const key = new Uint8Array(8);
  new DataView(key.buffer).setBigUint64(0, number);
  return key;
}
