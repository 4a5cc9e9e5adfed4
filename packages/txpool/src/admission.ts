import type { ChainReader, HeadChange } from "@nodex/chain";
import { bytesToHex, decodeTransaction, type Logger, type SignedTransaction } from "@nodex/types";
import { TxPoolError, TxPoolErrorCode } from "./errors.js";
import type { AddResult, JournalLoadResult, PoolHead, TxPool } from "./txPool.js";

/** A transaction the pool took, and where it went. */
export interface Admitted extends AddResult {
  readonly tx: SignedTransaction;
}

/**
 * The one way into the pool, for every source alike (the RPC, the network, the journal):
 * decodes, checks the transaction is not in the chain already, and hands it to the pool's rules
 * (chain id, price, gas, nonce, balance, limits) against the head. Keeps the pool on the head:
 * each change of the head updates it before the next admission is checked.
 */
export class TxAdmission {
  readonly pool: TxPool;
  readonly #reader: ChainReader;
  readonly #log: Logger | undefined;
  /** The pool's update after the last change of the head (admissions wait for it). */
  #update: Promise<void> = Promise.resolve();
  readonly #unsubscribe: () => void;
  /** Told of each transaction the pool took through `admit`. */
  readonly #admittedListeners = new Set<(tx: SignedTransaction) => void>();

  constructor(reader: ChainReader, pool: TxPool, logger?: Logger) {
    this.pool = pool;
    this.#reader = reader;
    this.#log = logger;
    // Whatever moves the head (a block built here, a miner's, a reorganization, a rewind), the
    // pool drops what the new state makes stale and promotes what became executable.
    this.#unsubscribe = reader.chain.onHeadChange((change) => this.#onHeadChange(change));
  }

  #onHeadChange(change: HeadChange): void {
    const orphaned = orphanedTransactions(change);
    this.#update = this.#update
      .then(async () => {
        // What the new blocks hold leaves the pool first: a pool they empty (an automining
        // node's, after each block) has nothing to check against the new state, which is then
        // not opened.
        const mined = change.added.flatMap((block) =>
          block.block.transactions.map((tx) => tx.hash),
        );
        if (mined.length > 0) this.pool.remove(mined);
        // A reorganization: what the old branch had and the new one lacks waits again, as
        // geth re-injects it (a rewind by a development control restores its own pool).
        if (orphaned.length > 0) {
          const head = await this.poolHead();
          for (const tx of orphaned) await this.pool.add(tx, head).catch(() => undefined);
        }
        const { pending, queued } = this.pool.status();
        if (pending + queued > 0) await this.pool.onNewHead(await this.poolHead());
      })
      .catch((err: unknown) => {
        this.#log?.error("Updating the pool to the new head failed", {
          error: (err as Error).message,
        });
      });
  }

  /** Resolves once the pool has caught up with the last change of the head. */
  settled(): Promise<void> {
    return this.#update;
  }

  /** What the pool validates against: the head, its limits and its state. */
  async poolHead(): Promise<PoolHead> {
    const head = this.#reader.head.block.header;
    return {
      number: head.number,
      // The next block's (a development network may set it above the head's).
      gasLimit: this.#reader.nextBlockGasLimit(),
      minimumGasPrice: head.minimumGasPrice,
      // The accounts only, read from the head's trie: no state is opened for each new head.
      state: this.#reader.accountsAt(head),
    };
  }

  /**
   * Admits a signed transaction, raw or decoded. `local`: submitted to this node by a user
   * (kept across restarts in the journal, as geth keeps its RPC's transactions). Throws
   * `TxPoolError` with the reason when refused, a decode error for bytes that are not a
   * transaction, `StateError` (`STORAGE_UNAVAILABLE`) while the database takes no writes.
   */
  async admit(
    input: Uint8Array | SignedTransaction,
    opts: { local?: boolean; owner?: string } = {},
  ): Promise<Admitted> {
    const tx = input instanceof Uint8Array ? decodeTransaction(input) : input;
    // A node whose storage takes no writes could mine nothing it takes: it is refused here,
    // with the reason, rather than answered with a hash that never gets a block.
    this.#reader.chain.checkWritable();
    await this.#update;
    let added: AddResult;
    try {
      added = await this.pool.add(tx, await this.poolHead(), {
        local: opts.local ?? false,
        ...(opts.owner === undefined ? {} : { owner: opts.owner }),
      });
    } catch (err) {
      // The journal is on the node's disk: what failed it fails the database next.
      if (err instanceof TxPoolError && err.code === TxPoolErrorCode.JOURNAL_WRITE_FAILED)
        this.#reader.chain.reportStorageFailure(err);
      // A transaction in a block is refused by the pool (its nonce is below the sender's), and
      // is then said to be so with its block, in the words geth and Anvil use (`nonce too
      // low`), which ethers reads as NONCE_EXPIRED; a transaction still waiting stays `already
      // known`. Looked up only on a refusal: an index read that admissions otherwise never need.
      if (err instanceof TxPoolError) {
        const location = await this.#reader.chain.getTransactionLocation(tx.hash);
        if (location !== undefined) {
          throw new TxPoolError(
            TxPoolErrorCode.NONCE_TOO_LOW,
            `nonce too low: transaction ${bytesToHex(tx.hash)} is already in block ${bytesToHex(location.blockHash)}`,
            { hash: bytesToHex(tx.hash), blockHash: bytesToHex(location.blockHash) },
          );
        }
      }
      throw err;
    }
    for (const listener of this.#admittedListeners) {
      try {
        listener(tx);
      } catch (err) {
        this.#log?.error("An admission listener failed", { error: (err as Error).message });
      }
    }
    // Written out: a spread followed by more fields makes a hidden class per object on V8 11.
    return added.replaced === undefined
      ? { status: added.status, tx }
      : { status: added.status, replaced: added.replaced, tx };
  }

  /**
   * Calls `listener` with each transaction `admit` puts in the pool (pending or queued), before
   * `admit` resolves. Returns the function that unsubscribes.
   */
  onAdmitted(listener: (tx: SignedTransaction) => void): () => void {
    this.#admittedListeners.add(listener);
    return () => this.#admittedListeners.delete(listener);
  }

  /** Re-adds the journal's transactions (at start), against the head. */
  async loadJournal(): Promise<JournalLoadResult> {
    await this.#update;
    return this.pool.loadJournal(await this.poolHead());
  }

  /** Empties the pool, then admits `txs` again against the head (a development rewind). */
  async replaceAll(txs: readonly SignedTransaction[]): Promise<void> {
    await this.#update;
    this.pool.clear();
    const head = await this.poolHead();
    for (const tx of txs) await this.pool.add(tx, head).catch(() => undefined);
  }

  /** Stops following the head. */
  close(): void {
    this.#unsubscribe();
  }
}

/**
 * The transactions of blocks a reorganization took out of the canonical chain that the blocks
 * it put in do not have, in chain order. None for a plain new block or a rewind.
 */
function orphanedTransactions(change: HeadChange): SignedTransaction[] {
  if (change.removed.length === 0 || change.added.length === 0) return [];
  const kept = new Set<string>();
  for (const block of change.added)
    for (const tx of block.block.transactions) kept.add(bytesToHex(tx.hash));
  return change.removed.flatMap((block) =>
    block.block.transactions.filter((tx) => !kept.has(bytesToHex(tx.hash))),
  );
}
