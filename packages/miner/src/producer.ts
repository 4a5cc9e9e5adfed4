import {
  type BuiltBlock,
  type Chain,
  cumulativeDifficulty,
  type MinedBlock,
  type MineOptions,
  type PendingBlock,
  type PendingSource,
  type StateEdits,
} from "@nodex/chain";
import { decodeRevertReason } from "@nodex/evm";
import { StateError, StateErrorCode, type StateFile } from "@nodex/state";
import type { TxAdmission } from "@nodex/txpool";
import {
  type Address,
  bytesToHex,
  equalBytes,
  headerHash,
  impersonatedTransaction,
  type Logger,
  type SignedTransaction,
  type UnsignedTransaction,
} from "@nodex/types";
import { MinerError, MinerErrorCode } from "./errors.js";

/** Failures to read a fork's state from its upstream (`@nodex/state`'s fork codes). */
const FORK_STATE_FAILURES: ReadonlySet<string> = new Set([
  StateErrorCode.UPSTREAM_UNAVAILABLE,
  StateErrorCode.UPSTREAM_ERROR,
  StateErrorCode.UPSTREAM_CLOSED,
  StateErrorCode.FORK_UNVERIFIED,
  StateErrorCode.FORK_NODE_UNAVAILABLE,
]);
/** The least and most gas limit `evm_setBlockGasLimit` takes. */
const MIN_BLOCK_GAS_LIMIT = 21_000n;
const MAX_BLOCK_GAS_LIMIT = 1n << 63n;
/** The most blocks one `hardhat_mine` makes (each is a real block, executed and written). */
export const MAX_BLOCKS_AT_ONCE = 100_000n;

function nowSeconds(): bigint {
  return BigInt(Math.floor(Date.now() / 1000));
}

/** One edit of the state after the head (see `BlockProducer.editState`). */
export type StateEdit = { readonly method: string; readonly address: Address } & (
  | { readonly kind: "balance"; readonly balance: bigint }
  | { readonly kind: "code"; readonly code: Uint8Array }
  | { readonly kind: "nonce"; readonly nonce: bigint }
  | { readonly kind: "storage"; readonly slot: Uint8Array; readonly value: Uint8Array }
);

export interface BlockProducerOptions {
  /**
   * Whether this node makes its own blocks (regtest and devnet): of each transaction as it
   * arrives (automine), or every `mineInterval` seconds. Elsewhere merged miners make them.
   */
  readonly automine: boolean;
  /** Seconds between blocks; 0 (the default) mines a block for each transaction received. */
  readonly mineInterval?: number;
  /**
   * With `automine`: `false` starts with block production stopped, as after `evm_stopMining`
   * (a node that follows another one's blocks); `evm_mine` still makes a block. Default `true`.
   */
  readonly startMining?: boolean;
  /** Beneficiary of the blocks made here. */
  readonly coinbase: () => Address;
  /**
   * Development networks: the gas limit of the blocks made here (`--block-gas-limit`), which
   * calls and the pool use at once; the parent's when absent. `evm_setBlockGasLimit` changes
   * it, `evm_reset` puts it back.
   */
  readonly blockGasLimit?: bigint;
  /**
   * What `evm_reset` does once the chain is back at its first block with no edits of state: a
   * fork funds the development accounts again on the upstream's state, as when it started.
   */
  readonly afterReset?: () => Promise<void>;
  readonly logger: Logger;
}

/** What `evm_snapshot` remembers: the head, the waiting transactions, the clock offset. */
interface Snapshot {
  readonly head: bigint;
  readonly waiting: readonly SignedTransaction[];
  readonly timeOffset: bigint;
  readonly nextTimestamp: bigint | undefined;
  readonly stateEdits: StateEdits;
}

/**
 * Block production on the node's own account: automine (a block per transaction received),
 * interval mining, the development controls behind the `evm_` methods (mine, snapshot and
 * revert, reset, increase time, start and stop), and the `pending` block that the chain reader
 * answers for. Blocks go through the chain's single writer; the pool follows the head through
 * the chain's head event.
 */
