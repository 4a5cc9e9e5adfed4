import { NodexError } from "@nodex/types";

/**
 * Why a transaction cannot run at all (it is refused, not executed). Messages keep the
 * phrases clients match on: `nonce too low`, `insufficient funds`, `intrinsic gas too low`.
 */
export const ExecutionErrorCode = {
  NONCE_TOO_LOW: "EVM_NONCE_TOO_LOW",
  NONCE_TOO_HIGH: "EVM_NONCE_TOO_HIGH",
  /** EIP-2681: the sender's nonce is 2⁶⁴ - 1 and cannot be raised. */
  NONCE_MAX: "EVM_NONCE_MAX",
  /** EIP-3607: the sender has code. */
  SENDER_NOT_EOA: "EVM_SENDER_NOT_EOA",
  INSUFFICIENT_FUNDS: "EVM_INSUFFICIENT_FUNDS",
  INTRINSIC_GAS: "EVM_INTRINSIC_GAS",
  BLOCK_GAS_LIMIT: "EVM_BLOCK_GAS_LIMIT",
  INITCODE_TOO_LARGE: "EVM_INITCODE_TOO_LARGE",
  GAS_PRICE_TOO_LOW: "EVM_GAS_PRICE_TOO_LOW",
  /** Under Ethereum's fee rules, a fee cap (a legacy gas price) under the block's base fee. */
  FEE_CAP_TOO_LOW: "EVM_FEE_CAP_TOO_LOW",
} as const;
export type ExecutionErrorCode = (typeof ExecutionErrorCode)[keyof typeof ExecutionErrorCode];

export class ExecutionError extends NodexError<ExecutionErrorCode> {
  constructor(code: ExecutionErrorCode, message: string, meta: Record<string, unknown> = {}) {
    super(code, message, meta);
    this.name = "ExecutionError";
  }
}
