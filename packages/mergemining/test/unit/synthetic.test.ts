import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { parseBitcoinHeader } from "../../src/bitcoinHeader.js";
import { parseBitcoinBlock } from "../../src/block.js";
import { extractTaggedHash, RSK_TAG } from "../../src/coinbase.js";
import { MergeMiningErrorCode } from "../../src/errors.js";
import { checkTimestampLink, verifyMergedMiningProof } from "../../src/proof.js";
import { buildSyntheticProof, syntheticCoinbase } from "../../src/synthetic.js";
import { compactToTarget, difficultyToTarget } from "../../src/target.js";
import { parseBitcoinTransaction } from "../../src/transaction.js";
import { toHex } from "./vectors.js";

const hfm = Uint8Array.from({ length: 32 }, (_, i) => i * 7);

describe("buildSyntheticProof", () => {
  it("regtest difficulties: the proof verifies (property over hash, difficulty 0..5000, time)", () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ minLength: 32, maxLength: 32 }),
        fc.bigInt({ min: 0n, max: 5000n }),
        fc.nat({ max: 0xffffffff }),
        (hashForMergedMining, difficulty, time) => {
          const p = buildSyntheticProof({ hashForMergedMining, difficulty, time });
          const r = verifyMergedMiningProof({ hashForMergedMining, difficulty, ...p });
          expect(r).toEqual({ ok: true, bitcoinHash: expect.any(Uint8Array) });
          expect(parseBitcoinHeader(p.bitcoinHeader).time).toBe(time);
        },
      ),
      { numRuns: 40 },
    );
  });

  it("a whole Bitcoin block whose coinbase carries the tag in an OP_RETURN output", () => {
    const p = buildSyntheticProof({
      hashForMergedMining: hfm,
      difficulty: 1000n,
      time: 1_700_000_000,
    });
    const block = parseBitcoinBlock(p.bitcoinBlock);
    expect(toHex(block.headerBytes)).toBe(toHex(p.bitcoinHeader));
    expect(block.transactions).toHaveLength(1);
    const cb = block.transactions[0]!;
    expect(cb.inputs[0]!.prevIndex).toBe(0xffffffff);
    const script = cb.outputs[0]!.scriptPubKey;
    expect(script[0]).toBe(0x6a);
    expect(toHex(script.subarray(2, 11))).toBe(toHex(RSK_TAG));
    expect(toHex(extractTaggedHash(p.coinbaseTransaction)!)).toBe(toHex(hfm));
    expect(parseBitcoinTransaction(p.coinbaseTransaction)).toEqual(cb);
    expect(p.merkleProof).toHaveLength(0);
    // nBits is informative (the chain ignores it) but encodes the target it was mined at.
    const bits = parseBitcoinHeader(p.bitcoinHeader).bits;
    expect(compactToTarget(bits).target <= difficultyToTarget(1000n)).toBe(true);
    expect(
      checkTimestampLink({
        bitcoinHeader: p.bitcoinHeader,
        timestamp: 1_700_000_000n,
        limitSeconds: 300,
      }).ok,
    ).toBe(true);
  });

  it("moves to the next extra-nonce when the nonce range is spent", () => {
    const p = buildSyntheticProof({
      hashForMergedMining: hfm,
      difficulty: 2000n,
      time: 5,
      noncesPerExtraNonce: 16,
      extraNonce: 100n,
    });
    expect(p.extraNonce).toBeGreaterThan(100n);
    expect(p.nonce).toBeLessThan(16);
    expect(p.attempts).toBe(Number(p.extraNonce - 100n) * 16 + p.nonce + 1);
    expect(toHex(p.coinbaseTransaction)).toBe(toHex(syntheticCoinbase(hfm, p.extraNonce)));
    expect(verifyMergedMiningProof({ hashForMergedMining: hfm, difficulty: 2000n, ...p }).ok).toBe(
      true,
    );
  });

  it("every single-bit flip of a synthetic proof (difficulty 2^18) is rejected (exhaustive)", () => {
    // At 2^18 a changed header passes proof of work with probability 2^-18 per flip; the inputs
    // are fixed, so the outcome is too.
    const difficulty = 1n << 18n;
    const p = buildSyntheticProof({ hashForMergedMining: hfm, difficulty, time: 1_700_000_000 });
    const input = { hashForMergedMining: hfm, difficulty, ...p };
    expect(verifyMergedMiningProof(input).ok).toBe(true);
    for (const field of ["bitcoinHeader", "coinbase"] as const) {
      for (let bit = 0; bit < p[field].length * 8; bit++) {
        const flipped = Uint8Array.from(p[field]);
        flipped[bit >> 3]! ^= 1 << (bit & 7);
        expect(
          verifyMergedMiningProof({ ...input, [field]: flipped }).ok,
          `${field} bit ${bit}`,
        ).toBe(false);
      }
    }
  });

  it("gives up after maxAttempts", () => {
    expect(() =>
      buildSyntheticProof({
        hashForMergedMining: hfm,
        difficulty: 1n << 200n,
        time: 0,
        maxAttempts: 1000,
      }),
    ).toThrow(expect.objectContaining({ code: MergeMiningErrorCode.WORK_EXHAUSTED }));
  });

  it("checks its arguments", () => {
    expect(() =>
      buildSyntheticProof({ hashForMergedMining: new Uint8Array(31), difficulty: 1n, time: 0 }),
    ).toThrow(/32 bytes/);
    expect(() =>
      buildSyntheticProof({ hashForMergedMining: hfm, difficulty: 1n, time: -1 }),
    ).toThrow(/32-bit/);
    expect(() =>
      buildSyntheticProof({
        hashForMergedMining: hfm,
        difficulty: 1n,
        time: 0,
        noncesPerExtraNonce: 0,
      }),
    ).toThrow(/noncesPerExtraNonce/);
  });
});
