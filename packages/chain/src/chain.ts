import type { BlockContext, Executor } from "@nodex/evm";
import {
  AccountReader,
  Bucket,
  type Database,
  dumpState,
  type ForkSource,
  NodeCache,
  NodeStore,
  orderedTrieRoot,
  pruneTrieNodes,
  readStateItems,
  StateError,
  StateErrorCode,
  type StateFile,
  type StateItemRef,
  StateSync,
  type StorageHealth,
  stateDumpWrites,
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
  encodeHeader,
  encodeReceipt,
  equalBytes,
  headerHash,
  hexToBytes,
  type Logger,
  type NetworkPreset,
  type Receipt,
  type SignedTransaction,
} from "@nodex/types";
import { AncestryMemo, hashForMergedMining, hashForMergedMiningOrEmpty } from "./ancestry.js";
import {
  BlockStore,
  blockDeletes,
  blockWrites,
  type ChainCacheSizes,
  canonicalDeletes,
  canonicalWrites,
  cumulativeDifficulty,
  numberKey,
  type StoredBlock,
  type TransactionLocation,
} from "./blockStore.js";
import { ChainError, ChainErrorCode } from "./errors.js";
import { type HeadChange, isHeavier, type SwitchPlan, switchPlan } from "./forkChoice.js";
import { genesisHeader, writeGenesisState } from "./genesis.js";
import type { LogIndexReader } from "./logIndex.js";
import {
  assembled,
  BlockProduction,
  type Execution,
  type FailedTransaction,
  includedUncles,
  type MineOptions,
  type RejectedTransaction,
  SideBlocks,
} from "./production.js";
import {
  decodePivot,
  encodePivot,
  HEADER_TIP_KEY,
  pivotBodyMismatch,
  SNAP_PIVOT_KEY,
  SNAPSHOT_KEY,
  transactionsMismatch,
  unclesMismatch,
} from "./snapshot.js";
import {
  type ConsensusRules,
  checkHeader,
  checkUncles,
  NO_PROOF_OF_WORK,
  UNCLE_GENERATIONS,
} from "./validation.js";

const HEAD_KEY = new TextEncoder().encode("head");
/**
 * The hash of the chain's first block when it is an anchor (see `ChainAnchor`); absent for a
 * chain that starts at its network's genesis.
 */
const FIRST_BLOCK_KEY = new TextEncoder().encode("firstBlock");
/** Fork-detection data holds heights up to 2^32 − 1: the last block a chain can make. */
const MAX_ANCHOR_NUMBER = 0xfffffffen;
/** The development networks' edits of state (see `Chain.editHeadState`): 64-byte pairs of roots. */
const STATE_EDITS_KEY = new TextEncoder().encode("stateEdits");

/**
 * Edits of a block's state made after the block (a development network's `hardhat_setBalance`
 * and the like): the state root each edited state replaces, in hex, to the root it has now.
 */
export type StateEdits = ReadonlyMap<string, Uint8Array>;

function encodeStateEdits(edits: StateEdits): Uint8Array {
  const out = new Uint8Array(edits.size * 64);
  let at = 0;
  for (const [from, to] of edits) {
    out.set(hexToBytes(from), at);
    out.set(to, at + 32);
    at += 64;
  }
  return out;
}

/** The write that records `edits`. */
function stateEditsWrite(edits: StateEdits): WriteOp {
  return { type: "put", bucket: Bucket.META, key: STATE_EDITS_KEY, value: encodeStateEdits(edits) };
}

/** `edits` with the state after `header` now at `root` (no edit when it is its own root). */
function withEdit(edits: StateEdits, header: BlockHeader, root: Uint8Array): StateEdits {
  const next = new Map(edits);
  if (equalBytes(root, header.stateRoot)) next.delete(bytesToHex(header.stateRoot));
  else next.set(bytesToHex(header.stateRoot), root);
  return next;
}

function decodeStateEdits(bytes: Uint8Array | undefined): Map<string, Uint8Array> {
  const edits = new Map<string, Uint8Array>();
  if (bytes === undefined) return edits;
  if (bytes.length % 64 !== 0)
    throw new ChainError(ChainErrorCode.CORRUPT, "the record of state edits is damaged");
  for (let at = 0; at < bytes.length; at += 64)
    edits.set(bytesToHex(bytes.subarray(at, at + 32)), bytes.slice(at + 32, at + 64));
  return edits;
}

/** What a block being mined took in, known once it is built (see `Chain.mine`). */
export interface BuiltBlock {
  readonly included: readonly SignedTransaction[];
  readonly rejected: readonly RejectedTransaction[];
  /** Those of `included` that failed (status 0), with the EVM's error and return data. */
  readonly failed: readonly FailedTransaction[];
}

export interface MinedBlock extends StoredBlock, BuiltBlock {
  readonly receipts: readonly Receipt[];
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

/**
 * Block N of another chain (an upstream network) that a new chain starts on instead of its
 * network's genesis (a fork of that network for development). The header is kept as given: for
 * a Nodex upstream it is the upstream's real header, so that its hash is the upstream's; for
 * other EVM nodes the caller synthesizes one (its number, parent hash, state root, timestamp,
 * gas limit, difficulty and minimum gas price are what the next blocks follow). The anchor is
 * stored without transactions, uncles or receipts, and nothing of its state is written or read
 * when it is: its state root's nodes come later, from whoever provides the upstream's state.
 */
export interface ChainAnchor {
  readonly header: BlockHeader;
  /** The total difficulty of the chain up to the anchor; the anchor's difficulty when absent. */
  readonly totalDifficulty?: bigint;
}

/**
 * The first full block of a chain: its network's genesis (number 0), its anchor, or the pivot
 * of the snapshot it was installed from.
 */
export interface FirstBlock {
  readonly number: bigint;
  readonly hash: Uint8Array;
  /** Whether the chain starts at an anchor (`ChainAnchor`) rather than at genesis. */
  readonly anchored: boolean;
  /**
   * Whether the chain was installed from a snapshot (`installSnapshot`): its network's genesis
   * chain, whose headers are held and checked back to genesis, with bodies, receipts and state
   * from the first block on.
   */
  readonly snapshot: boolean;
  /**
   * The lowest block whose header the chain holds: the first block, or genesis (0) for a chain
   * installed from a snapshot. Headers from here are canonical (`getCanonicalHash`), and the
   * merged-mining ancestry and `BLOCKHASH` read them.
   */
  readonly headersFrom: bigint;
}

/** A header of a header chain, with its uncles when it has any (they count in the difficulty). */
export interface ChainHeader {
  readonly header: BlockHeader;
  readonly uncles?: readonly BlockHeader[];
}

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
  /** Entries of the block store's caches; `DEFAULT_CHAIN_CACHE_SIZES` for those not given. */
  readonly caches?: Partial<ChainCacheSizes>;
  /** Trie nodes kept in memory, shared by every state the chain opens (50,000 by default). */
  readonly trieNodeCache?: number;
  /**
   * Where a new database's chain starts instead of genesis (see `ChainAnchor`). A database
   * that holds a chain opens only with the anchor it was made with (none for a genesis chain).
   */
  readonly anchor?: ChainAnchor;
  /**
   * On a forked chain (an anchored one whose state is the upstream's): the source that fills in
   * the upstream's trie nodes and code as states are read (`ForkSource` of `@nodex/state`).
   */
  readonly fork?: ForkSource;
}

