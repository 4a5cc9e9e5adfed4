import { TxPoolError, TxPoolErrorCode } from "./errors.js";

export interface TxPoolOptions {
  /** The node's chain id; a transaction signed for another chain is refused. */
  readonly chainId: number;
  /**
   * The first block that may carry typed transactions (the network preset's
   * `typedTransactionsFrom`); before it, or always when `null` (the default), they are refused.
   */
  readonly typedTransactionsFrom?: bigint | null;
  /** Most pending transactions per sender (default 64, geth's `AccountSlots` is 16). */
  readonly accountSlots?: number;
  /** Most pending transactions in the pool (default 5120, as geth's `GlobalSlots`). */
  readonly globalSlots?: number;
  /**
   * Most queued transactions per sender, and the nonce window: a nonce `accountQueue` or more
   * ahead of the account's is refused (default 64, as geth's `AccountQueue`).
   */
  readonly accountQueue?: number;
  /** Most queued transactions in the pool (default 1024, as geth's `GlobalQueue`). */
  readonly globalQueue?: number;
  /**
   * Most transactions (pending and queued) of one owner (an API key of a hosted node) in the
   * pool (default 512, a tenth of `globalSlots`).
   */
  readonly ownerSlots?: number;
  /** Queued remote transactions older than this expire at the next head (default 3 h, as geth). */
  readonly lifetimeMs?: number;
  /** Least gas price increase, in percent, for a replacement (default 40, the reference's). */
  readonly priceBumpPercent?: number;
  /** Clock in milliseconds (tests). */
  readonly now?: () => number;
  /** File of local transactions; none when absent. */
  readonly journalPath?: string;
}

/**
 * The reference node's `transaction.gasPriceBump` (rsksmart/rskj
 * rskj-core/src/main/resources/reference.conf at 00cc54a: "the percentage increase of gasPrice
 * defined to accept a new transaction with same nonce and sender while the previous one is not
 * yet processed", `transaction.gasPriceBump = 40`). TransactionPoolValidator.isGasPriceBumpSufficient
 * accepts a replacement when `new > old` and `new >= old * (100 + bump) / 100` (integer division).
 */
export const REFERENCE_GAS_PRICE_BUMP_PERCENT = 40;

export const defaultTxPoolOptions = {
  accountSlots: 64,
  globalSlots: 5120,
  accountQueue: 64,
  globalQueue: 1024,
  ownerSlots: 512,
  lifetimeMs: 3 * 60 * 60 * 1000,
  priceBumpPercent: REFERENCE_GAS_PRICE_BUMP_PERCENT,
} as const;

export interface ResolvedTxPoolOptions {
  readonly chainId: number;
  readonly typedTransactionsFrom: bigint | null;
  readonly accountSlots: number;
  readonly globalSlots: number;
  readonly accountQueue: number;
  readonly globalQueue: number;
  readonly ownerSlots: number;
  readonly lifetimeMs: number;
  readonly priceBumpPercent: number;
  readonly now: () => number;
  readonly journalPath: string | undefined;
}

export function resolveTxPoolOptions(opts: TxPoolOptions): ResolvedTxPoolOptions {
  const resolved: ResolvedTxPoolOptions = {
    chainId: opts.chainId,
    typedTransactionsFrom: opts.typedTransactionsFrom ?? null,
    accountSlots: opts.accountSlots ?? defaultTxPoolOptions.accountSlots,
    globalSlots: opts.globalSlots ?? defaultTxPoolOptions.globalSlots,
    accountQueue: opts.accountQueue ?? defaultTxPoolOptions.accountQueue,
    globalQueue: opts.globalQueue ?? defaultTxPoolOptions.globalQueue,
    ownerSlots: opts.ownerSlots ?? defaultTxPoolOptions.ownerSlots,
    lifetimeMs: opts.lifetimeMs ?? defaultTxPoolOptions.lifetimeMs,
    priceBumpPercent: opts.priceBumpPercent ?? defaultTxPoolOptions.priceBumpPercent,
    now: opts.now ?? Date.now,
    journalPath: opts.journalPath,
  };
  const positive = [
    "accountSlots",
    "globalSlots",
    "accountQueue",
    "globalQueue",
    "ownerSlots",
  ] as const;
  for (const name of positive) {
    const value = resolved[name];
    if (!Number.isSafeInteger(value) || value < 1) {
      throw invalid(`${name} must be a positive integer, got ${value}`, name, value);
    }
  }
  for (const name of ["chainId", "lifetimeMs", "priceBumpPercent"] as const) {
    const value = resolved[name];
    if (!Number.isSafeInteger(value) || value < 0) {
      throw invalid(`${name} must be a non-negative integer, got ${value}`, name, value);
    }
  }
  return resolved;
}

function invalid(message: string, option: string, value: unknown): TxPoolError {
  return new TxPoolError(TxPoolErrorCode.INVALID_OPTION, `invalid txpool option: ${message}`, {
    option,
    value,
  });
}