export class BlockProducer implements PendingSource {
  readonly automine: boolean;
  readonly mineInterval: number;
  readonly #chain: Chain;
  readonly #admission: TxAdmission;
  readonly #coinbase: () => Address;
  readonly #log: Logger;
  readonly #startMining: boolean;
  readonly #configuredGasLimit: bigint | undefined;
  readonly #afterReset: (() => Promise<void>) | undefined;
  /** Whether a block is mined for each transaction received (off: they wait for `minePending`). */
  #autoMining: boolean;
  /** Whether automine is wanted (configured, or set by `evm_setAutomine`) when mining runs. */
  #automineWanted: boolean;
  /** Milliseconds between interval blocks; 0 for none. */
  #intervalMs: number;
  /** Whether blocks are made at all (`evm_stopMining` stops both automine and the interval). */
  #miningStopped = false;
  /** Seconds added to the clock for new blocks (`evm_increaseTime`, `evm_mine` with a time). */
  #timeOffset = 0n;
  /** The next block's time (`evm_setNextBlockTimestamp`), used once. */
  #nextTimestamp: bigint | undefined;
  /** The gas limit of the next blocks (`evm_setBlockGasLimit`); the parent's when absent. */
  #gasLimit: bigint | undefined;
  /** The beneficiary of the next blocks (`hardhat_setCoinbase`); the configured one when absent. */
  #coinbaseOverride: Address | undefined;
  /** Accounts whose transactions the node sends without their keys (`hardhat_impersonateAccount`). */
  readonly #impersonated = new Set<string>();
  #autoImpersonate = false;
  readonly #snapshots = new Map<bigint, Snapshot>();
  #nextSnapshot = 1n;
  #pendingBlock: { key: string; block: Promise<PendingBlock> } | undefined;
  #interval: { timer: NodeJS.Timeout; current: Promise<unknown> } | undefined;
  /** Block making in progress: one block at a time. */
  #queue: Promise<unknown> = Promise.resolve();