/**
 * The canonical chain and its single writer: writes genesis on first start, builds and imports
 * blocks one at a time through one write queue (state, block data, indexes and head in one
 * atomic batch), chooses the head by total difficulty, and announces every change of the head
 * as one `HeadChange`. Reads go to the block store.
 */
export class Chain {
  readonly network: NetworkPreset;
  readonly #db: Database;
  readonly #log: Logger;
  readonly #stateWindow: number | undefined;
  readonly #sealer: BlockSealer;
  readonly #rules: ConsensusRules;
  readonly #store: BlockStore;
  readonly #production: BlockProduction;
  /** Recent blocks off the canonical chain: uncles for the next blocks. */
  readonly #sideBlocks = new SideBlocks();
  /** Fork-detection data already worked out (see `hashForMergedMining`). */
  readonly #ancestry = new AncestryMemo();
  /** Trie nodes read from disk, shared by every state this chain opens. */
  readonly #nodes: NodeCache;
  readonly #fork: ForkSource | undefined;
  /** Told of each change of the head. */
  readonly #headListeners = new Set<(change: HeadChange) => void>();
  #head: StoredBlock;
  #queue: Promise<unknown> = Promise.resolve();
  /** Opened with `openReadOnly`: nothing is ever written. */
  readonly #readOnly: boolean;
  /** See `writing()`. */
  #writing: Promise<void> | undefined;
  /** See `stateEdits()`. */
  #stateEdits: StateEdits = new Map();
  /** See `firstBlock`. */
  #first: FirstBlock = {
    number: 0n,
    hash: new Uint8Array(32),
    anchored: false,
    snapshot: false,
    headersFrom: 0n,
  };

  private constructor(
    network: NetworkPreset,
    deps: ChainDeps,
    head: StoredBlock,
    readOnly = false,
  ) {
    this.network = network;
    this.#readOnly = readOnly;
    this.#db = deps.db;
    this.#log = deps.logger;
    this.#stateWindow = deps.stateWindow;
    this.#sealer = deps.sealer ?? UNSEALED;
    this.#rules = deps.rules ?? NO_PROOF_OF_WORK;
    if (this.#stateWindow !== undefined && !(this.#stateWindow >= 1))
      throw new RangeError(`state window must be at least 1 block, got ${this.#stateWindow}`);
    this.#store = new BlockStore(deps.db, deps.caches);
    this.#nodes = new NodeCache(deps.trieNodeCache);
    this.#fork = deps.fork;
    this.#production = new BlockProduction(
      deps.db,
      this.#nodes,
      deps.executor,
      this.#rules,
      (h) => this.stateRootOf(h),
      deps.fork,
    );
    this.#head = head;
  }

  /**
   * Opens the chain in `db`, writing genesis (or `deps.anchor`) when the database is new.
   * Throws `ChainError` `OTHER_CHAIN` when the database holds a chain that starts elsewhere
   * (another anchor, or genesis where an anchor is given, or the reverse).
   */
  static async open(network: NetworkPreset, deps: ChainDeps): Promise<Chain> {
    const anchor = deps.anchor === undefined ? undefined : checkAnchor(deps.anchor);
    const headHash = await deps.db.get(Bucket.META, HEAD_KEY);
    if (headHash === undefined) {
      const head =
        anchor === undefined
          ? await writeGenesis(network, deps.db)
          : await writeAnchor(anchor, deps.db);
      const chain = new Chain(network, deps, head);
      chain.#first = {
        number: head.block.header.number,
        hash: head.hash,
        anchored: anchor !== undefined,
        snapshot: false,
        headersFrom: head.block.header.number,
      };
      deps.logger.info(anchor === undefined ? "Wrote genesis" : "Wrote the anchor block", {
        network: network.name,
        number: head.block.header.number,
        hash: bytesToHex(head.hash),
      });
      return chain;
    }
    const chain = new Chain(network, deps, undefined as unknown as StoredBlock);
    await chain.#readFirstBlock();
    checkSameStart(chain.#first, anchor);
    const head = await chain.#store.getBlockByHash(headHash);
    if (head === undefined) {
      throw new ChainError(
        ChainErrorCode.CORRUPT,
        `head block ${bytesToHex(headHash)} is missing from the database`,
      );
    }
    chain.#head = head;
    chain.#stateEdits = decodeStateEdits(await deps.db.get(Bucket.META, STATE_EDITS_KEY));
    // The anchor's state comes from its upstream, node by node: none of it need be here.
    if (!chain.#isAnchor(head.block.header)) {
      try {
        await WorldState.open(
          new NodeStore(deps.db, undefined, deps.fork === undefined ? {} : { fork: deps.fork }),
          chain.stateRootOf(head.block.header),
        );
      } catch {
        throw new ChainError(
          ChainErrorCode.STATE_MISSING,
          `state of head block ${head.block.header.number} is missing`,
        );
      }
    }
    deps.logger.info("Opened chain", {
      head: head.block.header.number,
      hash: bytesToHex(head.hash),
      ...(chain.#first.anchored ? { anchor: chain.#first.number } : {}),
      ...(chain.#first.snapshot ? { snapshotFrom: chain.#first.number } : {}),
    });
    return chain;
  }

  /** Reads which block the chain in the database starts at. */
  async #readFirstBlock(): Promise<void> {
    const pivotHash = await this.#db.get(Bucket.META, SNAPSHOT_KEY);
    if (pivotHash !== undefined) {
      const header = await this.#store.getHeaderByHash(pivotHash);
      if (header === undefined) {
        throw new ChainError(
          ChainErrorCode.CORRUPT,
          `the chain's first block ${bytesToHex(pivotHash)} (its snapshot) is missing from the database`,
        );
      }
      this.#first = {
        number: header.number,
        hash: pivotHash,
        anchored: false,
        snapshot: true,
        headersFrom: 0n,
      };
      return;
    }
    const anchorHash = await this.#db.get(Bucket.META, FIRST_BLOCK_KEY);
    if (anchorHash === undefined) {
      this.#first = {
        number: 0n,
        hash: (await this.#store.getCanonicalHash(0n)) ?? new Uint8Array(32),
        anchored: false,
        snapshot: false,
        headersFrom: 0n,
      };
      return;
    }
    const header = await this.#store.getHeaderByHash(anchorHash);
    if (header === undefined) {
      throw new ChainError(
        ChainErrorCode.CORRUPT,
        `the chain's first block ${bytesToHex(anchorHash)} is missing from the database`,
      );
    }
    this.#first = {
      number: header.number,
      hash: anchorHash,
      anchored: true,
      snapshot: false,
      headersFrom: header.number,
    };
  }

  /**
   * Opens, for reads only, the chain a `Chain` of another thread of this process writes in the
   * same database (the worker threads that serve heavy requests): nothing is written, genesis
   * included, and the head is the block the writer names with `follow`. Throws `CORRUPT` when
   * the database holds no chain.
   */
  static async openReadOnly(network: NetworkPreset, deps: ChainDeps): Promise<Chain> {
    const headHash = await deps.db.get(Bucket.META, HEAD_KEY);
    const chain = new Chain(network, deps, undefined as unknown as StoredBlock, true);
    const head = headHash === undefined ? undefined : await chain.#store.getBlockByHash(headHash);
    if (head === undefined) {
      throw new ChainError(ChainErrorCode.CORRUPT, "the database holds no chain to read");
    }
    await chain.#readFirstBlock();
    chain.#head = head;
    chain.#stateEdits = decodeStateEdits(await deps.db.get(Bucket.META, STATE_EDITS_KEY));
    return chain;
  }

  /**
   * For a chain opened with `openReadOnly`: the writer's head is now block `hash` (written and
   * landed), and the canonical blocks at the numbers `changed` left the canonical chain or were
   * replaced since the last call (a reorganization, a rewind): what is kept of them in memory
   * is forgotten.
   */
  async follow(hash: Uint8Array, changed: readonly bigint[] = []): Promise<void> {
    if (!this.#readOnly) throw new Error("follow() is for a chain opened with openReadOnly");
    for (const number of changed) this.#store.forgetCanonical(number);
    // The writer may have edited a state without moving the head (development networks only).
    if (this.network.devAccounts)
      this.#stateEdits = decodeStateEdits(await this.#db.get(Bucket.META, STATE_EDITS_KEY));
    if (equalBytes(hash, this.#head.hash)) return;
    const head = await this.#store.getBlockByHash(hash);
    if (head === undefined) {
      throw new ChainError(
        ChainErrorCode.CORRUPT,
        `head block ${bytesToHex(hash)} is missing from the database`,
      );
    }
    // A genesis chain whose head jumped may have been installed from a snapshot.
    if (!this.#first.snapshot && !equalBytes(head.block.header.parentHash, this.#head.hash))
      await this.#readFirstBlock();
    this.#head = head;
  }

  get head(): StoredBlock {
    return this.#head;
  }

  /**
   * The block the chain starts at: genesis, or the anchor it was made on. Blocks numbered
   * below it are not this chain's (an anchored chain's are its upstream's): nothing reads,
   * rewinds or reorganizes below it.
   */
  get firstBlock(): FirstBlock {
    return this.#first;
  }

  /** Whether `header` is the anchor of an anchored chain (whose state need not be here). */
  #isAnchor(header: BlockHeader): boolean {
    return this.#first.anchored && header.number === this.#first.number;
  }

  /**
   * Calls `listener` after each change of the head (a block built or imported on it, a
   * reorganization, a rewind) with the blocks that left the canonical chain and those that
   * joined it. Listeners run synchronously, in the order they subscribed, after the change is
   * on disk. Returns the function that unsubscribes.
   */
  onHeadChange(listener: (change: HeadChange) => void): () => void {
    this.#headListeners.add(listener);
    return () => this.#headListeners.delete(listener);
  }

  #setHead(
    head: StoredBlock,
    removed: readonly StoredBlock[],
    added: readonly StoredBlock[],
    deletedReceipts?: ReadonlyMap<string, readonly Receipt[]>,
  ): void {
    this.#head = head;
    const change: HeadChange = {
      head,
      removed,
      added,
      receipts: async (block) =>
        deletedReceipts?.get(bytesToHex(block.hash)) ?? this.#store.getReceipts(block.hash),
    };
    for (const listener of this.#headListeners) {
      try {
        listener(change);
      } catch (err) {
        this.#log.error("A head-change listener failed", { error: (err as Error).message });
      }
    }
  }

  // Reads: the block store, bounded by the head where the canonical chain is concerned.

  getBlockByHash(hash: Uint8Array): Promise<StoredBlock | undefined> {
    return this.#store.getBlockByHash(hash);
  }

  async getCanonicalHash(number: bigint): Promise<Uint8Array | undefined> {
    if (number < this.#first.headersFrom || number > this.#head.block.header.number)
      return undefined;
    return this.#store.getCanonicalHash(number);
  }

  async getBlockByNumber(number: bigint): Promise<StoredBlock | undefined> {
    const hash = await this.getCanonicalHash(number);
    return hash === undefined ? undefined : this.#store.getBlockByHash(hash);
  }

  /** The receipts of a block, in transaction order. The array is shared: do not change it. */
  getReceipts(blockHash: Uint8Array): Promise<readonly Receipt[] | undefined> {
    return this.#store.getReceipts(blockHash);
  }

  getTransactionLocation(txHash: Uint8Array): Promise<TransactionLocation | undefined> {
    // The head block's own transactions (a receipt asked for as soon as its block is built) are
    // found without reading the index, which says the same of them.
    const head = this.#head;
    const txs = head.block.transactions;
    for (let i = 0; i < txs.length; i++) {
      if (equalBytes(txs[i]!.hash, txHash))
        return Promise.resolve({ blockHash: head.hash, index: i });
    }
    return this.#store.getTransactionLocation(txHash);
  }

  /** A block's header alone (cheaper than the block: no transaction is decoded). */
  getHeaderByHash(hash: Uint8Array): Promise<BlockHeader | undefined> {
    return this.#store.getHeaderByHash(hash);
  }

  /** The log index of the canonical blocks (see `logIndex.ts`). */
  get logIndex(): LogIndexReader {
    return this.#store;
  }

  /**
   * What a proof of work of `header` commits to, fork-detection data included (see
   * `ancestry.ts`). Throws `ChainError` when an ancestor is missing.
   */
  hashForMergedMining(header: BlockHeader): Promise<Uint8Array> {
    return hashForMergedMining(this, header, this.#ancestry);
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
    // Pruning keeps whatever of the anchor's state is here; its upstream has the rest.
    if (this.#isAnchor(header)) return;
    throw new ChainError(
      ChainErrorCode.STATE_MISSING,
      `state of block ${header.number} is pruned: this node keeps the state of the last ${window} blocks (archive mode keeps all)`,
    );
  }

  /**
   * The accounts after `header`, read straight from the state's trie (`AccountReader`): nothing
   * is opened. A read throws `ChainError` when the state is not in the database.
   */
  accountsAt(header: BlockHeader): Pick<AccountReader, "getAccount"> {
    this.assertStateRetained(header);
    const reader = new AccountReader(this.#newStore(), this.stateRootOf(header));
    return {
      getAccount: (address) =>
        reader.getAccount(address).catch((error: unknown) => {
          if (!(error instanceof StateError) || isForkFailure(error)) throw error;
          throw new ChainError(
            ChainErrorCode.STATE_MISSING,
            `state of block ${header.number} is not available`,
          );
        }),
    };
  }

  /**
   * The state trie nodes of these hashes as the database holds them (`undefined` for one it
   * does not): what a fork of this chain asks for when a deletion needs a node off every path
   * it fetched. Nodes are keyed by their hash, so each answer is checked by hashing it.
   */
  trieNodes(hashes: readonly Uint8Array[]): Promise<(Uint8Array | undefined)[]> {
    return readStateItems(
      this.#db,
      hashes.map((hash) => ({ hash, code: false })),
    );
  }

  /**
   * State items (trie nodes and code) by hash as the database holds them, for peers that sync
   * a state: see `readStateItems` of `@nodex/state` (a prefix of the items up to `maxBytes`).
   */
  stateItems(
    items: readonly StateItemRef[],
    maxBytes?: number,
  ): Promise<(Uint8Array | undefined)[]> {
    return readStateItems(this.#db, items, maxBytes);
  }

  /** A store of the chain's trie nodes (through the fork source on a forked chain). */
  #newStore(): NodeStore {
    return new NodeStore(
      this.#db,
      this.#nodes,
      this.#fork === undefined ? {} : { fork: this.#fork },
    );
  }

  /** The world state after `header`; throws `ChainError` when it is not in the database. */
  async stateAt(header: BlockHeader): Promise<WorldState> {
    this.assertStateRetained(header);
    try {
      return await WorldState.open(this.#newStore(), this.stateRootOf(header));
    } catch (error) {
      // A forked state's upstream that fails says why, not that the state is gone.
      if (error instanceof StateError && isForkFailure(error)) throw error;
      throw new ChainError(
        ChainErrorCode.STATE_MISSING,
        `state of block ${header.number} is not available`,
      );
    }
  }

  /**
   * The root of the state after `header`: its own, or on a development network the root of
   * that state as edited since (`editHeadState`). Every read of state and every block built on
   * `header` starts from here.
   */
  stateRootOf(header: BlockHeader): Uint8Array {
    if (this.#stateEdits.size === 0) return header.stateRoot;
    return this.#stateEdits.get(bytesToHex(header.stateRoot)) ?? header.stateRoot;
  }

  /** The edits of state made on development networks, for `rewindTo` to put back later. */
  stateEdits(): StateEdits {
    return this.#stateEdits;
  }

  /**
   * Development networks only: changes the state after the head in place, without a block
   * (`hardhat_setBalance`, `_setCode`, `_setNonce`, `_setStorageAt`, `loadState`). `edit` runs
   * on the head's state; the new nodes and the record of the edit land in one batch. Block
   * hashes and headers do not change: the header keeps the root it was made with, and
   * `stateRootOf` answers the edited one. Returns the new root.
   */
  editHeadState(edit: (state: WorldState) => Promise<void>): Promise<Uint8Array> {
    if (!this.network.devAccounts) {
      return Promise.reject(
        new ChainError(
          ChainErrorCode.NOT_SUPPORTED,
          `the state of ${this.network.name} changes only through its blocks`,
        ),
      );
    }
    return this.#enqueue(async () => {
      this.#db.checkWritable();
      const header = this.#head.block.header;
      const store = this.#newStore();
      const state = await WorldState.open(store, this.stateRootOf(header));
      await edit(state);
      const root = await state.commit();
      const edits = withEdit(this.#stateEdits, header, root);
      await this.#db.write([...store.takeWrites([root]), stateEditsWrite(edits)]);
      store.confirmWrites();
      this.#stateEdits = edits;
      this.#production.dropHeadState();
      return root;
    });
  }

  /** The state after the head as a file holds it (`anvil_dumpState`, `--state`). */
  dumpHeadState(): Promise<StateFile> {
    return this.#enqueue(async () => {
      const header = this.#head.block.header;
      const dump = await dumpState(this.#db, this.stateRootOf(header));
      return { ...dump, chainId: this.network.chainId, block: header.number };
    });
  }

  /**
   * Development networks only: makes `file`'s state the state after the head, as
   * `editHeadState` does (`anvil_loadState`, `--state`). Refused (`StateError` `INVALID_DUMP`,
   * nothing written) for a file of another chain or a state that is not complete.
   */
  loadHeadState(file: StateFile): Promise<void> {
    if (!this.network.devAccounts) {
      return Promise.reject(
        new ChainError(
          ChainErrorCode.NOT_SUPPORTED,
          `the state of ${this.network.name} changes only through its blocks`,
        ),
      );
    }
    if (file.chainId !== this.network.chainId) {
      return Promise.reject(
        new StateError(
          StateErrorCode.INVALID_DUMP,
          `the state dump is of chain ${file.chainId}, this node's is ${this.network.chainId}`,
        ),
      );
    }
    return this.#enqueue(async () => {
      this.#db.checkWritable();
      const ops = await stateDumpWrites(this.#db, file);
      const edits = withEdit(this.#stateEdits, this.#head.block.header, file.root);
      ops.push(stateEditsWrite(edits));
      await this.#db.write(ops);
      // What the cache remembered as absent may be there now.
      this.#nodes.clear();
      this.#stateEdits = edits;
      this.#production.dropHeadState();
    });
  }

  /** The context a transaction or call runs in as part of the block after `parent`. */
  nextBlockContext(
    parent: BlockHeader,
    coinbase: Address,
    timestamp?: bigint,
    uncleCount = 0,
  ): BlockContext {
    return this.#production.nextBlockContext(
      parent,
      coinbase,
      timestamp,
      uncleCount,
      this.ancestorHashes(parent),
    );
  }

  /**
   * The hashes `BLOCKHASH` reads in the block after `parent`: block `number` of the chain that
   * ends at `parent`, the canonical one or the branch `parent` is on (`undefined` past it).
   */
  ancestorHashes(parent: BlockHeader): (number: bigint) => Promise<Uint8Array | undefined> {
    let parentHash: Uint8Array | undefined;
    const first = this.#first;
    return async (number) => {
      if (number < 0n || number > parent.number) return undefined;
      // Below an anchor: its parent's hash is in its header; older ones are the upstream's.
      if (number < first.headersFrom) {
        if (number + 1n !== first.headersFrom) return undefined;
        const anchor = await this.#store.getHeaderByHash(first.hash);
        return anchor?.parentHash;
      }
      parentHash ??= headerHash(parent);
      if (number === parent.number) return parentHash;
      const canonical = await this.#store.getCanonicalHash(parent.number);
      if (canonical !== undefined && equalBytes(canonical, parentHash))
        return this.#store.getCanonicalHash(number);
      // A branch off the canonical chain: walked back from the parent.
      let header: BlockHeader | undefined = parent;
      while (header !== undefined && header.number > number)
        header = await this.#store.getHeaderByHash(header.parentHash);
      return header === undefined ? undefined : headerHash(header);
    };
  }

  // Writes: one at a time, through the queue.

  #enqueue<T>(work: () => Promise<T>): Promise<T> {
    if (this.#readOnly) return Promise.reject(new Error("this chain was opened for reads only"));
    const run = this.#queue.then(work);
    this.#queue = run.catch(() => {});
    return run;
  }

  // A snapshot sync: headers from genesis, then the state and block of a pivot.

  /**
   * The highest header of the header chain: the last one `storeHeaders` stored past the head,
   * or the head's.
   */
  async headerTip(): Promise<BlockHeader> {
    const head = this.#head.block.header;
    const tipHash = await this.#db.get(Bucket.META, HEADER_TIP_KEY);
    if (tipHash === undefined) return head;
    const tip = await this.#store.getHeaderByHash(tipHash);
    return tip !== undefined && tip.number > head.number ? tip : head;
  }

  /** Header `number` of the header chain (up to `headerTip`), from `firstBlock.headersFrom`. */
  async headerChainAt(number: bigint): Promise<BlockHeader | undefined> {
    if (number < this.#first.headersFrom) return undefined;
    if (number <= this.#head.block.header.number) {
      const hash = await this.getCanonicalHash(number);
      return hash === undefined ? undefined : this.#store.getHeaderByHash(hash);
    }
    const tip = await this.headerTip();
    if (number > tip.number) return undefined;
    const hash = await this.#store.getCanonicalHash(number);
    return hash === undefined ? undefined : this.#store.getHeaderByHash(hash);
  }

  /**
   * Checks headers that continue the header chain from `headerTip` (each the child of the one
   * before, meeting the header rules with its difficulty and merged-mining proof, its uncles
   * matching when it has any) and stores them, with their total difficulty and numbers, in one
   * batch; nothing of a run with an invalid header is stored. Returns why they are invalid, or
   * `undefined`. The headers stay past the head (no reader sees them) until `installSnapshot`.
   */
  storeHeaders(headers: readonly ChainHeader[]): Promise<string | undefined> {
    return this.#enqueue(() => this.#storeHeaders(headers));
  }

  async #storeHeaders(headers: readonly ChainHeader[]): Promise<string | undefined> {
    if (this.#first.snapshot || this.#first.anchored)
      return "the chain already starts past genesis: it takes no header chain";
    if (headers.length === 0) return undefined;
    let parent = await this.headerTip();
    let parentHash = headerHash(parent);
    const tdBytes = await this.#db.get(Bucket.TOTAL_DIFFICULTY, parentHash);
    if (tdBytes === undefined)
      throw new ChainError(
        ChainErrorCode.CORRUPT,
        `total difficulty of header ${parent.number} is missing`,
      );
    let td = bytesToBigint(tdBytes, "total difficulty");
    const byHash = new Map<string, BlockHeader>();
    const byNumber = new Map<bigint, Uint8Array>();
    const source = {
      getHeaderByHash: async (hash: Uint8Array) =>
        byHash.get(bytesToHex(hash)) ?? (await this.#store.getHeaderByHash(hash)),
      getCanonicalHash: async (number: bigint) =>
        byNumber.get(number) ?? (await this.#store.getCanonicalHash(number)),
      firstBlock: { number: 0n },
    };
    const now = BigInt(Math.floor(Date.now() / 1000));
    const ops: WriteOp[] = [];
    for (const { header, uncles } of headers) {
      const hash = headerHash(header);
      const at = `header ${header.number} ${bytesToHex(hash)}`;
      if (!equalBytes(header.parentHash, parentHash))
        return `${at} is not the child of header ${parent.number} ${bytesToHex(parentHash)}`;
      let hfmm: Uint8Array;
      try {
        hfmm = await hashForMergedMining(source, header, this.#ancestry);
      } catch (err) {
        return `${at}: no merged-mining hash: ${(err as Error).message}`;
      }
      const why =
        checkHeader(header, parent, this.#rules, now, hfmm) ?? unclesMismatch(header, uncles);
      if (why !== undefined) return `${at}: ${why}`;
      td += (uncles ?? []).reduce((sum, uncle) => sum + uncle.difficulty, header.difficulty);
      byHash.set(bytesToHex(hash), header);
      byNumber.set(header.number, hash);
      ops.push(
        { type: "put", bucket: Bucket.HEADER, key: hash, value: encodeHeader(header) },
        { type: "put", bucket: Bucket.TOTAL_DIFFICULTY, key: hash, value: bigintToBytes(td) },
        { type: "put", bucket: Bucket.CANONICAL, key: numberKey(header.number), value: hash },
      );
      parent = header;
      parentHash = hash;
    }
    ops.push({ type: "put", bucket: Bucket.META, key: HEADER_TIP_KEY, value: parentHash });
    await this.#db.write(ops);
    for (const [number, hash] of byNumber) this.#store.setCanonical(number, hash);
    return undefined;
  }

  /**
   * The download of the state at `root` into the chain's database (`StateSync` of
   * `@nodex/state`): what the database already holds of it is found first, so a restart goes on.
   */
  openStateSync(root: Uint8Array): Promise<StateSync> {
    return StateSync.open(this.#db, root);
  }

  /** The pivot of the snapshot sync under way (`saveSnapPivot`), or `undefined`. */
  async snapPivot(): Promise<bigint | undefined> {
    const bytes = await this.#db.get(Bucket.META, SNAP_PIVOT_KEY);
    return bytes === undefined ? undefined : decodePivot(bytes);
  }

  /** Records the pivot of a snapshot sync, so that a restart goes on with the same one. */
  saveSnapPivot(number: bigint): Promise<void> {
    return this.#enqueue(() =>
      this.#db.write([
        { type: "put", bucket: Bucket.META, key: SNAP_PIVOT_KEY, value: encodePivot(number) },
      ]),
    );
  }

  /**
   * Makes `block`, a block of the header chain whose state is in the database in full (a
   * snapshot sync downloaded it), the chain's first full block and its head, with `receipts`:
   * its body and receipts are checked against its header (`pivotBodyMismatch`), nothing is
   * run. From then on the chain is its network's genesis chain with headers back to genesis and
   * blocks from this one (`firstBlock`); blocks after it are imported as usual. Returns why it
   * cannot, or `undefined`; the head event tells the rest of the node.
   */
  installSnapshot(block: Block, receipts: readonly Receipt[]): Promise<string | undefined> {
    return this.#enqueue(() => this.#installSnapshot(block, receipts));
  }

  async #installSnapshot(block: Block, receipts: readonly Receipt[]): Promise<string | undefined> {
    const { header } = block;
    const hash = headerHash(header);
    if (this.#first.snapshot || this.#first.anchored)
      return "the chain already starts past genesis: it takes no snapshot";
    if (header.number <= this.#head.block.header.number)
      return `the chain already has block ${header.number}: a snapshot must be past its head`;
    const ours = await this.#store.getCanonicalHash(header.number);
    if (
      ours === undefined ||
      !equalBytes(ours, hash) ||
      (await this.headerTip()).number < header.number
    )
      return `block ${header.number} ${bytesToHex(hash)} is not the header chain's block ${header.number}`;
    const tdBytes = await this.#db.get(Bucket.TOTAL_DIFFICULTY, hash);
    if (tdBytes === undefined) return `total difficulty of block ${header.number} is missing`;
    const mismatch = await pivotBodyMismatch(this.network, block, receipts);
    if (mismatch !== undefined) return `block ${header.number} ${bytesToHex(hash)}: ${mismatch}`;
    try {
      await WorldState.open(this.#newStore(), header.stateRoot);
    } catch {
      return `the state of block ${header.number} is not in the database`;
    }
    const stored: StoredBlock = {
      block,
      hash,
      totalDifficulty: bytesToBigint(tdBytes, "total difficulty"),
    };
    await this.#db.write([
      ...blockWrites(block, hash, stored.totalDifficulty, receipts),
      ...canonicalWrites(stored),
      ...(await this.#store.logIndexChanges([], [stored], async () => receipts)),
      { type: "put", bucket: Bucket.META, key: HEAD_KEY, value: hash },
      { type: "put", bucket: Bucket.META, key: SNAPSHOT_KEY, value: hash },
      { type: "del", bucket: Bucket.META, key: SNAP_PIVOT_KEY },
      { type: "del", bucket: Bucket.META, key: HEADER_TIP_KEY },
    ]);
    this.#first = {
      number: header.number,
      hash,
      anchored: false,
      snapshot: true,
      headersFrom: 0n,
    };
    this.#store.remember(stored, receipts);
    this.#store.setCanonical(header.number, hash);
    this.#sideBlocks.clear();
    this.#production.dropHeadState();
    this.#setHead(stored, [], [stored]);
    this.#log.info("Installed the snapshot", {
      number: header.number,
      hash: bytesToHex(hash),
      txs: block.transactions.length,
    });
    return undefined;
  }

  /**
   * Checks a block from outside (a miner's solution, a peer, a chain file) against the consensus
   * rules and by running it on its parent's state, and stores it: it becomes the head, with a
   * reorganization when it is on another branch, when its chain is heavier than the head's.
   */
  importBlock(block: Block): Promise<ImportResult> {
    return this.#enqueue(() => this.#import(block));
  }

  async #import(block: Block): Promise<ImportResult> {
    const { header } = block;
    const hash = headerHash(header);
    const known = await this.#store.getBlockByHash(hash);
    if (known !== undefined) return { result: "EXIST", block: known };
    const parent = await this.#store.getBlockByHash(header.parentHash);
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
    const unclesWhy = checkUncles(
      block,
      ancestors.map((a) => ({ hash: a.hash, header: a.block.header })),
      includedUncles(ancestors),
      this.#rules,
      await Promise.all(
        block.uncles.map((uncle) => hashForMergedMiningOrEmpty(this, uncle, this.#ancestry)),
      ),
    );
    if (unclesWhy !== undefined) return invalid(unclesWhy);
    const txWhy = await transactionsMismatch(this.network, block);
    if (txWhy !== undefined) return invalid(txWhy);
    const ctx: BlockContext = {
      number: header.number,
      timestamp: header.timestamp,
      coinbase: header.coinbase as Address,
      gasLimit: header.gasLimit,
      difficulty: header.difficulty,
      minimumGasPrice: header.minimumGasPrice,
      blockHash: this.ancestorHashes(parent.block.header),
    };
    let run: Execution;
    try {
      run = await this.#production.execute(parent.block.header, ctx, block.transactions, true);
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
    const stored = await this.#write(storedBlock(block, parent, hash), run);
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
      if (last.block.header.number <= this.#first.headersFrom) break;
      const parentHash = last.block.header.parentHash;
      let next = await this.#store.getBlockByHash(parentHash);
      // Below a snapshot's first block only headers are held: the ancestors an uncle may hang
      // from, without the uncles they included.
      if (next === undefined && last.block.header.number <= this.#first.number) {
        const header = await this.#store.getHeaderByHash(parentHash);
        if (header !== undefined)
          next = {
            block: { header, transactions: [], uncles: [] },
            hash: parentHash,
            totalDifficulty: 0n,
          };
      }
      if (next === undefined) break;
      out.push(next);
    }
    return out;
  }

  /**
   * Builds a block on the head with as many of `txs` as can run, in order, seals it and makes
   * it the new head. `onBuilt`, when given, hears which transactions went in as soon as the
   * block is built, before it is sealed and written: until it is the head, `writing()` says so
   * (see there).
   */
  mine(
    txs: readonly SignedTransaction[],
    opts: MineOptions,
    onBuilt?: (block: BuiltBlock) => void,
  ): Promise<MinedBlock> {
    return this.#enqueue(() => this.#mine(txs, opts, onBuilt));
  }

  /**
   * While a block this node built is being sealed, a promise that settles (never rejects) once
   * it is the head or is lost (its seal or write failed, which is logged); `undefined`
   * otherwise. Who was told of a built block (`mine`'s `onBuilt`) and answered
   * before it was written awaits this before reading the chain, so that every read sees the
   * block: the RPC layer waits for it before each request.
   */
  writing(): Promise<void> | undefined {
    return this.#writing;
  }

  /** Whether the database takes writes (blocks, transactions), and if not, why. */
  storage(): StorageHealth {
    return this.#db.health();
  }

  /** Calls `listener` when the database stops or starts taking writes; returns the unsubscribe. */
  onStorageChange(listener: (health: StorageHealth) => void): () => void {
    return this.#db.onHealthChange(listener);
  }

  /** Throws `StateError` (`STORAGE_UNAVAILABLE`) while the database takes no writes. */
  checkWritable(): void {
    this.#db.checkWritable();
  }

  /** A write beside the database failed (the pool's journal): the database refuses writes too. */
  reportStorageFailure(err: unknown): void {
    this.#db.reportWriteFailure(err);
  }

  async #mine(
    txs: readonly SignedTransaction[],
    opts: MineOptions,
    onBuilt: ((block: BuiltBlock) => void) | undefined,
  ): Promise<MinedBlock> {
    // Nothing is built that could not be kept.
    this.#db.checkWritable();
    const parent = this.#head;
    const uncles = await this.#uncleCandidates(parent);
    const { header, run } = await this.#production.build(
      parent,
      uncles,
      txs,
      opts,
      false,
      this.ancestorHashes(parent.block.header),
    );
    if (onBuilt === undefined) return this.#sealAndWrite(parent, header, run, uncles);
    // Whoever is told answers now; sealing and writing wait for the next turn of the event
    // loop, so that the answer goes out first. Requests wait until the block is the head.
    let atHead: () => void = () => {};
    const writing = new Promise<void>((resolve) => {
      atHead = resolve;
    });
    const clear = () => {
      if (this.#writing === writing) this.#writing = undefined;
      atHead();
    };
    const done = new Promise<void>((resolve) => setImmediate(resolve)).then(() =>
      this.#sealAndWrite(parent, header, run, uncles, clear),
    );
    this.#writing = writing;
    try {
      onBuilt({ included: run.included, rejected: run.rejected, failed: run.failed });
    } catch (err) {
      this.#log.error("A built-block listener failed", { error: (err as Error).message });
    }
    try {
      return await done;
    } catch (err) {
      this.#log.error("Mined block lost: not sealed or not written", {
        number: header.number,
        error: (err as Error).message,
      });
      throw err;
    } finally {
      clear();
    }
  }

  async #sealAndWrite(
    parent: StoredBlock,
    unsealed: BlockHeader,
    run: Execution,
    uncles: BlockHeader[],
    onHead?: () => void,
  ): Promise<MinedBlock> {
    const hfmm = await this.hashForMergedMining(unsealed);
    const header = await this.#sealer.seal(unsealed, hfmm);
    const seal = this.#rules.checkSeal(header, hfmm);
    if (seal !== undefined) {
      throw new ChainError(
        ChainErrorCode.INVALID_BLOCK,
        `the sealer made an invalid merged-mining proof: ${seal}`,
      );
    }
    const stored = await this.#write(
      storedBlock(assembled(header, run, uncles), parent),
      run,
      onHead,
    );
    this.#log.info("Mined block", {
      number: header.number,
      hash: bytesToHex(stored.hash),
      txs: run.included.length,
      gasUsed: header.gasUsed,
    });
    return {
      block: stored.block,
      hash: stored.hash,
      totalDifficulty: stored.totalDifficulty,
      receipts: run.receipts,
      included: run.included,
      rejected: run.rejected,
      failed: run.failed,
    };
  }

  /**
   * A block on the head with as many of `txs` as can run, complete but for its seal (the
   * merged-mining fields are empty): work for miners. Nothing is written; the head's state is
   * left as it is.
   */
  buildTemplate(txs: readonly SignedTransaction[], opts: MineOptions): Promise<BlockTemplate> {
    return this.#enqueue(async () => {
      const parent = this.#head;
      const uncles = await this.#uncleCandidates(parent);
      const built = await this.#production.build(
        parent,
        uncles,
        txs,
        opts,
        true,
        this.ancestorHashes(parent.block.header),
      );
      return {
        block: assembled(built.header, built.run, uncles),
        parentHash: parent.hash,
        hashForMergedMining: await this.hashForMergedMining(built.header),
        rejected: built.run.rejected,
        state: built.run.state,
        receipts: built.run.receipts,
      };
    });
  }

  async #uncleCandidates(parent: StoredBlock): Promise<BlockHeader[]> {
    if (this.#sideBlocks.size === 0) return [];
    return this.#sideBlocks.candidates(await this.#ancestors(parent, UNCLE_GENERATIONS));
  }

  /**
   * Makes canonical block `number` the head again and deletes the blocks above it, with their
   * indexes, in one batch: what a development network's `evm_revert` and `evm_reset` do. The
   * edits of state become `edits` (none when absent: see `stateEdits`). Throws
   * `ChainError` when there is no such block or its state is no longer kept.
   */
  rewindTo(number: bigint, edits?: StateEdits): Promise<StoredBlock> {
    return this.#enqueue(() => this.#rewindTo(number, edits));
  }

  async #rewindTo(number: bigint, edits: StateEdits = new Map()): Promise<StoredBlock> {
    const first = this.#first;
    if (number < first.number) {
      throw new ChainError(
        ChainErrorCode.NOT_FOUND,
        `block ${number} is before the chain's first block ${first.number}${first.anchored ? " (its anchor)" : ""}: the chain cannot go back past it`,
        { number, firstBlock: first.number },
      );
    }
    const target = await this.getBlockByNumber(number);
    if (target === undefined)
      throw new ChainError(ChainErrorCode.NOT_FOUND, `no block ${number} on the chain`);
    if (!this.#isAnchor(target.block.header)) await this.stateAt(target.block.header);
    const head = this.#head.block.header.number;
    const removed: StoredBlock[] = [];
    for (let n = number + 1n; n <= head; n++) {
      const block = await this.getBlockByNumber(n);
      if (block !== undefined) removed.push(block);
    }
    // Listeners of the change may want what the rewind deletes (removed logs, for one).
    const deletedReceipts = new Map<string, readonly Receipt[]>();
    for (const block of removed) {
      const receipts = await this.#store.getReceipts(block.hash);
      if (receipts !== undefined) deletedReceipts.set(bytesToHex(block.hash), receipts);
    }
    const ops: WriteOp[] = [];
    for (const block of removed)
      ops.push(...canonicalDeletes(block, true), ...blockDeletes(block.hash));
    ops.push(
      ...(await this.#store.logIndexChanges(removed, [], async (b) =>
        deletedReceipts.get(bytesToHex(b.hash)),
      )),
    );
    ops.push({ type: "put", bucket: Bucket.META, key: HEAD_KEY, value: target.hash });
    if (edits.size > 0 || this.#stateEdits.size > 0) ops.push(stateEditsWrite(edits));
    await this.#db.write(ops);
    this.#stateEdits = new Map(edits);
    for (const block of removed) {
      this.#store.forgetCanonical(block.block.header.number);
      this.#store.forget(block.hash);
    }
    this.#sideBlocks.clear();
    this.#production.dropHeadState();
    this.#setHead(target, removed, [], deletedReceipts);
    this.#log.info("Rewound the chain", { head: number, removedBlocks: removed.length });
    return target;
  }

  /**
   * Writes `stored`, executed as `run`, in one batch. It becomes the head when its
   * total difficulty is higher than the head's: the canonical index and the transaction index
   * switch over from the common ancestor in the same batch. Whoever hears of it (the head
   * event, `writing()`, the requests waiting on it) is told once the batch has landed; if the
   * batch fails nothing changed, and the transactions a mined block took still wait in the pool.
   */
  async #write(stored: StoredBlock, run: Execution, onHead?: () => void): Promise<StoredBlock> {
    const { block, hash, totalDifficulty } = stored;
    const { header } = block;
    const ops: WriteOp[] = [
      ...run.store.takeWrites([run.stateRoot]),
      ...blockWrites(block, hash, totalDifficulty, run.receipts),
    ];
    let plan: SwitchPlan | undefined;
    if (isHeavier(stored, this.#head)) {
      plan = await switchPlan(this, this.#head, stored, this.#first.number);
      for (const old of plan.removed) ops.push(...canonicalDeletes(old, false));
      for (const n of plan.removedNumbers)
        ops.push({ type: "del", bucket: Bucket.CANONICAL, key: numberKey(n) });
      for (const added of plan.added) ops.push(...canonicalWrites(added));
      ops.push(
        ...(await this.#store.logIndexChanges(plan.removed, plan.added, async (b) =>
          b === stored ? run.receipts : this.#store.getReceipts(b.hash),
        )),
      );
      ops.push({ type: "put", bucket: Bucket.META, key: HEAD_KEY, value: hash });
    }
    await this.#db.write(ops);
    run.store.confirmWrites();
    this.#store.remember(stored, run.receipts);
    if (plan === undefined) {
      this.#sideBlocks.add(stored, this.#head.block.header.number);
      return stored;
    }
    for (const old of plan.removed) this.#sideBlocks.add(old, this.#head.block.header.number);
    for (const added of plan.added) this.#sideBlocks.delete(added);
    for (const n of plan.removedNumbers) this.#store.forgetCanonical(n);
    for (const added of plan.added) this.#store.setCanonical(added.block.header.number, added.hash);
    this.#production.keepHeadState(run);
    this.#setHead(stored, plan.removed, plan.added);
    onHead?.();
    this.#afterHead(header.number);
    return stored;
  }

  /** After a new head is on disk. */
  #afterHead(number: bigint): void {
    const window = this.#stateWindow;
    if (window !== undefined && number % BigInt(window) === 0n) {
      // After this block, before the next: no block is written while nodes are swept.
      this.#queue = this.#queue.then(() => this.#prune(window)).catch(() => {});
    }
  }

  /** Deletes the state of blocks older than the window. */
  async #prune(window: number): Promise<void> {
    // A snapshot sync's state is written node by node before any root reaches it.
    if ((await this.snapPivot()) !== undefined) return;
    const head = this.#head.block.header.number;
    const from = head - BigInt(window) + 1n;
    const first = from < this.#first.number ? this.#first.number : from;
    const roots: Uint8Array[] = [];
    // What was fetched of an anchor's state from its upstream stays: fetching it again is slow.
    if (this.#first.anchored && first > this.#first.number) {
      const anchor = await this.#store.getHeaderByHash(this.#first.hash);
      if (anchor !== undefined) roots.push(anchor.stateRoot);
    }
    for (let n = first; n <= head; n++) {
      const block = await this.getBlockByNumber(n);
      if (block === undefined) continue;
      roots.push(block.block.header.stateRoot);
      const edited = this.#stateEdits.get(bytesToHex(block.block.header.stateRoot));
      if (edited !== undefined) roots.push(edited);
    }
    const started = performance.now();
    try {
      const { live, deleted } = await pruneTrieNodes(this.#db, roots, this.#nodes);
      this.#log.info("Pruned old state", {
        keptFrom: first,
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

/** `block` as stored on `parent`: its hash and the total difficulty of its chain. */
function storedBlock(
  block: Block,
  parent: StoredBlock,
  hash = headerHash(block.header),
): StoredBlock {
  return { block, hash, totalDifficulty: parent.totalDifficulty + cumulativeDifficulty(block) };
}

/** A failure of a fork's upstream or of its answers: told as it is. */
function isForkFailure(error: StateError): boolean {
  return error.code.startsWith("STATE_UPSTREAM_") || error.code.startsWith("STATE_FORK_");
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
    ...blockWrites(block, hash, header.difficulty, []),
    ...canonicalWrites(stored),
    { type: "put", bucket: Bucket.META, key: HEAD_KEY, value: hash },
  ]);
  store.confirmWrites();
  return stored;
}

