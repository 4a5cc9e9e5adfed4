import {
  type BuiltBlock,
  type Chain,
  cumulativeDifficulty,
  type MinedBlock,
  type MineOptions,
  type PendingBlock,
  type PendingSource,
} from "@nodex/chain";
import { decodeRevertReason } from "@nodex/evm";
import { StateError, StateErrorCode } from "@nodex/state";
import type { TxAdmission } from "@nodex/txpool";
import {
  type Address,
  bytesToHex,
  equalBytes,
  headerHash,
  type Logger,
  type SignedTransaction,
} from "@nodex/types";
import { MinerError, MinerErrorCode } from "./errors.js";

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
  readonly logger: Logger;
}

/** What `evm_snapshot` remembers: the head, the waiting transactions, the clock offset. */
interface Snapshot {
  readonly head: bigint;
  readonly waiting: readonly SignedTransaction[];
  readonly timeOffset: bigint;
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
  /** Whether a block is mined for each transaction received (off: they wait for `minePending`). */
  #autoMining: boolean;
  /** Whether blocks are made at all (`evm_stopMining` stops both automine and the interval). */
  #miningStopped = false;
  /** Seconds added to the clock for new blocks (`evm_increaseTime`, `evm_mine` with a time). */
  #timeOffset = 0n;
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
    this.#coinbase = opts.coinbase;
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
    if (this.mineInterval > 0 && this.#startMining) this.#startInterval(this.mineInterval);
  }

  /** Stops the interval timer and waits for a block being mined. */
  async stop(): Promise<void> {
    const interval = this.#interval;
    if (interval === undefined) return;
    clearInterval(interval.timer);
    this.#interval = undefined;
    await interval.current;
  }

  #startInterval(seconds: number): void {
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
    }, seconds * 1000);
    this.#interval = interval;
    this.#log.info("Mining a block at each interval", { seconds });
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
    opts: { local?: boolean; wait?: "head" | "built" } = {},
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
          ...(failed.returnValue.length > 0 ? { data: bytesToHex(failed.returnValue) } : {}),
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
    if (timestamp !== undefined) return { coinbase: this.#coinbase(), timestamp };
    if (this.#timeOffset === 0n) return { coinbase: this.#coinbase() };
    return {
      coinbase: this.#coinbase(),
      timestamp: BigInt(Math.floor(Date.now() / 1000)) + this.#timeOffset,
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
      const block = this.#chain.buildTemplate(pool.pending(), { coinbase: this.#coinbase() }).then(
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
    await this.#chain.rewindTo(snapshot.head);
    await this.#admission.replaceAll(snapshot.waiting);
    this.#timeOffset = snapshot.timeOffset;
    return true;
  }

  /** `evm_reset`: back to genesis, nothing waiting, no snapshots, the real clock. */
  async reset(): Promise<void> {
    this.#snapshots.clear();
    await this.#chain.rewindTo(0n);
    await this.#admission.replaceAll([]);
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
      const head = this.#chain.head.block.header.timestamp;
      if (timestamp <= head) {
        throw new MinerError(
          MinerErrorCode.INVALID_TIMESTAMP,
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
    if (this.#autoMining && this.hasPending()) await this.#minePending();
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
