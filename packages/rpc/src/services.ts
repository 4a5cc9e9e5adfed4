import type {
  FoundLog,
  HeadChange,
  IncludedReceipt,
  IncludedTransaction,
  LogQuery,
  StoredBlock,
  TracedTransaction,
} from "@nodex/chain";
import type { CallOutcome, CallRequest, ExecutionTracer } from "@nodex/evm";
import type { StateEdit } from "@nodex/miner";
import type { StateFile, WorldState } from "@nodex/state";
import type {
  Address,
  BlockSelector,
  NetworkPreset,
  SignedTransaction,
  UnsignedTransaction,
} from "@nodex/types";
import type { HeavyRequestService } from "./heavyRequests.js";
import type { TypedData } from "./wallet.js";

/** The chain as the RPC methods see it. */
export interface ChainView {
  /** Number of the best block. */
  blockNumber(): bigint;
  /** A gas price that gets a transaction included in the next block, in wei. */
  gasPrice(): bigint;
  /**
   * While a block the node built is being sealed and is not yet the head (a send may have been
   * answered already): a promise that settles once it is the head, or is lost. Every request
   * waits for it, so that what a client learns of a send (its receipt, the nonce, the block
   * number) is there when it asks.
   */
  writing?(): Promise<void> | undefined;
  /**
   * Whether the node's storage takes writes: when it does not (a full disk, a failed write,
   * free space below the minimum), `/health` says why and `/ready` answers 503.
   */
  storage?(): { readonly writable: boolean; readonly reason?: string; readonly since?: number };
  /** The best block's timestamp, in seconds since 1970 (the head's age, for metrics and `/ready`). */
  headTimestamp?(): number;
}

/** The node's events the filters and subscriptions follow. */
export interface NodeEvents {
  /** Every change of the canonical head, with the blocks that left and joined the chain. */
  onHeadChange(listener: (change: HeadChange) => void): () => void;
  /** Every transaction the pool took in. */
  onNewTransaction(listener: (tx: SignedTransaction) => void): () => void;
  /** Every start, progress step and end of a sync with the network, where the node syncs. */
  onSyncingChange?(listener: (status: SyncStatus) => void): () => void;
}

/** What the state methods read of the state after a block. */
export type StateView = Pick<
  WorldState,
  "getBalance" | "getNonce" | "getCode" | "getStorage" | "getProof"
>;

/**
 * Reading the chain: selectors resolved (`pending`, `safe`, `finalized` included), the state
 * after a block, calls and estimates on it, transactions, receipts and logs. The chain
 * package's `ChainReader` implements it. A selector naming no block throws a domain error
 * (answered as -32602).
 */
