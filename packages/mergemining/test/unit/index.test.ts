// The examples of README.md, run against the public index (keep the two in step).
import { describe, expect, it } from "vitest";
import {
  buildMerkleProof,
  buildSyntheticProof,
  checkTimestampLink,
  coinbaseWithoutWitness,
  compressCoinbase,
  extractTaggedHash,
  hashToDisplayHex,
  NETWORK_MINING_PARAMS,
  nextDifficulty,
  parseBitcoinBlock,
  verifyMergedMiningProof,
} from "../../src/index.js";
import { testnetBlock926485 } from "./vectors.js";

describe("README examples", () => {
  it("verify a proof from a whole Bitcoin block (mnr_submitBitcoinBlock)", () => {
    const bitcoinBlockBytes = testnetBlock926485().block;
    // --- README: from a block ---
    const block = parseBitcoinBlock(bitcoinBlockBytes);
    const fullCoinbase = coinbaseWithoutWitness(block);
    const hashForMergedMining = extractTaggedHash(fullCoinbase); // which block the miner worked on
    if (hashForMergedMining === undefined) throw new Error("no RSKBLOCK: tag");
    const result = verifyMergedMiningProof({
      hashForMergedMining,
      difficulty: 1_000_000n,
      bitcoinHeader: block.headerBytes,
      coinbase: compressCoinbase(fullCoinbase),
      merkleProof: buildMerkleProof(block.txids),
    });
    if (!result.ok) throw new Error(`${result.reason}: ${result.message}`);
    // --- end ---
    expect(hashToDisplayHex(result.bitcoinHash)).toBe(
      "000000000000015d6077a411a8f5cc95caf775ccf11c54e27df75ce58d187313",
    );
  });

  it("mine on regtest", () => {
    const hashForMergedMining = new Uint8Array(32).fill(7);
    const timestamp = 1_700_000_000n;
    // --- README: regtest ---
    const params = NETWORK_MINING_PARAMS.regtest;
    const difficulty = nextDifficulty({
      parentDifficulty: 1n,
      parentTimestamp: timestamp - 12n,
      timestamp,
      uncleCount: 0,
      durationLimit: params.durationLimit,
      divisor: params.difficultyDivisor,
      minDifficulty: params.minDifficulty,
    });
    const proof = buildSyntheticProof({ hashForMergedMining, difficulty, time: Number(timestamp) });
    const verified = verifyMergedMiningProof({ hashForMergedMining, difficulty, ...proof });
    const linked = checkTimestampLink({
      bitcoinHeader: proof.bitcoinHeader,
      timestamp,
      limitSeconds: params.bitcoinTimestampLimit,
    });
    // --- end ---
    expect(difficulty).toBe(1n);
    expect(verified.ok && linked.ok).toBe(true);
  });
});
