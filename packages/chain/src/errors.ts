import { NodexError } from "@nodex/types";

export const ChainErrorCode = {
  STATE_MISSING: "CHAIN_STATE_MISSING",
  CORRUPT: "CHAIN_CORRUPT",
  INVALID_BLOCK: "CHAIN_INVALID_BLOCK",
  NOT_FOUND: "CHAIN_NOT_FOUND",
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
