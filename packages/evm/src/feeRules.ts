/**
 * How a transaction pays for its gas: the chain's rules, or Ethereum's since London (EIP-1559),
 * for tools and tests that run Ethereum's transactions on this EVM (the official state tests in
 * `test/conformance/`).
 */
export const FeeRules = {
  /**
   * The chain's: no base fee (`BASEFEE` is 0), the whole fee (gas used × gas price) to the
   * block's miner, a gas price under the block's `minimumGasPrice` refused.
   */
  CHAIN: "chain",
  /**
   * Ethereum's: the block's base fee (`BlockContext.baseFeePerGas`, answered by `BASEFEE`) is
   * burnt, the rest of the effective gas price (the priority fee) goes to the block's miner,
   * and a transaction whose fee cap is under the base fee is refused. `minimumGasPrice` is
   * still checked: set it to 0 for Ethereum's blocks.
   */
  ETHEREUM: "ethereum",
} as const;
export type FeeRules = (typeof FeeRules)[keyof typeof FeeRules];

/**
 * EIP-1559's effective gas price: the fee cap, or the base fee plus the priority fee when that
 * is lower. A legacy transaction's gas price is both its cap and its priority fee.
 */
export function effectiveGasPrice(
  maxFeePerGas: bigint,
  maxPriorityFeePerGas: bigint,
  baseFeePerGas: bigint,
): bigint {
  const withTip = baseFeePerGas + maxPriorityFeePerGas;
  return withTip < maxFeePerGas ? withTip : maxFeePerGas;
}