export interface ChainReaderService {
  /**
   * The number of the chain's first block: genesis (0), or the anchor of a chain that forks
   * an upstream network, whose older blocks are not this chain's. 0 when absent.
   */
  readonly firstNumber?: bigint;
  /** The block a selector names, or `null` when there is none. */
  resolve(selector: BlockSelector): Promise<StoredBlock | null>;
  /** Like `resolve`, for methods that need a block: a missing one is a domain error (-32602). */
  require(selector: BlockSelector): Promise<StoredBlock>;
  /** A stored block by hash, canonical or not. */
  blockByHash(hash: Uint8Array): Promise<StoredBlock | null>;
  state(selector: BlockSelector): Promise<StateView>;
  /** For `pending`, counting the account's waiting transactions. */
  nonce(address: Address, selector: BlockSelector): Promise<bigint>;
  /** `opts.deadline`: when the call's execution stops (-32011), in `Date.now()` milliseconds. */
  call(
    req: CallRequest,
    selector: BlockSelector,
    opts?: { readonly deadline?: number },
  ): Promise<CallOutcome>;
  /** The estimate, or the call's outcome when it fails even with all the gas it may have. */
  estimateGas(
    req: CallRequest,
    selector: BlockSelector,
    opts?: { readonly deadline?: number },
  ): Promise<bigint | CallOutcome>;
  /** `call`, heard by `tracer` as the transaction would be (`debug_traceCall`); nothing kept. */
  traceCall<T extends ExecutionTracer>(
    req: CallRequest,
    selector: BlockSelector,
    tracer: T,
  ): Promise<{ readonly outcome: CallOutcome; readonly tracer: T }>;
  /** In chain order; throws a domain error past the spec's limits. */
  getLogs(query: LogQuery): Promise<FoundLog[]>;
  /**
   * `getLogs`, or `undefined` once the query covers more than `budget.blocks` blocks or
   * matches more than `budget.logs` logs.
   */
  getLogsWithin?(
    query: LogQuery,
    budget: { readonly blocks: bigint; readonly logs: number },
  ): Promise<FoundLog[] | undefined>;
  transaction(hash: Uint8Array): Promise<IncludedTransaction | null>;
  receipt(hash: Uint8Array): Promise<IncludedReceipt | null>;
  /** Every receipt of a block, in order (for the pending block, those of its execution). */
  blockReceipts(block: StoredBlock): Promise<IncludedReceipt[]>;
  /** A transaction waiting in the pool (pending or queued). */
  pendingTransaction(hash: Uint8Array): SignedTransaction | undefined;
  /**
   * The receipt-trie nodes proving a transaction's receipt in a block, leaf first; a domain
   * error when the block is unknown or the transaction is not in it.
   */
  receiptNodes(blockHash: Uint8Array, txHash: Uint8Array): Promise<readonly Uint8Array[]>;
  /** State trie nodes by their hash, `undefined` for one the node does not hold. */
  trieNodes?(hashes: readonly Uint8Array[]): Promise<readonly (Uint8Array | undefined)[]>;
  /** The best Bitcoin height the recent merged-mining proofs state (0 when none states one). */
  bitcoinBestChainHeight(): Promise<bigint>;
}

/**
 * Signed transactions into the node: the pool's one admission path, then (on development
 * networks with automine) a block. `local`: submitted by a user of this node, kept across
 * restarts. `owner`: on a hosted node, who sent it (`hostedOwner`): it then meets the pool's
 * global limits as a remote transaction does, and the share of one key.
 */
export interface TransactionService {
  sendTransaction(raw: Uint8Array, opts: { local?: boolean; owner?: string }): Promise<Uint8Array>;
}

/** The pool's owner of a transaction sent over a hosted node: its key, or all keyless senders. */
export function hostedOwner(ctx: CallContext): { owner: string } | Record<string, never> {
  if (!ctx.hosted) return {};
  return { owner: ctx.keyId ?? "keyless" };
}

/** The pool's content as the `txpool_` methods show it. */
export interface PoolView {
  /** Pending and queued transactions by sender (lowercase 0x hex), each in nonce order. */
  content(): {
    pending: ReadonlyMap<string, readonly SignedTransaction[]>;
    queued: ReadonlyMap<string, readonly SignedTransaction[]>;
  };
  status(): { pending: number; queued: number };
}