  constructor(chain: Chain, admission: TxAdmission, opts: BlockProducerOptions) {
    this.#chain = chain;
    this.#admission = admission;
    this.automine = opts.automine;
    this.mineInterval = opts.mineInterval ?? 0;
    this.#autoMining = this.automine && this.mineInterval === 0;
    this.#automineWanted = this.#autoMining;
    this.#intervalMs = this.mineInterval * 1000;
    this.#coinbase = opts.coinbase;
    this.#configuredGasLimit = opts.blockGasLimit;
    this.#gasLimit = opts.blockGasLimit;
    this.#afterReset = opts.afterReset;
    this.#log = opts.logger;
    this.#startMining = opts.startMining ?? true;
    // A new head makes the pending block stale, whatever moved it.
    chain.onHeadChange(() => {
      this.#pendingBlock = undefined;
    });
    // Storage that takes writes again: what waited while it did not is mined now.
    chain.onStorageChange((health) => {
      if (!health.writable || !this.#autoMining || !this.hasPending()) return;
      this.#minePending().catch((err: unknown) => {
        this.#log.error("Mining the waiting transactions failed", {
          error: (err as Error).message,
        });
      });
    });
  }

  /**
   * Puts the journaled transactions back in the pool and starts the configured block
   * production: with automine, what came back is mined now, as if just received; with an
   * interval, the timer starts.
   */
  async start(): Promise<void> {
    const journal = await this.#admission.loadJournal();
    if (journal.loaded + journal.dropped > 0) {
      this.#log.info("Loaded the pending transactions kept in the journal", {
        loaded: journal.loaded,
        dropped: journal.dropped,
      });
      for (const reason of journal.reasons)
        this.#log.warn("Dropped a journaled transaction", { reason });
    }
    if (this.automine) await this.setMining(this.#startMining);
    else if (this.mineInterval > 0 && this.#startMining) this.#startIntervalMs(this.#intervalMs);
  }

  /** Stops the interval timer and waits for a block being mined. */
  async stop(): Promise<void> {
    const interval = this.#interval;
    if (interval === undefined) return;
    clearInterval(interval.timer);
    this.#interval = undefined;
    await interval.current;
  }

  #startIntervalMs(ms: number): void {
    if (this.#interval !== undefined) return;
    const interval = { timer: undefined as unknown as NodeJS.Timeout, current: Promise.resolve() };
    interval.timer = setInterval(() => {
      // No block while the storage takes no writes (the node says so once, not at each tick).
      if (!this.#chain.storage().writable) return;
      interval.current = interval.current.then(() =>
        this.minePending().then(
          () => undefined,
          (err: unknown) => {
            this.#log.error("Interval mining failed", { error: (err as Error).message });
          },
        ),
      );
    }, ms);
    this.#interval = interval;
    this.#log.info("Mining a block at each interval", { seconds: ms / 1000 });
  }

  /**
   * Admits a transaction (see `TxAdmission.admit`); with automine, mines the pool's executable
   * transactions at once (a block as Hardhat makes one per transaction) and throws
   * `MinerError` (`TRANSACTION_REJECTED`) when that block could not include it. Returns the
   * transaction's hash: by default once that block is the head; with `wait: "built"` as soon
   * as it is built, while it is sealed and written (a caller that reads the chain next first
   * awaits `Chain.writing()`, as the RPC layer does). A block that is then lost (its write
   * failed) leaves the transaction waiting in the pool for the next one.
   */
  async sendTransaction(
    input: Uint8Array | SignedTransaction,
    opts: { local?: boolean; owner?: string; wait?: "head" | "built" } = {},
  ): Promise<Uint8Array> {
    const { tx, status } = await this.#admission.admit(input, opts);
    if (!this.#autoMining || status !== "pending") return tx.hash;
    const pool = this.#admission.pool;
    // Sends that arrive together share blocks: a block mined for an earlier send may have taken
    // this one already, and then no block is made for it.
    const mine = (onBuilt?: (block: BuiltBlock) => void) =>
      this.#enqueue(() =>
        pool.get(tx.hash) === undefined
          ? Promise.resolve(undefined)
          : this.#mineNow(undefined, onBuilt),
      );
    let mined: BuiltBlock | undefined;
    try {
      mined =
        opts.wait === "built"
          ? await new Promise<BuiltBlock | undefined>((resolve, reject) => {
              // The first to come wins: the built block, or what went wrong before it.
              mine(resolve).then(resolve, reject);
            })
          : await mine();
    } catch (err) {
      // Taken (and journaled, if local) before the storage stopped taking writes: it waits in
      // the pool, and is mined once writes land again.
      if (err instanceof StateError && err.code === StateErrorCode.STORAGE_UNAVAILABLE)
        return tx.hash;
      // A fork's upstream did not give the state the block needs (down, or its answer did not
      // hold up): the sender hears why, and the transaction is not kept, since nothing would
      // mine it once the upstream is back; sending it again is the retry.
      if (err instanceof StateError && FORK_STATE_FAILURES.has(err.code)) pool.remove([tx.hash]);
      throw err;
    }
    const rejected = mined?.rejected.find((r) => equalBytes(r.tx.hash, tx.hash));
    if (rejected !== undefined) {
      pool.remove([tx.hash]);
      throw new MinerError(MinerErrorCode.TRANSACTION_REJECTED, rejected.error.message, {
        hash: bytesToHex(tx.hash),
      });
    }
    // Mined, and failed: said as the reference node and Hardhat say it, so that the sender
    // hears the reason (the transaction is in the block, with its receipt of status 0).
    const failed = mined?.failed.find((f) => equalBytes(f.tx.hash, tx.hash));
    if (failed !== undefined) {
      const reason = failed.error === "revert" ? decodeRevertReason(failed.returnValue) : undefined;
      const why =
        failed.error !== "revert"
          ? failed.error
          : reason === undefined
            ? "transaction reverted"
            : `revert ${reason}`;
      throw new MinerError(
        MinerErrorCode.TRANSACTION_REVERTED,
        `VM Exception while processing transaction: ${why}`,
        {
          hash: bytesToHex(tx.hash),
          ...(failed.error === "revert" || failed.returnValue.length > 0
            ? { data: bytesToHex(failed.returnValue) }
            : {}),
        },
      );
    }
    return tx.hash;
  }

  /**
   * Mines one block (interval mining) with the waiting transactions that can run, each sender's
   * in nonce order. Those whose turn has not come (a nonce gap, no room left in the block) wait
   * for the next block; those that can never run are dropped. `undefined` while mining is
   * stopped.
   */
  async minePending(): Promise<MinedBlock | undefined> {
    if (this.#miningStopped) return undefined;
    return this.#minePending();
  }

  #minePending(timestamp?: bigint): Promise<MinedBlock> {
    return this.#enqueue(() => this.#mineNow(timestamp));
  }

  /** Runs block-making steps one at a time, so each reads the pool after the last block. */
  #enqueue<T>(work: () => Promise<T>): Promise<T> {
    const run = this.#queue.then(work);
    this.#queue = run.catch(() => {});
    return run;
  }

  async #mineNow(timestamp?: bigint, onBuilt?: (block: BuiltBlock) => void): Promise<MinedBlock> {
    const pool = this.#admission.pool;
    await this.#admission.settled();
    const mined = await this.#chain.mine(pool.pending(), this.#mineOptions(timestamp), onBuilt);
    // The new head's update (TxAdmission) takes what the block took out of the pool and drops
    // what became stale.
    await this.#admission.settled();
    return mined;
  }

  #mineOptions(timestamp?: bigint): MineOptions {
    const coinbase = this.#coinbaseOverride ?? this.#coinbase();
    const gasLimit = this.#gasLimit;
    let time = timestamp;
    if (time === undefined && this.#nextTimestamp !== undefined) {
      // Used once; the clock of later blocks continues from it.
      time = this.#nextTimestamp;
      this.#nextTimestamp = undefined;
      this.#timeOffset = time - nowSeconds();
    }
    if (time === undefined && this.#timeOffset !== 0n) time = nowSeconds() + this.#timeOffset;
    return {
      coinbase,
      ...(time === undefined ? {} : { timestamp: time }),
      ...(gasLimit === undefined ? {} : { gasLimit }),
    };
  }

  // The pending block, for the chain reader.

  hasPending(): boolean {
    return this.#admission.pool.status().pending > 0;
  }

  /**
   * The `pending` block: built on the head from the transactions waiting for a block, with the
   * state after them. Rebuilt when the head or the waiting transactions change.
   */
  pendingBlock(): Promise<PendingBlock> {
    const head = this.#chain.head;
    const pool = this.#admission.pool;
    const key = `${bytesToHex(head.hash)}:${pool.version}`;
    if (this.#pendingBlock?.key !== key) {
      const time = this.nextBlockTime();
      const opts: MineOptions = {
        coinbase: this.#coinbaseOverride ?? this.#coinbase(),
        ...(this.#gasLimit === undefined ? {} : { gasLimit: this.#gasLimit }),
        ...(time === undefined ? {} : { timestamp: time }),
      };
      const block = this.#chain.buildTemplate(pool.pending(), opts).then(
        (template): PendingBlock => ({
          block: template.block,
          hash: headerHash(template.block.header),
          totalDifficulty: head.totalDifficulty + cumulativeDifficulty(template.block),
          pending: true,
          state: template.state,
          receipts: template.receipts,
        }),
      );
      block.catch(() => {
        if (this.#pendingBlock?.key === key) this.#pendingBlock = undefined;
      });
      this.#pendingBlock = { key, block };
    }
    return this.#pendingBlock.block;
  }

  pendingNonce(address: Address, stateNonce: bigint): bigint {
    return this.#admission.pool.pendingNonce(address, stateNonce);
  }

  pendingTransaction(hash: Uint8Array): SignedTransaction | undefined {
    return this.#admission.pool.get(hash)?.tx;
  }

  /** The pool's executable transactions, in the order the next block takes them. */
  pendingTransactions(): SignedTransaction[] {
    return this.#admission.pool.pending();
  }

  // Development controls: the evm_ methods (regtest and devnet).

  /** `evm_snapshot`: remembers the head, the waiting transactions and the clock; its id. */
  snapshot(): bigint {
    const id = this.#nextSnapshot++;
    this.#snapshots.set(id, {
      head: this.#chain.head.block.header.number,
      waiting: this.#waiting(),
      timeOffset: this.#timeOffset,
      nextTimestamp: this.#nextTimestamp,
      stateEdits: this.#chain.stateEdits(),
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
    await this.#chain.rewindTo(snapshot.head, snapshot.stateEdits);
    await this.#admission.replaceAll(snapshot.waiting);
    this.#timeOffset = snapshot.timeOffset;
    this.#nextTimestamp = snapshot.nextTimestamp;
    this.#pendingBlock = undefined;
    return true;
  }

  /**
   * `evm_reset`: back to the chain's first block (genesis, or the anchor of an anchored chain),
   * nothing waiting, no snapshots, the real clock; then `afterReset`.
   */
  async reset(): Promise<void> {
    this.#snapshots.clear();
    await this.#chain.rewindTo(this.#chain.firstBlock.number);
    await this.#afterReset?.();
    await this.#admission.replaceAll([]);
    this.#timeOffset = 0n;
    this.#nextTimestamp = undefined;
    this.#gasLimit = this.#configuredGasLimit;
    this.#coinbaseOverride = undefined;
    this.#impersonated.clear();
    this.#autoImpersonate = false;
    this.#pendingBlock = undefined;
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
      const head = this.#chain.head.block.header.timestamp;
      if (timestamp <= head) {
        throw new MinerError(
          MinerErrorCode.INVALID_TIMESTAMP,
          `timestamp ${timestamp} is not after the head's ${head}`,
        );
      }
      this.#timeOffset = timestamp - nowSeconds();
      this.#nextTimestamp = undefined;
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
    this.#autoMining = on && this.#automineWanted;
    if (!on) await this.stop();
    else if (this.#intervalMs > 0 && this.#interval === undefined)
      this.#startIntervalMs(this.#intervalMs);
    if (this.#autoMining && this.hasPending()) await this.#minePending();
  }

  /**
   * `evm_setAutomine` (`hardhat_`/`anvil_`): whether a block is mined for each transaction
   * received. Off, transactions wait for `evm_mine` or the interval; on, what waits is mined now.
   */
  async setAutomine(on: boolean): Promise<void> {
    this.#requireBlockProduction("evm_setAutomine");
    this.#automineWanted = on;
    this.#autoMining = on && !this.#miningStopped;
    if (this.#autoMining && this.hasPending()) await this.#minePending();
  }

  /** Whether a block is mined for each transaction received (`hardhat_getAutomine`). */
  get automining(): boolean {
    return this.#autoMining;
  }

  /**
   * `evm_setIntervalMining`: a block every `ms` milliseconds (whole seconds or not), 0 for none.
   * Automine is left as it is, as Hardhat leaves it.
   */
  async setIntervalMining(ms: number): Promise<void> {
    this.#requireBlockProduction("evm_setIntervalMining");
    await this.stop();
    this.#intervalMs = ms;
    if (ms > 0) this.#startIntervalMs(ms);
  }

  /**
   * `evm_setNextBlockTimestamp`: the next block's time, after the head's; later blocks continue
   * from it.
   */
  setNextBlockTimestamp(timestamp: bigint): void {
    this.#requireBlockProduction("evm_setNextBlockTimestamp");
    const head = this.#chain.head.block.header.timestamp;
    if (timestamp <= head) {
      throw new MinerError(
        MinerErrorCode.INVALID_TIMESTAMP,
        `timestamp ${timestamp} is lower than or equal to the head's ${head}`,
      );
    }
    this.#nextTimestamp = timestamp;
    this.#pendingBlock = undefined;
  }

  /** `evm_setBlockGasLimit`: the gas limit of the next blocks. */
  setBlockGasLimit(gasLimit: bigint): void {
    this.#requireBlockProduction("evm_setBlockGasLimit");
    if (gasLimit < MIN_BLOCK_GAS_LIMIT || gasLimit > MAX_BLOCK_GAS_LIMIT) {
      throw new MinerError(
        MinerErrorCode.INVALID_ARGUMENT,
        `block gas limit must be between ${MIN_BLOCK_GAS_LIMIT} and ${MAX_BLOCK_GAS_LIMIT}, got ${gasLimit}`,
      );
    }
    this.#gasLimit = gasLimit;
    this.#pendingBlock = undefined;
  }

  /** `hardhat_setCoinbase`: the beneficiary of the next blocks. */
  setCoinbase(address: Address): void {
    this.#requireBlockProduction("hardhat_setCoinbase");
    this.#coinbaseOverride = address;
    this.#pendingBlock = undefined;
  }

  /**
   * The next block's time when the node's clock is moved (`evm_increaseTime`,
   * `evm_setNextBlockTimestamp`); `undefined` while it is the wall clock. Calls run at it.
   */
  nextBlockTime(): bigint | undefined {
    if (this.#nextTimestamp !== undefined) return this.#nextTimestamp;
    return this.#timeOffset === 0n ? undefined : nowSeconds() + this.#timeOffset;
  }

  /** The gas limit of the next block when this node sets it; the head's otherwise. */
  nextGasLimit(): bigint | undefined {
    return this.automine ? this.#gasLimit : undefined;
  }

  /** The beneficiary of the next block. */
  get coinbase(): Address {
    return this.#coinbaseOverride ?? this.#coinbase();
  }

  /**
   * `hardhat_mine`: `count` blocks (at least 1), the waiting transactions in the first ones;
   * with `interval`, each block's time is the last one's plus `interval` seconds, and the clock
   * of later blocks continues from the last. Returns the last block.
   */
  async mineBlocks(count: bigint, interval?: bigint): Promise<MinedBlock> {
    this.#requireBlockProduction("hardhat_mine");
    if (count < 1n || count > MAX_BLOCKS_AT_ONCE) {
      throw new MinerError(
        MinerErrorCode.INVALID_ARGUMENT,
        `the number of blocks must be between 1 and ${MAX_BLOCKS_AT_ONCE}, got ${count}`,
      );
    }
    // An interval of 0 (viem's test client sends it) is the default spacing: block times still
    // increase, by at least a second.
    const step = interval === 0n ? undefined : interval;
    let last = await this.#minePending();
    for (let i = 1n; i < count; i++) {
      const timestamp = interval === undefined ? undefined : last.block.header.timestamp + interval;
      last = await this.#minePending(timestamp);
    }
    if (step !== undefined && count > 1n)
      this.#timeOffset = last.block.header.timestamp - nowSeconds();
    return last;
  }

  /**
   * `hardhat_dropTransaction`: removes a waiting transaction; `false` when none has that hash.
   * Throws for one already in a block.
   */
  async dropTransaction(hash: Uint8Array): Promise<boolean> {
    this.#requireBlockProduction("hardhat_dropTransaction");
    await this.#admission.settled();
    if (this.#admission.pool.get(hash) !== undefined) {
      this.#admission.pool.remove([hash]);
      return true;
    }
    if ((await this.#chain.getTransactionLocation(hash)) !== undefined) {
      throw new MinerError(
        MinerErrorCode.INVALID_ARGUMENT,
        `transaction ${bytesToHex(hash)} cannot be dropped: it is already in a block`,
      );
    }
    return false;
  }

  /**
   * `hardhat_setBalance`, `_setCode`, `_setNonce`, `_setStorageAt`: changes the state after the
   * head without a block (see `Chain.editHeadState`). The waiting transactions are checked
   * again against the new state; `setNonce` is refused while the account has some, as Hardhat
   * refuses it.
   */
  async editState(edit: StateEdit): Promise<void> {
    this.#requireBlockProduction(edit.method);
    if (edit.kind === "nonce") {
      await this.#admission.settled();
      const { pending, queued } = this.#admission.pool.content();
      const key = bytesToHex(edit.address);
      const waits = (pending.get(key)?.length ?? 0) + (queued.get(key)?.length ?? 0);
      if (waits > 0) {
        throw new MinerError(
          MinerErrorCode.INVALID_ARGUMENT,
          `cannot set the nonce of ${bytesToHex(edit.address)} while ${waits} of its transactions wait for a block`,
        );
      }
    }
    await this.#enqueue(async () => {
      await this.#chain.editHeadState(async (state) => {
        switch (edit.kind) {
          case "balance":
            return state.setBalance(edit.address, edit.balance);
          case "code":
            return state.setCode(edit.address, edit.code);
          case "nonce":
            return state.setNonce(edit.address, edit.nonce);
          case "storage":
            return state.setStorage(edit.address, edit.slot, edit.value);
        }
      });
      this.#pendingBlock = undefined;
      if (this.hasPending()) await this.#admission.replaceAll(this.#waiting());
    });
  }

  /** `anvil_dumpState`: the state after the head, as a file holds it. */
  dumpState(): Promise<StateFile> {
    this.#requireBlockProduction("anvil_dumpState");
    return this.#chain.dumpHeadState();
  }

  /**
   * `anvil_loadState`, `--state`: makes a dumped state the state after the head (the whole
   * state: accounts the dump does not hold are gone). The waiting transactions are checked
   * again against it.
   */
  async loadState(file: StateFile): Promise<void> {
    this.#requireBlockProduction("anvil_loadState");
    await this.#enqueue(async () => {
      await this.#chain.loadHeadState(file);
      this.#pendingBlock = undefined;
      if (this.hasPending()) await this.#admission.replaceAll(this.#waiting());
    });
  }

  /** `hardhat_impersonateAccount`: the node sends `address`'s transactions without its key. */
  impersonate(address: Address): void {
    this.#requireBlockProduction("hardhat_impersonateAccount");
    this.#impersonated.add(bytesToHex(address));
  }

  /** `hardhat_stopImpersonatingAccount`: `false` when `address` was not impersonated. */
  stopImpersonating(address: Address): boolean {
    this.#requireBlockProduction("hardhat_stopImpersonatingAccount");
    return this.#impersonated.delete(bytesToHex(address));
  }

  /** `anvil_autoImpersonateAccount`: every account is impersonated while on. */
  setAutoImpersonate(on: boolean): void {
    this.#requireBlockProduction("anvil_autoImpersonateAccount");
    this.#autoImpersonate = on;
  }

  /** Whether the node sends `address`'s transactions without its key. */
  isImpersonated(address: Address): boolean {
    return this.automine && (this.#autoImpersonate || this.#impersonated.has(bytesToHex(address)));
  }

  /**
   * Sends `tx` from an impersonated account without its key (`eth_sendTransaction` from it): as
   * `sendTransaction`, with a placeholder signature (see `impersonatedTransaction`). With
   * `anyAccount`, from any account (`eth_sendUnsignedTransaction`, which asks for it by name,
   * as Anvil takes it).
   */
  sendImpersonated(
    tx: UnsignedTransaction,
    from: Address,
    opts: { wait?: "head" | "built"; anyAccount?: boolean } = {},
  ): Promise<Uint8Array> {
    this.#requireBlockProduction("eth_sendUnsignedTransaction");
    if (opts.anyAccount !== true && !this.isImpersonated(from)) {
      throw new MinerError(
        MinerErrorCode.NOT_IMPERSONATED,
        `account ${bytesToHex(from)} is not impersonated: call hardhat_impersonateAccount first`,
      );
    }
    const signed = impersonatedTransaction(tx, from, this.#chain.network.chainId);
    return this.sendTransaction(signed, {
      local: true,
      ...(opts.wait === undefined ? {} : { wait: opts.wait }),
    });
  }

  /** The snapshots `revert` can still go back to. */
  get snapshotCount(): number {
    return this.#snapshots.size;
  }

  get miningStopped(): boolean {
    return this.#miningStopped;
  }

  /** Development networks make their own blocks; elsewhere only merged miners do. */
  #requireBlockProduction(method: string): void {
    if (this.automine) return;
    throw new MinerError(
      MinerErrorCode.NOT_SUPPORTED,
      `${method} works on regtest and devnet only: blocks of ${this.#chain.network.name} are made by merged miners`,
    );
  }

  /** Every transaction in the pool, pending and queued, each sender's in nonce order. */
  #waiting(): SignedTransaction[] {
    const { pending, queued } = this.#admission.pool.content();
    return [...pending.values(), ...queued.values()].flat();
  }
}
