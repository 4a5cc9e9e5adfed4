import { type BlockContext, ExecutionError, type Executor, logsBloom, orBloom } from "@nodex/evm";
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
  headerHash,
  type Logger,
  type NetworkPreset,
  type Receipt,
  rlpDecode,
  rlpEncode,
  type SignedTransaction,
  unclesHash,
} from "@nodex/types";
import { ChainError, ChainErrorCode } from "./errors.js";
import { genesisHeader, writeGenesisState } from "./genesis.js";

const HEAD_KEY = new TextEncoder().encode("head");
/** Decoded blocks kept in memory. */
const BLOCK_CACHE = 256;
/** Decoded receipt lists kept in memory (eth_getLogs reads them block by block). */
const RECEIPTS_CACHE = 1024;
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
  seal(header: BlockHeader): Promise<BlockHeader>;
}

/** Leaves the merged-mining fields empty: blocks of development networks, until proofs exist. */
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
  #head: StoredBlock;
  #queue: Promise<unknown> = Promise.resolve();
  /** The state after the head, kept for building the next block (with its caches and EVM). */
  #headState: { store: NodeStore; state: WorldState; root: string } | undefined;
  /** Recently used blocks by hash: reading a block recovers every sender, which is slow. */
  readonly #blocks = new Map<string, StoredBlock>();
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
  nextBlockContext(parent: BlockHeader, coinbase: Address, timestamp?: bigint): BlockContext {
    const now = timestamp ?? BigInt(Math.floor(Date.now() / 1000));
    return {
      number: parent.number + 1n,
      timestamp: now > parent.timestamp ? now : parent.timestamp + 1n,
      coinbase,
      gasLimit: parent.gasLimit,
      difficulty: parent.difficulty,
      minimumGasPrice: parent.minimumGasPrice,
    };
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

  async #mine(txs: readonly SignedTransaction[], opts: MineOptions): Promise<MinedBlock> {
    const parent = this.#head;
    const parentHeader = parent.block.header;
    const ctx = this.nextBlockContext(parentHeader, opts.coinbase, opts.timestamp);
    const parentRoot = bytesToHex(parentHeader.stateRoot);
    const reuse = this.#headState?.root === parentRoot ? this.#headState : undefined;
    this.#headState = undefined;
    const store = reuse?.store ?? new NodeStore(this.#db, this.#nodes);
    const state = reuse?.state ?? (await WorldState.open(store, parentHeader.stateRoot));
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
        rejected.push({ tx, error: err });
      }
    }
    const stateRoot = await state.commit();
    const header = await this.#sealer.seal({
      parentHash: parent.hash,
      unclesHash: unclesHash([]),
      coinbase: opts.coinbase,
      stateRoot,
      transactionsRoot: await orderedTrieRoot(included.map((tx) => tx.raw)),
      receiptsRoot: await orderedTrieRoot(receipts.map(encodeReceipt)),
      logsBloom: bloom,
      difficulty: ctx.difficulty,
      number: ctx.number,
      gasLimit: ctx.gasLimit,
      gasUsed,
      timestamp: ctx.timestamp,
      extraData: new Uint8Array(),
      paidFees,
      minimumGasPrice: ctx.minimumGasPrice,
      uncleCount: 0,
      ummRoot: new Uint8Array(),
      bitcoinMergedMiningHeader: new Uint8Array(),
      bitcoinMergedMiningMerkleProof: new Uint8Array(),
      bitcoinMergedMiningCoinbaseTransaction: new Uint8Array(),
    });
    const block: Block = { header, transactions: included, uncles: [] };
    const hash = headerHash(header);
    const totalDifficulty = parent.totalDifficulty + header.difficulty;
    await this.#db.write([
      ...store.takeWrites(),
      ...blockWrites(block, hash, totalDifficulty, receipts),
    ]);
    store.confirmWrites();
    const stored = { block, hash, totalDifficulty };
    this.#head = stored;
    this.#headState = { store, state, root: bytesToHex(stateRoot) };
    this.#remember(bytesToHex(hash), stored);
    remember(this.#canonical, header.number, hash, CANONICAL_CACHE);
    remember(this.#receipts, bytesToHex(hash), receipts, RECEIPTS_CACHE);
    this.#log.info("Mined block", {
      number: header.number,
      hash: bytesToHex(hash),
      txs: included.length,
      gasUsed: header.gasUsed,
    });
    const window = this.#stateWindow;
    if (window !== undefined && header.number % BigInt(window) === 0n) {
      // After this block, before the next: no block is written while nodes are swept.
      this.#queue = this.#queue.then(() => this.#prune(window)).catch(() => {});
    }
    return { ...stored, receipts, rejected };
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
  await db.write([...store.takeWrites(), ...blockWrites(block, hash, header.difficulty, [])]);
  store.confirmWrites();
  return { block, hash, totalDifficulty: header.difficulty };
}

/** Everything a canonical block adds to the database, the new head last. */
function blockWrites(
  block: Block,
  hash: Uint8Array,
  totalDifficulty: bigint,
  receipts: readonly Receipt[],
): WriteOp[] {
  const ops: WriteOp[] = [
    { type: "put", bucket: Bucket.HEADER, key: hash, value: encodeHeader(block.header) },
    { type: "put", bucket: Bucket.BODY, key: hash, value: encodeBody(block) },
    { type: "put", bucket: Bucket.RECEIPTS, key: hash, value: encodeReceiptList(receipts) },
    {
      type: "put",
      bucket: Bucket.TOTAL_DIFFICULTY,
      key: hash,
      value: bigintToBytes(totalDifficulty),
    },
    { type: "put", bucket: Bucket.CANONICAL, key: numberKey(block.header.number), value: hash },
  ];
  block.transactions.forEach((tx, i) => {
    ops.push({
      type: "put",
      bucket: Bucket.TX_LOOKUP,
      key: tx.hash,
      value: rlpEncode([hash, bigintToBytes(BigInt(i))]),
    });
  });
  ops.push({ type: "put", bucket: Bucket.META, key: HEAD_KEY, value: hash });
  return ops;
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