/** The development controls behind the `evm_` methods (the miner package's `BlockProducer`). */
export interface DevControls {
  snapshot(): bigint;
  revert(id: bigint): Promise<boolean>;
  reset(): Promise<void>;
  /** The total offset in seconds. */
  increaseTime(seconds: bigint): bigint;
  mineBlock(timestamp?: bigint): Promise<unknown>;
  /** `count` blocks; with `interval`, that many seconds apart. */
  mineBlocks(count: bigint, interval?: bigint): Promise<unknown>;
  setMining(on: boolean): Promise<void>;
  setAutomine(on: boolean): Promise<void>;
  readonly automining: boolean;
  /** A block every `ms` milliseconds; 0 for none. */
  setIntervalMining(ms: number): Promise<void>;
  setNextBlockTimestamp(timestamp: bigint): void;
  setBlockGasLimit(gasLimit: bigint): void;
  setCoinbase(address: Address): void;
  readonly coinbase: Address;
  /** `false` when no waiting transaction has that hash. */
  dropTransaction(hash: Uint8Array): Promise<boolean>;
  editState(edit: StateEdit): Promise<void>;
  impersonate(address: Address): void;
  stopImpersonating(address: Address): boolean;
  setAutoImpersonate(on: boolean): void;
  isImpersonated(address: Address): boolean;
  /** Sends from an impersonated account; the transaction's hash once its automined block is built. */
  sendImpersonated(
    tx: UnsignedTransaction,
    from: Address,
    opts?: { wait?: "head" | "built"; anyAccount?: boolean },
  ): Promise<Uint8Array>;
  /** The snapshots `evm_revert` can still go back to. */
  readonly snapshotCount: number;
  dumpState(): Promise<StateFile>;
  loadState(file: StateFile): Promise<void>;
}

/** Sync progress, or `false` when the node is not syncing. */
export type SyncStatus =
  | false
  | {
      readonly startingBlock: bigint;
      readonly currentBlock: bigint;
      readonly highestBlock: bigint;
      /** During a snapshot sync: its phase and what it has done. */
      readonly snap?: SnapSyncStatus;
    };

/** Where a snapshot sync stands (`eth_syncing`'s extra fields). */
export interface SnapSyncStatus {
  readonly phase: "headers" | "state" | "blocks";
  readonly pivotBlock: bigint;
  /** Headers checked and stored, from genesis. */
  readonly headers: bigint;
  readonly accounts: bigint;
  readonly slots: bigint;
  readonly codes: bigint;
  /** Trie nodes downloaded, and still known to be wanted. */
  readonly nodes: bigint;
  readonly pending: bigint;
  /** Bytes of state written. */
  readonly bytes: bigint;
  /** An estimate of the time left, from the recent rate; absent until there is one. */
  readonly secondsLeft?: number;
}

/** The peer-to-peer layer as the RPC methods see it. */
export interface PeersView {
  listening(): boolean;
  peerCount(): number;
  /** One `"<short id> | <host>:<port>"` string per connected peer. */
  peerList(): readonly string[];
  syncing(): SyncStatus;
  /** Messages received from peers and not yet handled (`debug_wireProtocolQueueSize`). */
  wireQueueSize?(): number;
  /** The highest head a connected peer reported; `undefined` without peers. */
  bestPeerBlock?(): bigint | undefined;
}

/** One record of `sco_peerList` or the `sco_reputationSummary` object, in the reference node's shape. */
export type ScoringRecord = Readonly<Record<string, string | number | boolean>>;

/** Peer scoring and bans, as the `sco_` methods see them. */
export interface ScoringView {
  /** Node records first, then address records. */
  peerList(): readonly ScoringRecord[];
  /** `false` when `address` is neither an IP address nor a CIDR block. */
  banAddress(address: string): boolean;
  unbanAddress(address: string): boolean;
  /** Single addresses first, then CIDR blocks. */
  bannedAddresses(): readonly string[];
  reputationSummary(): ScoringRecord;
}

/** Mining as the RPC methods see it. */
export interface MiningView {
  coinbase(): Address;
  mining(): boolean;
  /** Hashes per second of this node's miners. */
  hashrate(): bigint;
}

/** `mnr_getWork`'s answer: the reference node's `MinerWork`. */
export interface MinerWork {
  readonly blockHashForMergedMining: Uint8Array;
  /** 32 bytes: floor(2^256 / max(difficulty, 3)), big-endian. */
  readonly target: Uint8Array;
  readonly feesPaidToMiner: bigint;
  readonly notify: boolean;
  readonly parentBlockHash: Uint8Array;
}

