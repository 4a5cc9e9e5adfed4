import { intrinsicGas } from "@nodex/evm";
import {
  type Address,
  bytesToHex,
  decodeImpersonatedTransaction,
  decodeTransaction,
  isImpersonatedTransaction,
  type SignedTransaction,
} from "@nodex/types";
import { chainIdMismatch, TxPoolError, TxPoolErrorCode, typedNotActive } from "./errors.js";
import { Heap } from "./heap.js";
import {
  appendJournal,
  closeJournal,
  type JournalEntry,
  openJournalForAppend,
  readJournal,
  writeJournal,
} from "./journal.js";
import { type ResolvedTxPoolOptions, resolveTxPoolOptions, type TxPoolOptions } from "./options.js";

/** What the pool reads of the head's state: an account's nonce and balance, in one read. */
export interface PoolAccountState {
  /** `undefined` for an account the state does not have (nonce 0, no balance). */
  getAccount(a: Address): Promise<{ readonly nonce: bigint; readonly balance: bigint } | undefined>;
}

/** The head the pool validates against: its number, limits and state. */
export interface PoolHead {
  readonly number: bigint;
  readonly gasLimit: bigint;
  readonly minimumGasPrice: bigint;
  readonly state: PoolAccountState;
}

/** `pending`: executable from the account's nonce without a gap; `queued`: the others. */
export type PoolStatus = "pending" | "queued";

export interface AddResult {
  readonly status: PoolStatus;
  /** The transaction of the same sender and nonce this one replaced. */
  readonly replaced?: SignedTransaction;
}

export interface JournalLoadResult {
  readonly loaded: number;
  readonly dropped: number;
  /** Why each dropped transaction or unreadable line was dropped, one sentence each. */
  readonly reasons: readonly string[];
}

interface Entry {
  readonly tx: SignedTransaction;
  /** Hash as lowercase 0x hex. */
  readonly key: string;
  readonly account: Account;
  /** gasLimit × gasPrice + value: what the sender must hold for it. */
  readonly cost: bigint;
  readonly local: boolean;
  /** The API key it came with (a hosted node's user): counted against `ownerSlots`. */
  readonly owner: string | undefined;
  readonly seq: number;
  status: PoolStatus;
  /** When it last became queued (ms), for expiry. */
  queuedSince: number;
}

interface Account {
  /** Sender as lowercase 0x hex. */
  readonly key: string;
  readonly address: Address;
  /** The account's nonce in the last state seen: pending transactions are base … base+pendingCount-1. */
  base: bigint;
  readonly txs: Map<bigint, Entry>;
  pendingCount: number;
  /** Sum of the pending transactions' costs. */
  pendingCost: bigint;
}

/**
 * The transaction pool: validates transactions against a head, keeps them pending (executable
 * now) or queued (after a nonce gap, or waiting for room), replaces by gas price bump, bounds
 * itself per sender and globally, evicts the cheapest remote transaction when full, orders the
 * pending ones by price and nonce for the next block, and journals local transactions.
 *
 * State is read (awaited) before any change is made, so calls may overlap: each change itself is
 * synchronous.
 */
/** Stale journal lines tolerated before a rewrite, however few transactions are live. */
const JOURNAL_STALE_MIN = 256;
/** Bytes appended to the journal after which its stale lines are dropped, however few. */
const JOURNAL_STALE_BYTES = 4 * 1024 * 1024;

