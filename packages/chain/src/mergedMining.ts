import {
  buildSyntheticProof,
  checkTimestampLink,
  NETWORK_MINING_PARAMS,
  nextDifficulty,
  verifyMergedMiningProof,
} from "@nodex/mergemining";
import type { NetworkPreset } from "@nodex/types";
import type { BlockSealer } from "./chain.js";
import { type ConsensusRules, MAX_FUTURE_SECONDS } from "./validation.js";

/**
 * The network's proof-of-work rules: difficulty adjusted as the reference node adjusts it, and a
 * merged-mining proof that commits to the block's hashForMergedMining, meets the target of its
 * difficulty and whose Bitcoin header time is close to the block's.
 */
export function mergedMiningRules(
  network: NetworkPreset,
  overrides: { readonly minDifficulty?: bigint } = {},
): ConsensusRules {
  const params = { ...NETWORK_MINING_PARAMS[network.name], ...overrides };
  return {
    // A development network's clock is the producer's to move (evm_increaseTime, blocks made
    // faster than one a second): the nodes that follow it take its times as they come.
    maxFutureSeconds: network.devAccounts ? null : MAX_FUTURE_SECONDS,
    freeGasLimit: network.devAccounts,
    difficulty: (parent, timestamp, uncleCount) =>
      nextDifficulty({
        parentDifficulty: parent.difficulty,
        parentTimestamp: parent.timestamp,
        timestamp,
        uncleCount,
        durationLimit: params.durationLimit,
        divisor: params.difficultyDivisor,
        minDifficulty: params.minDifficulty,
      }),
    checkSeal: (header, hashForMergedMining) => {
      const proof = verifyMergedMiningProof({
        hashForMergedMining,
        difficulty: header.difficulty,
        bitcoinHeader: header.bitcoinMergedMiningHeader,
        coinbase: header.bitcoinMergedMiningCoinbaseTransaction,
        merkleProof: header.bitcoinMergedMiningMerkleProof,
      });
      if (!proof.ok) return proof.message;
      const link = checkTimestampLink({
        bitcoinHeader: header.bitcoinMergedMiningHeader,
        timestamp: header.timestamp,
        limitSeconds: params.bitcoinTimestampLimit,
      });
      return link.ok ? undefined : link.message;
    },
  };
}

/**
 * Seals blocks of development networks with a real merged-mining proof of a synthetic Bitcoin
 * block: a coinbase carrying the tag, the header nonce ground until it meets the target. At
 * regtest's difficulty that takes a few hashes.
 */
export const SYNTHETIC_SEALER: BlockSealer = {
  seal: async (header, hashForMergedMining) => {
    const proof = buildSyntheticProof({
      hashForMergedMining,
      difficulty: header.difficulty,
      time: Number(header.timestamp),
    });
    // Not a spread followed by fields: on V8 11 (Node 20) that makes a hidden class per header.
    return Object.assign({}, header, {
      bitcoinMergedMiningHeader: proof.bitcoinHeader,
      bitcoinMergedMiningCoinbaseTransaction: proof.coinbase,
      bitcoinMergedMiningMerkleProof: proof.merkleProof,
    });
  },
};