/** What the `mnr_submit*` methods answer: the reference node's `SubmittedBlockInfo`. */
export interface SubmittedBlockInfo {
  /** `IMPORTED_BEST`, `IMPORTED_NOT_BEST`, `EXIST`, `NO_PARENT`, `INVALID_BLOCK`. */
  readonly blockImportedResult: string;
  readonly blockHash: Uint8Array;
  readonly blockIncludedHeight: bigint;
}

/** `eth_getWork`'s three values. */
export interface EthWork {
  readonly powHash: Uint8Array;
  readonly seedHash: Uint8Array;
  readonly boundary: Uint8Array;
}

/**
 * Work for merged miners and submissions of their solutions. Submissions that cannot become a
 * block throw a domain error answered as -33000 with the reason.
 */
export interface MinerService {
  getWork(): Promise<MinerWork>;
  /** A whole serialized Bitcoin block (header, transactions; the coinbase first). */
  submitBitcoinBlock(block: Uint8Array): Promise<SubmittedBlockInfo>;
  /** The header, the coinbase and every txid of the block in display order, coinbase first. */
  submitBitcoinBlockTransactions(
    header: Uint8Array,
    coinbase: Uint8Array,
    txids: readonly Uint8Array[],
  ): Promise<SubmittedBlockInfo>;
  /** The header, the coinbase, and the coinbase txid then its Merkle branch in raw byte order. */
  submitBitcoinBlockPartialMerkle(
    header: Uint8Array,
    coinbase: Uint8Array,
    merkleHashes: readonly Uint8Array[],
    transactionCount: number,
  ): Promise<SubmittedBlockInfo>;
  getEthWork(): Promise<EthWork>;
  /** A solution of `eth_getWork`'s work; `false` when it is stale, unknown or not enough work. */
  submitEthWork(nonce: Uint8Array, powHash: Uint8Array, mixDigest: Uint8Array): Promise<boolean>;
  submitHashrate(hashrate: bigint, id: Uint8Array): boolean;
  /** Hashes per second of the whole network, estimated from recent blocks. */
  netHashrate(): Promise<bigint>;
}

/** Accounts the node holds keys for. */
export interface AccountsView {
  list(): readonly Address[];
}

/**
 * The node's accounts and their keys: `eth_sign`, `eth_sendTransaction` and `personal_*`.
 * Failures are `WalletError`s; no method puts a key or a passphrase in an error or a log.
 */
export interface WalletService extends AccountsView {
  /** A new random key, stored encrypted with `passphrase`; the account starts locked. */
  newAccount(passphrase: string): Promise<Address>;
  /** Stores `privateKey` encrypted with `passphrase`; the account starts locked. */
  importRawKey(privateKey: Uint8Array, passphrase: string): Promise<Address>;
  /** The account of key keccak256(UTF-8 seed), held unlocked in memory until the node stops. */
  newAccountWithSeed(seed: string): Address;
  /** Unlocks for `seconds` (0: until the node stops); `false` when the passphrase is wrong. */
  unlock(address: Address, passphrase: string, seconds: number): Promise<boolean>;
  /** Locks a keystore account; `false` for accounts that cannot be locked. */
  lock(address: Address): boolean;
  /** The private key of an unlocked account. */
  dumpRawKey(address: Address): Uint8Array;
  /** `eth_sign`: 65 bytes r ‖ s ‖ v (27/28) over the prefixed message hash. */
  signMessage(address: Address, message: Uint8Array): Uint8Array;
  /**
   * `personal_sign`: as `signMessage`, with the unlocked key, or, when `passphrase` is given,
   * with the key it decrypts, for this call only.
   */
  signMessageWith(address: Address, message: Uint8Array, passphrase?: string): Promise<Uint8Array>;
  /**
   * `eth_signTypedData_v4`: 65 bytes r ‖ s ‖ v (27/28) over the EIP-712 digest of `typedData`;
   * a `WalletError` `INVALID_TYPED_DATA` when its values do not fit its types.
   */
  signTypedData(address: Address, typedData: TypedData): Promise<Uint8Array>;
  /**
   * Signs with EIP-155 for `chainId`: with the unlocked key, or, when `passphrase` is given,
   * with the key it decrypts, for this call only.
   */
  signTransaction(
    address: Address,
    tx: UnsignedTransaction,
    chainId: number,
    passphrase?: string,
  ): Promise<SignedTransaction>;
}