/** `anchor` checked, with its total difficulty; `ChainError` `INVALID_BLOCK` saying what is wrong. */
function checkAnchor(anchor: ChainAnchor): Required<ChainAnchor> {
  const { header } = anchor;
  const bad = (why: string) =>
    new ChainError(ChainErrorCode.INVALID_BLOCK, `the anchor block is not usable: ${why}`);
  if (header.number < 0n || header.number > MAX_ANCHOR_NUMBER)
    throw bad(`number ${header.number} is not within 0 to ${MAX_ANCHOR_NUMBER}`);
  for (const [name, bytes] of [
    ["parent hash", header.parentHash],
    ["state root", header.stateRoot],
  ] as const) {
    if (bytes.length !== 32) throw bad(`${name} has ${bytes.length} bytes, not 32`);
  }
  if (header.number === 0n && !equalBytes(header.parentHash, new Uint8Array(32)))
    throw bad("block 0 has a parent hash that is not zero");
  if (header.difficulty < 0n) throw bad(`difficulty ${header.difficulty} is negative`);
  if (header.gasLimit <= 0n) throw bad(`gas limit ${header.gasLimit} is not positive`);
  if (header.timestamp < 0n) throw bad(`timestamp ${header.timestamp} is negative`);
  if (header.minimumGasPrice < 0n)
    throw bad(`minimum gas price ${header.minimumGasPrice} is negative`);
  const totalDifficulty = anchor.totalDifficulty ?? header.difficulty;
  if (totalDifficulty < header.difficulty)
    throw bad(`total difficulty ${totalDifficulty} is below its difficulty ${header.difficulty}`);
  return { header, totalDifficulty };
}

