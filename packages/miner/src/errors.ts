import { NodexError } from "@nodex/types";

export const MinerErrorCode = {
  /** A development control on a network whose blocks only merged miners make (-32000). */
  NOT_SUPPORTED: "MINER_NOT_SUPPORTED",
  /** A development control's argument out of its range (-32602). */
  INVALID_ARGUMENT: "MINER_INVALID_ARGUMENT",
  /** A send from an account that is neither the node's nor impersonated (-32000). */
  NOT_IMPERSONATED: "MINER_NOT_IMPERSONATED",
  /** A block time that is not after the head's (-32602). */
  INVALID_TIMESTAMP: "MINER_INVALID_TIMESTAMP",
  /** An automined transaction the block could not include, with the EVM's reason (-32010). */
  TRANSACTION_REJECTED: "MINER_TRANSACTION_REJECTED",
  /**
   * An automined transaction that went into its block and failed there (a revert, an
   * exceptional halt), with the reason and `meta.data`, the return data (-32015, as the
   * reference node answers an instant-mined send that reverts).
   */
  TRANSACTION_REVERTED: "MINER_TRANSACTION_REVERTED",
} as const;
export type MinerErrorCode = (typeof MinerErrorCode)[keyof typeof MinerErrorCode];

export class MinerError extends NodexError<MinerErrorCode> {
  constructor(code: MinerErrorCode, message: string, meta: Record<string, unknown> = {}) {
    super(code, message, meta);
    this.name = "MinerError";
  }
}
