import { NodexError } from "@nodex/types";

export const ChainErrorCode = {
  STATE_MISSING: "CHAIN_STATE_MISSING",
  CORRUPT: "CHAIN_CORRUPT",
  INVALID_BLOCK: "CHAIN_INVALID_BLOCK",
} as const;
export type ChainErrorCode = (typeof ChainErrorCode)[keyof typeof ChainErrorCode];

export class ChainError extends NodexError<ChainErrorCode> {
  constructor(code: ChainErrorCode, message: string, meta: Record<string, unknown> = {}) {
    super(code, message, meta);
    this.name = "ChainError";
  }
}
