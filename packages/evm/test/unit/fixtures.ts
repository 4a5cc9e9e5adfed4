import { readFileSync } from "node:fs";
import { type Address, hexToBytes } from "@nodex/types";
import type { BlockContext } from "../../src/index.js";

/**
 * Rounds of the randomized comparisons with the library, each with its own seeds: 1 in the
 * default suite, `NODEX_CALL_ROUNDS=50` for a long run.
 */
export const ROUNDS = Array.from(
  { length: Number(process.env.NODEX_CALL_ROUNDS ?? 1) },
  (_, i) => i,
);

/** The block the comparisons run in. */
export const BLOCK: BlockContext = {
  number: 7n,
  timestamp: 1_700_000_000n,
  coinbase: hexToBytes("0x00000000000000000000000000000000000000cb") as Address,
  gasLimit: 30_000_000n,
  difficulty: 1234n,
  minimumGasPrice: 1n,
};

export const DEAD = hexToBytes("0x000000000000000000000000000000000000dead") as Address;

/** A 32-byte ABI word, in hex without `0x`. */
export const word = (n: bigint) => n.toString(16).padStart(64, "0");

/** The creation code of the bench's ERC-20 (bench/lib/Token.sol) minting 10²⁴ to its deployer. */
export function tokenCreation(): Uint8Array {
  const token = JSON.parse(
    readFileSync(new URL("../bench/token.json", import.meta.url), "utf8"),
  ) as { bytecode: string };
  return hexToBytes(`${token.bytecode}${word(10n ** 24n)}`);
}
