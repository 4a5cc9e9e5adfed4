import { NodexError } from "@nodex/types";

export const ChainErrorCode = {
  STATE_MISSING: "CHAIN_STATE_MISSING",
  CORRUPT: "CHAIN_CORRUPT",
  INVALID_BLOCK: "CHAIN_INVALID_BLOCK",
  NOT_FOUND: "CHAIN_NOT_FOUND",
  /**
   * The database holds a chain that starts elsewhere: at another anchor, at genesis where an
   * anchor is asked for, or at an anchor where genesis is.
   */
  OTHER_CHAIN: "CHAIN_OTHER_CHAIN",
  /** What the network does not allow: editing state outside a block on a public network. */
  NOT_SUPPORTED: "CHAIN_NOT_SUPPORTED",
  /** A block a reader asked for by selector or hash is not in the chain (answered as -32602). */
  UNKNOWN_BLOCK: "CHAIN_UNKNOWN_BLOCK",
  /** A transaction a reader asked for is not in the block it named (-32602). */
  UNKNOWN_TRANSACTION: "CHAIN_UNKNOWN_TRANSACTION",
  /** A block asked for with `requireCanonical` is on a side branch (-32602). */
  NOT_CANONICAL: "CHAIN_NOT_CANONICAL",
  /** A block range whose start is after its end (-32602). */
  INVALID_RANGE: "CHAIN_INVALID_RANGE",
  /** A block range that starts after the head (-32602). */
  RANGE_BEYOND_HEAD: "CHAIN_RANGE_BEYOND_HEAD",
  /** A log query over a long range that matches more logs than the cap (-32012). */
  LOGS_LIMIT: "CHAIN_LOGS_LIMIT",
  /** A miner's solution that cannot become a block (answered as -33000). */
  MINING_SUBMISSION: "CHAIN_MINING_SUBMISSION",
} as const;
export type ChainErrorCode = (typeof ChainErrorCode)[keyof typeof ChainErrorCode];

export class ChainError extends NodexError<ChainErrorCode> {
  constructor(code: ChainErrorCode, message: string, meta: Record<string, unknown> = {}) {
    super(code, message, meta);
    this.name = "ChainError";
  }
}