/**
 * Everything method handlers may use. `apps/node` builds it from the real packages;
 * each handler names the parts it needs.
 */
/**
 * Transactions run again with a tracer (`debug_trace*`, `trace_*`), on the state of kept
 * blocks. The chain package's `ChainReader` implements it.
 */
export interface TracingService {
  /** `null` when the transaction is unknown. */
  traceTransaction<T extends ExecutionTracer>(
    hash: Uint8Array,
    make: (found: IncludedTransaction) => T,
  ): Promise<{ readonly found: IncludedTransaction; readonly tracer: T } | null>;
  traceBlock<T extends ExecutionTracer>(
    block: StoredBlock,
    make: (tx: SignedTransaction, index: number) => T,
  ): Promise<TracedTransaction<T>[]>;
}

export interface RPCServices {
  readonly network: NetworkPreset;
  /** `Nodex/v<version>/<os>-<arch>/node<version>`. */
  readonly clientVersion: string;
  readonly chain: ChainView;
  readonly peers: PeersView;
  readonly mining: MiningView;
  readonly accounts: AccountsView;
  /** The node's keys; `eth_sign`, `eth_sendTransaction` and `personal_*` are served when present. */
  readonly wallet?: WalletService;
  /** Blocks, state, transactions, logs and calls; the chain methods are served when present. */
  readonly reader?: ChainReaderService;
  /** `eth_sendRawTransaction` (and the wallet's sends) are served when present. */
  readonly transactions?: TransactionService;
  /** The `txpool_` methods and `eth_pendingTransactions` are served when present. */
  readonly pool?: PoolView;
  /** The `evm_` methods are served when present (and the module is enabled). */
  readonly dev?: DevControls;
  /** The node's events: with `reader`, the filter methods are served. */
  readonly events?: NodeEvents;
  /** Merged-mining work and submissions; the `mnr_` and work methods are served when present. */
  readonly miner?: MinerService;
  /** Peer scoring and bans; the `sco_` methods are served when present. */
  readonly scoring?: ScoringView;
  /** With `reader`, the `debug_trace*` and `trace_*` methods are served when present. */
  readonly tracing?: TracingService;
  /**
   * Where traces and `eth_getLogs` run when present (the node's worker threads), so that they
   * do not hold the thread that answers every other request; on that thread when absent.
   */
  readonly heavy?: HeavyRequestService;
}

/** What a handler knows about the request it serves. */
export interface CallContext {
  /** True when the node runs with API keys (hosted mode). */
  readonly hosted: boolean;
  /** The id of the API key the request came with (hosted mode); never the key itself. */
  readonly keyId?: string;
  /** The WebSocket connection the request came over; absent over HTTP. */
  readonly connection?: SubscriptionHost;
}

/** The kinds of `eth_subscribe`. */
export type SubscriptionKind = "newHeads" | "logs" | "newPendingTransactions" | "syncing";

/** One `eth_subscribe`, decoded. */
export type SubscriptionRequest =
  | { readonly kind: "newHeads" | "syncing" }
  | { readonly kind: "logs"; readonly query: LogQuery }
  | { readonly kind: "newPendingTransactions"; readonly fullTransactions: boolean };

/** What `eth_subscribe` and `eth_unsubscribe` may do on the connection they came over. */
export interface SubscriptionHost {
  /** A new subscription's id; its notifications follow the answer that carries the id. */
  subscribe(request: SubscriptionRequest): string;
  /** `true` when `id` was a subscription of this connection. */
  unsubscribe(id: string): boolean;
}