/**
 * Throws `ChainError` `OTHER_CHAIN` unless the chain in the database starts where the node
 * asks it to: at `anchor`, or at genesis when there is none.
 */
function checkSameStart(first: FirstBlock, anchor: Required<ChainAnchor> | undefined): void {
  const stored = first.anchored
    ? `a chain anchored at block ${first.number} ${bytesToHex(first.hash)}`
    : "a chain that starts at genesis";
  if (anchor === undefined) {
    if (!first.anchored) return;
    throw new ChainError(
      ChainErrorCode.OTHER_CHAIN,
      `the datadir holds ${stored}, not this network's genesis chain: use another datadir, or open it with that anchor`,
      { firstBlock: first.number, firstHash: bytesToHex(first.hash) },
    );
  }
  const hash = headerHash(anchor.header);
  if (first.anchored && equalBytes(hash, first.hash)) return;
  throw new ChainError(
    ChainErrorCode.OTHER_CHAIN,
    `the datadir holds ${stored}, not one anchored at block ${anchor.header.number} ${bytesToHex(hash)}: ${first.anchored ? "another fork point" : "another chain"}; use another datadir`,
    { firstBlock: first.number, firstHash: bytesToHex(first.hash) },
  );
}

/**
 * Writes `anchor` as the first block of a new chain: canonical, the head, with no
 * transactions, uncles or receipts, and no state (its root's nodes come from its upstream).
 */
async function writeAnchor(anchor: Required<ChainAnchor>, db: Database): Promise<StoredBlock> {
  const { header, totalDifficulty } = anchor;
  const block: Block = { header, transactions: [], uncles: [] };
  const hash = headerHash(header);
  const stored = { block, hash, totalDifficulty };
  await db.write([
    ...blockWrites(block, hash, totalDifficulty, []),
    ...canonicalWrites(stored),
    { type: "put", bucket: Bucket.META, key: FIRST_BLOCK_KEY, value: hash },
    { type: "put", bucket: Bucket.META, key: HEAD_KEY, value: hash },
  ]);
  return stored;
}
