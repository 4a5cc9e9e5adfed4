import { NodexError, TransactionError, TransactionErrorCode } from "@nodex/types";

/**
 * Why the pool refused a transaction, one code per rule. Every message starts with the reference
 * node's phrase (or geth's where the reference has none) and then gives the figures; the RPC layer
 * answers all of them with -32010 and the message as is.
 */
export const TxPoolErrorCode = {
  /** Same hash already in the pool: "pending|queued transaction with same hash already exists". */
  ALREADY_KNOWN: "TXPOOL_ALREADY_KNOWN",
  /** EIP-155 chain id other than the node's: "invalid chain id". */
  CHAIN_ID_MISMATCH: "TXPOOL_CHAIN_ID_MISMATCH",
  /** Gas price under the head's minimum: "transaction's gas price lower than block's minimum". */
  GAS_PRICE_TOO_LOW: "TXPOOL_GAS_PRICE_TOO_LOW",
  /** Gas limit over the block's: "transaction's gas limit exceeds block gas limit". */
  GAS_LIMIT_EXCEEDED: "TXPOOL_GAS_LIMIT_EXCEEDED",
  /** Gas limit under the intrinsic gas: "transaction's basic cost is above the gas limit". */
  INTRINSIC_GAS_TOO_LOW: "TXPOOL_INTRINSIC_GAS_TOO_LOW",
  /** Nonce under the account's: "transaction nonce too low". */
  NONCE_TOO_LOW: "TXPOOL_NONCE_TOO_LOW",
  /** Nonce `accountQueue` or more ahead of the account's: "transaction nonce too high". */
  NONCE_TOO_HIGH: "TXPOOL_NONCE_TOO_HIGH",
  /** Balance under gas × gas price + value: "insufficient funds". */
  INSUFFICIENT_FUNDS: "TXPOOL_INSUFFICIENT_FUNDS",
  /** Balance under the sender's pending transactions plus this one. */
  INSUFFICIENT_FUNDS_PENDING: "TXPOOL_INSUFFICIENT_FUNDS_PENDING",
  /** Same sender and nonce without the price bump: "gas price not enough to bump transaction". */
  REPLACEMENT_UNDERPRICED: "TXPOOL_REPLACEMENT_UNDERPRICED",
  /** The sender already has `accountSlots` pending transactions: "transaction pool is full". */
  ACCOUNT_SLOTS_FULL: "TXPOOL_ACCOUNT_SLOTS_FULL",
  /** The sender already has `accountQueue` queued transactions: "transaction pool is full". */
  ACCOUNT_QUEUE_FULL: "TXPOOL_ACCOUNT_QUEUE_FULL",
  /** `globalSlots` pending and nothing cheaper to evict: "transaction pool is full". */
  POOL_FULL: "TXPOOL_POOL_FULL",
  /** `globalQueue` queued and nothing cheaper to evict: "transaction pool is full". */
  QUEUE_FULL: "TXPOOL_QUEUE_FULL",
  /** The API key (`owner`) already has `ownerSlots` transactions waiting. */
  OWNER_SLOTS_FULL: "TXPOOL_OWNER_SLOTS_FULL",
  /** An option out of its range (constructor). */
  INVALID_OPTION: "TXPOOL_INVALID_OPTION",
  /** The journal could not be written (see `flushJournal`). */
  JOURNAL_WRITE_FAILED: "TXPOOL_JOURNAL_WRITE_FAILED",
} as const;
export type TxPoolErrorCode = (typeof TxPoolErrorCode)[keyof typeof TxPoolErrorCode];

export class TxPoolError extends NodexError<TxPoolErrorCode> {
  constructor(
    code: TxPoolErrorCode,
    message: string,
    meta: Record<string, unknown> = {},
    options?: { cause?: unknown },
  ) {
    super(code, message, meta, options);
    this.name = "TxPoolError";
  }
}

/** A transaction signed for another chain: the pool's one chain-id rule and its one error. */
export function chainIdMismatch(txChainId: number, chainId: number): TxPoolError {
  return new TxPoolError(
    TxPoolErrorCode.CHAIN_ID_MISMATCH,
    `invalid chain id: transaction signed for chain ${txChainId}, this network is ${chainId}`,
    { txChainId, chainId },
  );
}

/**
 * A typed transaction on a network (or at a height) where RSKIP546 is not active: refused as the
 * decoder refuses a type it does not know (`TransactionError`, answered -32602), naming the
 * block it is active from, if any.
 */
export function typedNotActive(type: number, from: bigint | null): TransactionError {
  return new TransactionError(
    TransactionErrorCode.TYPE_UNSUPPORTED,
    from === null
      ? `typed transactions (EIP-2718 type ${type}) are not active on this network: send a legacy transaction`
      : `typed transactions (EIP-2718 type ${type}) are active from block ${from}: send a legacy transaction`,
    { type, from: from === null ? null : from.toString() },
  );
}
