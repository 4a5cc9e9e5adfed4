import type { NetworkName } from "@nodex/types";
import { invalidArgument } from "./errors.js";

export interface DifficultyInput {
  readonly parentDifficulty: bigint;
  readonly parentTimestamp: bigint;
  readonly timestamp: bigint;
  /** Uncles of the block whose difficulty is computed. */
  readonly uncleCount: number;
  /** Block-time target in seconds. */
  readonly durationLimit: number;
  readonly divisor: bigint;
  readonly minDifficulty: bigint;
}

/**
 * The difficulty of a block from its parent (the reference's `DifficultyCalculator`, without the
 * 10-minute drop to the minimum): T = (1 + uncleCount) × durationLimit against the time since the
 * parent; faster → D + ⌊D/divisor⌋, slower → D − ⌊D/divisor⌋, equal → D, never below
 * `minDifficulty`. A timestamp before the parent's gives the parent's difficulty unchanged.
 */
export function nextDifficulty(input: DifficultyInput): bigint {
  const { parentDifficulty: d, divisor, minDifficulty } = input;
  if (divisor <= 0n) throw invalidArgument("difficulty divisor must be positive");
  if (d < 0n || minDifficulty < 0n) throw invalidArgument("difficulties are not negative");
  if (!Number.isInteger(input.uncleCount) || input.uncleCount < 0) {
    throw invalidArgument(`bad uncle count ${input.uncleCount}`);
  }
  const delta = input.timestamp - input.parentTimestamp;
  if (delta < 0n) return d;
  const t = BigInt((1 + input.uncleCount) * input.durationLimit);
  const next = t > delta ? d + d / divisor : t < delta ? d - d / divisor : d;
  return next < minDifficulty ? minDifficulty : next;
}

export interface NetworkMiningParams {
  /** Block-time target, seconds. */
  readonly durationLimit: number;
  readonly difficultyDivisor: bigint;
  readonly minDifficulty: bigint;
  /** Limit of |Bitcoin header time − block timestamp|, seconds (RSKIP179). */
  readonly bitcoinTimestampLimit: number;
}

/**
 * Mining parameters per network: the reference node's current values (rskj master d987a4c6c1,
 * `org/ethereum/config/Constants.java` and `co/rsk/core/DifficultyCalculator.java`, as recorded in
 * shared/reference/rskj-facts.md §4.1 and §2.9). Devnet uses regtest's.
 */
export const NETWORK_MINING_PARAMS: Readonly<Record<NetworkName, NetworkMiningParams>> = {
  // 14 s target; divisor 400 since RSKIP156 (papyrus200); minimum 7×10^15; 300 s timestamp link.
  mainnet: {
    durationLimit: 14,
    difficultyDivisor: 400n,
    minDifficulty: 7_000_000_000_000_000n,
    bitcoinTimestampLimit: 300,
  },
  // 14 s; divisor 400; minimum 550,000,000 since RSKIP290 (131,072 before testnet block
  // 2,581,800); 7,200 s timestamp link since RSKIP297.
  testnet: {
    durationLimit: 14,
    difficultyDivisor: 400n,
    minDifficulty: 550_000_000n,
    bitcoinTimestampLimit: 7200,
  },
  // 10 s; divisor always 2048; minimum 1; 300 s.
  regtest: {
    durationLimit: 10,
    difficultyDivisor: 2048n,
    minDifficulty: 1n,
    bitcoinTimestampLimit: 300,
  },
  // Not a reference network: regtest's values.
  devnet: {
    durationLimit: 10,
    difficultyDivisor: 2048n,
    minDifficulty: 1n,
    bitcoinTimestampLimit: 300,
  },
};