export class TxPool {
  readonly #opts: ResolvedTxPoolOptions;
  readonly #all = new Map<string, Entry>();
  /**
   * Remote transactions by status, cheapest first: where evictions look. An entry stays in its
   * heap after it leaves the pool or changes status, and is dropped when it reaches the top.
   */
  readonly #evictable = {
    pending: new Heap<Entry>(evictsFirst),
    queued: new Heap<Entry>(evictsFirst),
  };
  readonly #accounts = new Map<string, Account>();
  #pendingCount = 0;
  #version = 0;
  #queuedCount = 0;
  #seq = 0;
  #localCount = 0;
  /** Transactions in the pool by owner (API key id). */
  readonly #byOwner = new Map<string, number>();
  #journalDirty = false;
  #journalError: unknown;
  #loadingJournal = false;
  /** The journal open for appending, between two rewrites. */
  #journalFile: number | undefined;
  /** Transaction lines in the journal file: the live locals plus those that left the pool. */
  #journalLines = 0;
  /** Bytes of transaction lines appended since the journal was last written whole. */
  #journalAppended = 0;

  constructor(opts: TxPoolOptions) {
    this.#opts = resolveTxPoolOptions(opts);
  }

  /**
   * Validates `tx` against `head` and adds it. `local` marks the transactions of the node's
   * users: journaled, never evicted for a better-paying one, and, unless they have an `owner`,
   * not bound by the global limits. `owner` (an API key's id, on a hosted node) is bound by
   * them as remote transactions are, and by `ownerSlots`. Throws `TxPoolError` with the
   * reason when refused.
   */
  async add(
    tx: SignedTransaction,
    head: PoolHead,
    opts: { local?: boolean; owner?: string } = {},
  ): Promise<AddResult> {
    const local = opts.local === true;
    const owner = opts.owner;
    const key = bytesToHex(tx.hash);
    this.#checkKnown(key);
    this.#checkStatic(tx, head);
    const account = await head.state.getAccount(tx.from);
    const stateNonce = account?.nonce ?? 0n;
    const balance = account?.balance ?? 0n;
    this.#checkKnown(key);
    const { result, journal } = this.#admit(tx, key, local, owner, stateNonce, balance);
    // A local transaction's line is written by `#admit`; a remote one that replaced a local
    // one leaves a stale line.
    if (journal && !local) this.#journalLeft();
    return result;
  }

  /**
   * Brings the pool to a new head (a new block, a reorganization or a revert): drops the
   * transactions whose nonce is below the account's or that the balance no longer covers,
   * recomputes pending and queued from the account's nonce (promoting what a filled gap frees,
   * demoting what a lower nonce leaves behind a gap), then expires remote queued transactions
   * older than `lifetimeMs` and trims the queues to their limits.
   */
  async onNewHead(head: PoolHead): Promise<void> {
    const accounts = [...this.#accounts.values()];
    const states = await Promise.all(
      accounts.map(async (a) => {
        const account = await head.state.getAccount(a.address);
        return [account?.nonce ?? 0n, account?.balance ?? 0n] as const;
      }),
    );
    let localsChanged = false;
    for (let i = 0; i < accounts.length; i++) {
      const account = accounts[i]!;
      if (this.#accounts.get(account.key) !== account) continue;
      const [nonce, balance] = states[i]!;
      for (const entry of [...account.txs.values()]) {
        if (entry.tx.nonce < nonce || entry.cost > balance) {
          localsChanged ||= entry.local;
          this.#delete(entry);
        }
      }
      account.base = nonce;
      this.#reorganize(account, balance);
    }
    const now = this.#opts.now();
    for (const entry of [...this.#all.values()]) {
      if (
        entry.status === "queued" &&
        !entry.local &&
        now - entry.queuedSince > this.#opts.lifetimeMs
      ) {
        this.#delete(entry);
      }
    }
    this.#trimQueues();
    if (localsChanged) this.#journalLeft();
  }

  /**
   * The pending transactions in the order a block takes them: each sender's in nonce order,
   * senders interleaved by gas price (highest first; ties go to the earlier arrival), as geth's
   * price-and-nonce ordering.
   */
  pending(): SignedTransaction[] {
    const heap = new Heap<Cursor>(before);
    for (const account of this.#accounts.values()) {
      if (account.pendingCount > 0) {
        heap.push({ account, nonce: account.base, entry: account.txs.get(account.base)! });
      }
    }
    const out: SignedTransaction[] = [];
    for (let top = heap.peek(); top !== undefined; top = heap.peek()) {
      out.push(top.entry.tx);
      const next = top.nonce + 1n;
      const entry = top.account.txs.get(next);
      if (entry !== undefined && entry.status === "pending") {
        top.nonce = next;
        top.entry = entry;
        heap.replaceTop(top);
      } else {
        heap.pop();
      }
    }
    return out;
  }

  get(hash: Uint8Array): { tx: SignedTransaction; status: PoolStatus; local: boolean } | undefined {
    const entry = this.#all.get(bytesToHex(hash));
    if (entry === undefined) return undefined;
    return { tx: entry.tx, status: entry.status, local: entry.local };
  }

  /** The next nonce of `address` after its pending transactions, from its state nonce. */
  pendingNonce(address: Address, stateNonce: bigint): bigint {
    const account = this.#accounts.get(bytesToHex(address));
    let nonce = stateNonce;
    if (account === undefined) return nonce;
    for (let e = account.txs.get(nonce); e?.status === "pending"; e = account.txs.get(nonce)) {
      nonce++;
    }
    return nonce;
  }

  /**
   * Removes these transactions (mined in a block); unknown hashes are ignored. A removed
   * transaction at the account's nonce advances it; one in the middle leaves a gap, and the
   * sender's later transactions become queued until `onNewHead`.
   */
  remove(hashes: readonly Uint8Array[]): void {
    const touched = new Map<Account, bigint[]>();
    let localsChanged = false;
    for (const hash of hashes) {
      const entry = this.#all.get(bytesToHex(hash));
      if (entry === undefined) continue;
      localsChanged ||= entry.local;
      const nonces = touched.get(entry.account) ?? [];
      nonces.push(entry.tx.nonce);
      touched.set(entry.account, nonces);
      this.#delete(entry);
    }
    for (const [account, nonces] of touched) {
      nonces.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
      for (const nonce of nonces) if (nonce === account.base) account.base++;
      for (const entry of [...account.txs.values()]) {
        if (entry.tx.nonce < account.base) {
          localsChanged ||= entry.local;
          this.#delete(entry);
        }
      }
      if (this.#accounts.get(account.key) === account) this.#reorganize(account, undefined);
    }
    if (localsChanged) this.#journalLeft();
  }

  /**
   * Changes whenever the pool's content changes (a transaction in or out, pending or queued):
   * what is built from the pool (the pending block, miners' work) is rebuilt when it moves.
   */
  get version(): number {
    return this.#version;
  }

  /** Drops every transaction (locals too; the journal follows). */
  clear(): void {
    this.#version++;
    const hadLocals = this.#localCount > 0;
    this.#all.clear();
    this.#evictable.pending.reset();
    this.#evictable.queued.reset();
    this.#accounts.clear();
    this.#pendingCount = 0;
    this.#queuedCount = 0;
    this.#localCount = 0;
    this.#byOwner.clear();
    if (hadLocals) this.#journalChanged();
  }

  /** Pending and queued transactions by sender (lowercase 0x hex), each list in nonce order. */
  content(): {
    pending: ReadonlyMap<string, SignedTransaction[]>;
    queued: ReadonlyMap<string, SignedTransaction[]>;
  } {
    const pending = new Map<string, SignedTransaction[]>();
    const queued = new Map<string, SignedTransaction[]>();
    for (const account of this.#accounts.values()) {
      const entries = [...account.txs.values()].sort(byNonce);
      for (const entry of entries) {
        const into = entry.status === "pending" ? pending : queued;
        const list = into.get(account.key);
        if (list === undefined) into.set(account.key, [entry.tx]);
        else list.push(entry.tx);
      }
    }
    return { pending, queued };
  }

  status(): { pending: number; queued: number } {
    return { pending: this.#pendingCount, queued: this.#queuedCount };
  }

  /**
   * Re-adds the journal's local transactions, validated again against `head`; the invalid ones
   * (and lines that are not transactions) are dropped and reported, and the journal is rewritten
   * with what remains. A missing journal loads nothing.
   */
  async loadJournal(head: PoolHead): Promise<JournalLoadResult> {
    const path = this.#opts.journalPath;
    if (path === undefined) return { loaded: 0, dropped: 0, reasons: [] };
    const { entries, problems } = await readJournal(path);
    const reasons = [...problems];
    const txs: SignedTransaction[] = [];
    for (const { raw, sender } of entries) {
      try {
        txs.push(
          sender === undefined
            ? decodeTransaction(raw)
            : decodeImpersonatedTransaction(raw, sender),
        );
      } catch (err) {
        reasons.push(`journal transaction ${shortHex(raw)}: ${(err as Error).message}`);
      }
    }
    txs.sort((a, b) => (a.nonce < b.nonce ? -1 : a.nonce > b.nonce ? 1 : 0));
    let loaded = 0;
    this.#loadingJournal = true;
    try {
      for (const tx of txs) {
        try {
          await this.add(tx, head, { local: true });
          loaded++;
        } catch (err) {
          if (!(err instanceof TxPoolError)) throw err;
          reasons.push(`journal transaction ${bytesToHex(tx.hash)}: ${err.message}`);
        }
      }
    } finally {
      this.#loadingJournal = false;
    }
    if (reasons.length > 0 || this.#localCount > 0) this.#journalChanged();
    return { loaded, dropped: reasons.length, reasons };
  }

  /** Throws the last journal write's failure, if any (writes are made on the spot). */
  async flushJournal(): Promise<void> {
    const err = this.#journalError;
    if (err !== undefined) {
      this.#journalError = undefined;
      throw new TxPoolError(
        TxPoolErrorCode.JOURNAL_WRITE_FAILED,
        `txpool journal not written: ${(err as Error).message}`,
        { path: this.#opts.journalPath },
        { cause: err },
      );
    }
  }

  /**
   * Rewrites the journal with the live local transactions only (when some lines are stale)
   * and closes it: at the node's stop. The pool may be used again afterwards; the journal is
   * reopened on the next write.
   */
  async closeJournal(): Promise<void> {
    if (this.#opts.journalPath !== undefined && this.#journalLines !== this.#localCount)
      this.#journalChanged();
    this.#closeJournalFile();
    await this.flushJournal();
  }

  // --- validation -------------------------------------------------------------------------

  #checkKnown(key: string): void {
    const known = this.#all.get(key);
    if (known === undefined) return;
    throw new TxPoolError(
      TxPoolErrorCode.ALREADY_KNOWN,
      `${known.status} transaction with same hash already exists (already known): hash ${key}`,
      { hash: key, status: known.status },
    );
  }

  /** The checks that need no state. */
  #checkStatic(tx: SignedTransaction, head: PoolHead): void {
    if (tx.chainId !== undefined && tx.chainId !== this.#opts.chainId)
      throw chainIdMismatch(tx.chainId, this.#opts.chainId);
    if (tx.type !== 0) {
      const from = this.#opts.typedTransactionsFrom;
      // The next block is the first this transaction could go in.
      if (from === null || head.number + 1n < from) throw typedNotActive(tx.type, from);
    }
    if (tx.gasPrice < head.minimumGasPrice) {
      throw new TxPoolError(
        TxPoolErrorCode.GAS_PRICE_TOO_LOW,
        `transaction's gas price lower than block's minimum: gas price ${tx.gasPrice}, minimum ${head.minimumGasPrice}`,
        { gasPrice: tx.gasPrice, minimumGasPrice: head.minimumGasPrice },
      );
    }
    if (tx.gasLimit > head.gasLimit) {
      throw new TxPoolError(
        TxPoolErrorCode.GAS_LIMIT_EXCEEDED,
        `transaction's gas limit exceeds block gas limit: gas limit ${tx.gasLimit}, block gas limit ${head.gasLimit}`,
        { gasLimit: tx.gasLimit, blockGasLimit: head.gasLimit },
      );
    }
    const intrinsic = intrinsicGas(tx);
    if (tx.gasLimit < intrinsic) {
      throw new TxPoolError(
        TxPoolErrorCode.INTRINSIC_GAS_TOO_LOW,
        `transaction's basic cost is above the gas limit (intrinsic gas too low): gas limit ${tx.gasLimit}, intrinsic gas ${intrinsic}`,
        { gasLimit: tx.gasLimit, intrinsicGas: intrinsic },
      );
    }
  }

  /** The checks that need the sender's state, then the insertion: synchronous throughout. */
  #admit(
    tx: SignedTransaction,
    key: string,
    local: boolean,
    owner: string | undefined,
    stateNonce: bigint,
    balance: bigint,
  ): { result: AddResult; journal: boolean } {
    const o = this.#opts;
    // Past the global limits only the node's own users' transactions get in.
    const exempt = local && owner === undefined;
    const sender = bytesToHex(tx.from);
    if (tx.nonce < stateNonce) {
      throw new TxPoolError(
        TxPoolErrorCode.NONCE_TOO_LOW,
        `transaction nonce too low: address ${sender}, tx ${tx.nonce}, state ${stateNonce}`,
        { address: sender, nonce: tx.nonce, stateNonce },
      );
    }
    const window = BigInt(o.accountQueue);
    if (tx.nonce >= stateNonce + window) {
      throw new TxPoolError(
        TxPoolErrorCode.NONCE_TOO_HIGH,
        `transaction nonce too high: address ${sender}, tx ${tx.nonce}, state ${stateNonce}, highest accepted ${stateNonce + window - 1n}`,
        { address: sender, nonce: tx.nonce, stateNonce },
      );
    }
    const cost = tx.gasLimit * tx.gasPrice + tx.value;
    if (cost > balance) {
      throw new TxPoolError(
        TxPoolErrorCode.INSUFFICIENT_FUNDS,
        `insufficient funds: address ${sender}, balance ${balance}, cost ${cost} (gas ${tx.gasLimit} × price ${tx.gasPrice} + value ${tx.value})`,
        { address: sender, balance, cost },
      );
    }

    let account = this.#accounts.get(sender);
    let localsDropped = false;
    if (account !== undefined && account.base !== stateNonce) {
      // The pool missed a head for this sender: bring it to the state just read.
      for (const entry of [...account.txs.values()]) {
        if (entry.tx.nonce < stateNonce) {
          localsDropped ||= entry.local;
          this.#delete(entry);
        }
      }
      account.base = stateNonce;
      if (this.#accounts.get(sender) === account) this.#reorganize(account, balance);
      else account = undefined;
      // Written whether or not this transaction is then accepted.
      if (localsDropped) this.#journalLeft();
    }

    const existing = account?.txs.get(tx.nonce);
    if (existing !== undefined) {
      const old = existing.tx.gasPrice;
      const least = (old * BigInt(100 + o.priceBumpPercent)) / 100n;
      if (!(tx.gasPrice > old && tx.gasPrice >= least)) {
        throw new TxPoolError(
          TxPoolErrorCode.REPLACEMENT_UNDERPRICED,
          `gas price not enough to bump transaction: address ${sender}, nonce ${tx.nonce}, gas price ${tx.gasPrice}, replaces ${old}, needs at least ${least > old ? least : old + 1n} (${o.priceBumpPercent}% more)`,
          { address: sender, nonce: tx.nonce, gasPrice: tx.gasPrice, replacedGasPrice: old },
        );
      }
    }

    const pendingEnd =
      account === undefined ? stateNonce : account.base + BigInt(account.pendingCount);
    const replacesPending = existing?.status === "pending";
    const wantsPending = replacesPending || tx.nonce === pendingEnd;
    let victim: Entry | undefined;
    if (wantsPending) {
      const pendingCost = (account?.pendingCost ?? 0n) - (replacesPending ? existing.cost : 0n);
      if (pendingCost + cost > balance) {
        throw new TxPoolError(
          TxPoolErrorCode.INSUFFICIENT_FUNDS_PENDING,
          `insufficient funds to pay for pending and new transactions: address ${sender}, balance ${balance}, pending ${pendingCost}, new ${cost}`,
          { address: sender, balance, pendingCost, cost },
        );
      }
      if (!replacesPending) {
        const count = account?.pendingCount ?? 0;
        if (count >= o.accountSlots) {
          throw new TxPoolError(
            TxPoolErrorCode.ACCOUNT_SLOTS_FULL,
            `transaction pool is full: address ${sender} has ${count} pending transactions (accountSlots ${o.accountSlots})`,
            { address: sender, pending: count, accountSlots: o.accountSlots },
          );
        }
        if (this.#pendingCount >= o.globalSlots) {
          victim = this.#victim("pending", sender, tx.gasPrice, exempt);
          if (victim === undefined && !exempt) {
            throw new TxPoolError(
              TxPoolErrorCode.POOL_FULL,
              `transaction pool is full: ${this.#pendingCount} pending transactions (globalSlots ${o.globalSlots}), none cheaper than gas price ${tx.gasPrice} to evict`,
              { pending: this.#pendingCount, globalSlots: o.globalSlots, gasPrice: tx.gasPrice },
            );
          }
        }
      }
    } else if (existing === undefined) {
      const count = account === undefined ? 0 : account.txs.size - account.pendingCount;
      if (count >= o.accountQueue) {
        throw new TxPoolError(
          TxPoolErrorCode.ACCOUNT_QUEUE_FULL,
          `transaction pool is full: address ${sender} has ${count} queued transactions (accountQueue ${o.accountQueue})`,
          { address: sender, queued: count, accountQueue: o.accountQueue },
        );
      }
      if (this.#queuedCount >= o.globalQueue) {
        victim = this.#victim("queued", sender, tx.gasPrice, exempt);
        if (victim === undefined && !exempt) {
          throw new TxPoolError(
            TxPoolErrorCode.QUEUE_FULL,
            `transaction pool is full: ${this.#queuedCount} queued transactions (globalQueue ${o.globalQueue}), none cheaper than gas price ${tx.gasPrice} to evict`,
            { queued: this.#queuedCount, globalQueue: o.globalQueue, gasPrice: tx.gasPrice },
          );
        }
      }
    }

    if (owner !== undefined && existing === undefined) {
      const held = this.#byOwner.get(owner) ?? 0;
      if (held >= o.ownerSlots) {
        throw new TxPoolError(
          TxPoolErrorCode.OWNER_SLOTS_FULL,
          `transaction pool is full for this API key: it has ${held} transactions waiting (the share of one key is ${o.ownerSlots})`,
          { waiting: held, ownerSlots: o.ownerSlots },
        );
      }
    }

    // Kept before it is taken: a local transaction the journal cannot hold is refused, so that
    // every hash answered survives a restart.
    if (local) this.#journalKeep(journalEntry(tx));
    // Accepted: from here on nothing throws.
    if (victim !== undefined) this.#evict(victim);
    if (account === undefined) {
      account = {
        key: sender,
        address: tx.from,
        base: stateNonce,
        txs: new Map(),
        pendingCount: 0,
        pendingCost: 0n,
      };
      this.#accounts.set(sender, account);
    }
    const now = o.now();
    const entry: Entry = {
      tx,
      key,
      account,
      cost,
      local,
      owner,
      seq: this.#seq++,
      status: "queued",
      queuedSince: now,
    };
    if (existing !== undefined) this.#delete(existing, true);
    if (wantsPending) {
      this.#insert(entry, "pending");
      this.#promote(account, balance);
    } else {
      this.#insert(entry, "queued");
    }
    if (victim !== undefined) this.#trimQueues();
    const journal = local || existing?.local === true;
    const result: AddResult =
      existing === undefined
        ? { status: entry.status }
        : { status: entry.status, replaced: existing.tx };
    return { result, journal };
  }

  // --- bookkeeping ------------------------------------------------------------------------

  #insert(entry: Entry, status: PoolStatus): void {
    this.#version++;
    const account = entry.account;
    entry.status = status;
    account.txs.set(entry.tx.nonce, entry);
    this.#all.set(entry.key, entry);
    if (entry.local) this.#localCount++;
    else this.#pushEvictable(entry, status);
    if (entry.owner !== undefined)
      this.#byOwner.set(entry.owner, (this.#byOwner.get(entry.owner) ?? 0) + 1);
    if (status === "pending") {
      account.pendingCount++;
      account.pendingCost += entry.cost;
      this.#pendingCount++;
    } else {
      this.#queuedCount++;
    }
  }

  /**
   * Takes `entry` out. Taking a pending one out of the middle breaks the pending run: callers
   * demote or reorganize after (`replacing` keeps the account for the entry that takes its place).
   */
  #delete(entry: Entry, replacing = false): void {
    this.#version++;
    const account = entry.account;
    account.txs.delete(entry.tx.nonce);
    this.#all.delete(entry.key);
    if (entry.local) this.#localCount--;
    if (entry.owner !== undefined) {
      const held = (this.#byOwner.get(entry.owner) ?? 1) - 1;
      if (held === 0) this.#byOwner.delete(entry.owner);
      else this.#byOwner.set(entry.owner, held);
    }
    if (entry.status === "pending") {
      account.pendingCount--;
      account.pendingCost -= entry.cost;
      this.#pendingCount--;
    } else {
      this.#queuedCount--;
    }
    if (account.txs.size === 0 && !replacing) this.#accounts.delete(account.key);
  }

  #setStatus(entry: Entry, status: PoolStatus): void {
    if (entry.status === status) return;
    this.#version++;
    const account = entry.account;
    if (status === "pending") {
      account.pendingCount++;
      account.pendingCost += entry.cost;
      this.#pendingCount++;
      this.#queuedCount--;
    } else {
      account.pendingCount--;
      account.pendingCost -= entry.cost;
      this.#pendingCount--;
      this.#queuedCount++;
      entry.queuedSince = this.#opts.now();
    }
    entry.status = status;
    if (!entry.local) this.#pushEvictable(entry, status);
  }

  /** Whether one more transaction of `account` costing `cost` may become pending. */
  #roomFor(account: Account, entry: Entry, balance: bigint | undefined): boolean {
    if (account.pendingCount >= this.#opts.accountSlots) return false;
    if (!entry.local && this.#pendingCount >= this.#opts.globalSlots) return false;
    return balance === undefined || account.pendingCost + entry.cost <= balance;
  }

  /** Promotes the queued transactions that continue the pending run, while there is room. */
  #promote(account: Account, balance: bigint): void {
    let nonce = account.base + BigInt(account.pendingCount);
    for (let e = account.txs.get(nonce); e !== undefined; e = account.txs.get(nonce)) {
      if (e.status === "pending" || !this.#roomFor(account, e, balance)) break;
      this.#setStatus(e, "pending");
      nonce++;
    }
  }

  /**
   * Recomputes which of `account`'s transactions are pending: the run from `base` without gaps,
   * within the limits and, when `balance` is known, affordable together. Without a balance
   * nothing new is promoted: only transactions already pending may stay pending.
   */
  #reorganize(account: Account, balance: bigint | undefined): void {
    const wasPending = new Set<Entry>();
    for (const entry of account.txs.values()) {
      if (entry.status === "pending") {
        wasPending.add(entry);
        this.#setStatus(entry, "queued");
      }
    }
    let nonce = account.base;
    for (let e = account.txs.get(nonce); e !== undefined; e = account.txs.get(nonce)) {
      if (balance === undefined && !wasPending.has(e)) break;
      if (!this.#roomFor(account, e, balance)) break;
      this.#setStatus(e, "pending");
      nonce++;
    }
  }

  /**
   * The cheapest transaction of `status` that may be evicted for one of `sender` paying
   * `gasPrice`: remote, of another sender, cheaper (any price when the newcomer is local).
   * Ties go to the most recent arrival.
   */
  #victim(
    status: PoolStatus,
    sender: string,
    gasPrice: bigint,
    newcomerLocal: boolean,
  ): Entry | undefined {
    const best = this.#cheapest(status, (entry) => entry.account.key !== sender);
    if (best === undefined) return undefined;
    return newcomerLocal || best.tx.gasPrice < gasPrice ? best : undefined;
  }

  /**
   * The cheapest remote transaction of `status` that `eligible` takes; ties: the latest. Stale
   * entries met on the way are dropped; live ones passed over are put back.
   */
  #cheapest(status: PoolStatus, eligible: (entry: Entry) => boolean): Entry | undefined {
    const heap = this.#evictable[status];
    const passed: Entry[] = [];
    let found: Entry | undefined;
    for (let top = heap.peek(); top !== undefined; top = heap.peek()) {
      if (top.status !== status || this.#all.get(top.key) !== top) heap.pop();
      else if (!eligible(top)) passed.push(heap.pop()!);
      else {
        found = top;
        break;
      }
    }
    for (const entry of passed) heap.push(entry);
    return found;
  }

  /**
   * Makes `entry` a candidate for eviction under `status`. Its earlier places in the heaps go
   * stale; a heap holding more than twice the transactions of its status is rebuilt, so the
   * stale ones of a pool that is never full do not pile up.
   */
  #pushEvictable(entry: Entry, status: PoolStatus): void {
    const heap = this.#evictable[status];
    heap.push(entry);
    const count = status === "pending" ? this.#pendingCount : this.#queuedCount;
    if (heap.size > 2 * count + 64) {
      heap.reset([...this.#all.values()].filter((e) => e.status === status && !e.local));
    }
  }

  /** Evicts `entry`; the sender's later pending transactions become queued. */
  #evict(entry: Entry): void {
    const account = entry.account;
    const wasPending = entry.status === "pending";
    this.#delete(entry);
    if (!wasPending || this.#accounts.get(account.key) !== account) return;
    for (const other of account.txs.values()) {
      if (other.status === "pending" && other.tx.nonce > entry.tx.nonce) {
        this.#setStatus(other, "queued");
      }
    }
  }

  /** Drops remote queued transactions beyond the limits: per sender the highest nonces, then globally the cheapest. */
  #trimQueues(): void {
    const o = this.#opts;
    for (const account of [...this.#accounts.values()]) {
      let queued = account.txs.size - account.pendingCount;
      if (queued <= o.accountQueue) continue;
      const candidates = [...account.txs.values()]
        .filter((e) => e.status === "queued" && !e.local)
        .sort((a, b) => byNonce(b, a));
      for (const entry of candidates) {
        if (queued <= o.accountQueue) break;
        this.#delete(entry);
        queued--;
      }
    }
    while (this.#queuedCount > o.globalQueue) {
      const cheapest = this.#cheapest("queued", () => true);
      if (cheapest === undefined) break;
      this.#delete(cheapest);
    }
  }

  // --- journal ----------------------------------------------------------------------------

  /** The pool's local transactions, each sender's in nonce order. */
  #liveLocals(): JournalEntry[] {
    return [...this.#all.values()]
      .filter((e) => e.local)
      .sort((a, b) =>
        a.account.key < b.account.key ? -1 : a.account.key > b.account.key ? 1 : byNonce(a, b),
      )
      .map((e) => journalEntry(e.tx));
  }

  #journalChanged(): void {
    const path = this.#opts.journalPath;
    if (path === undefined || this.#loadingJournal) return;
    const locals = this.#liveLocals();
    try {
      // Appends after the rename must go to the new file, not the replaced one.
      this.#closeJournalFile();
      writeJournal(path, locals);
      this.#journalLines = locals.length;
      this.#journalAppended = 0;
      this.#journalDirty = false;
      this.#journalError = undefined;
    } catch (err) {
      this.#journalDirty = true;
      this.#journalError = err;
    }
  }

  /**
   * Writes a new local transaction to the journal before the pool takes it: appended (no
   * rewrite, no sync: see `journal.ts`), or after a failed write, the whole journal rewritten
   * with it. Throws `TxPoolError` (`JOURNAL_WRITE_FAILED`) when the file cannot be written.
   */
  #journalKeep(entry: JournalEntry): void {
    const path = this.#opts.journalPath;
    if (path === undefined || this.#loadingJournal) return;
    try {
      if (this.#journalDirty) {
        // Whatever half of a line reached the file, it is written anew.
        this.#closeJournalFile();
        const locals = this.#liveLocals();
        locals.push(entry);
        writeJournal(path, locals);
        this.#journalLines = locals.length;
        this.#journalAppended = 0;
        this.#journalDirty = false;
      } else {
        this.#journalFile ??= openJournalForAppend(path);
        this.#journalAppended += appendJournal(this.#journalFile, entry);
        this.#journalLines++;
      }
      this.#journalError = undefined;
    } catch (err) {
      this.#journalError = err;
      this.#journalDirty = true;
      this.#closeJournalFile();
      throw new TxPoolError(
        TxPoolErrorCode.JOURNAL_WRITE_FAILED,
        `transaction not accepted: the txpool journal ${path} cannot be written (${(err as Error).message})`,
        { path },
        { cause: err },
      );
    }
  }

  /**
   * Local transactions left the pool (mined, dropped, replaced): their lines stay in the journal
   * (reloading them finds them stale) until stale lines outnumber the live ones, then one
   * rewrite drops them all. One rewrite per many blocks, not one per transaction.
   */
  #journalLeft(): void {
    const stale = this.#journalLines - this.#localCount;
    // Large transactions: stale lines are dropped once they hold megabytes, however few.
    if (stale > 0 && this.#journalAppended > JOURNAL_STALE_BYTES) {
      this.#journalChanged();
      return;
    }
    if (stale > Math.max(JOURNAL_STALE_MIN, this.#localCount)) this.#journalChanged();
  }

  #closeJournalFile(): void {
    const file = this.#journalFile;
    this.#journalFile = undefined;
    if (file === undefined) return;
    try {
      closeJournal(file);
    } catch {}
  }
}

function byNonce(a: Entry, b: Entry): number {
  return a.tx.nonce < b.tx.nonce ? -1 : a.tx.nonce > b.tx.nonce ? 1 : 0;
}

function shortHex(bytes: Uint8Array): string {
  const hex = bytesToHex(bytes.subarray(0, 16));
  return bytes.length > 16 ? `${hex}…` : hex;
}

interface Cursor {
  readonly account: Account;
  nonce: bigint;
  entry: Entry;
}

/** Eviction order: the lower gas price first; of equal prices, the later arrival. */
function evictsFirst(a: Entry, b: Entry): boolean {
  return a.tx.gasPrice < b.tx.gasPrice || (a.tx.gasPrice === b.tx.gasPrice && a.seq > b.seq);
}

/** The order of senders' next pending transactions: higher gas price first, then earlier arrival. */
function before(a: Cursor, b: Cursor): boolean {
  const pa = a.entry.tx.gasPrice;
  const pb = b.entry.tx.gasPrice;
  return pa > pb || (pa === pb && a.entry.seq < b.entry.seq);
}

/** A transaction's journal line: with its sender when no key signed it (see `JournalEntry`). */
function journalEntry(tx: SignedTransaction): JournalEntry {
  return isImpersonatedTransaction(tx) ? { raw: tx.raw, sender: tx.from } : { raw: tx.raw };
}
