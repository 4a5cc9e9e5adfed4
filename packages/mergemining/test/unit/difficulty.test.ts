import { NETWORK_NAMES } from "@nodex/types";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { NETWORK_MINING_PARAMS, nextDifficulty } from "../../src/difficulty.js";

const regtest = NETWORK_MINING_PARAMS.regtest;
const base = {
  parentDifficulty: 1_000_000n,
  parentTimestamp: 1000n,
  uncleCount: 0,
  durationLimit: 14,
  divisor: 400n,
  minDifficulty: 1n,
};

describe("nextDifficulty (rskj DifficultyCalculator, without the 10-minute drop)", () => {
  it("faster than the target: D + D/div; slower: D − D/div; equal: D", () => {
    expect(nextDifficulty({ ...base, timestamp: 1013n })).toBe(1_002_500n);
    expect(nextDifficulty({ ...base, timestamp: 1015n })).toBe(997_500n);
    expect(nextDifficulty({ ...base, timestamp: 1014n })).toBe(1_000_000n);
  });

  it("uncles stretch the target: (1 + uncles) × durationLimit", () => {
    expect(nextDifficulty({ ...base, uncleCount: 2, timestamp: 1041n })).toBe(1_002_500n);
    expect(nextDifficulty({ ...base, uncleCount: 2, timestamp: 1042n })).toBe(1_000_000n);
    expect(nextDifficulty({ ...base, uncleCount: 2, timestamp: 1043n })).toBe(997_500n);
  });

  it("a timestamp before the parent's keeps the parent's difficulty", () => {
    expect(nextDifficulty({ ...base, timestamp: 999n })).toBe(1_000_000n);
  });

  it("no drop to the minimum after 10 minutes: one ordinary step down", () => {
    expect(nextDifficulty({ ...base, timestamp: 1000n + 3600n })).toBe(997_500n);
  });

  it("never below the minimum", () => {
    expect(nextDifficulty({ ...base, minDifficulty: 999_000n, timestamp: 2000n })).toBe(999_000n);
    expect(
      nextDifficulty({
        parentDifficulty: 1n,
        parentTimestamp: 0n,
        timestamp: 100n,
        uncleCount: 0,
        durationLimit: regtest.durationLimit,
        divisor: regtest.difficultyDivisor,
        minDifficulty: regtest.minDifficulty,
      }),
    ).toBe(1n);
  });

  it("moves by at most D/div and stays ≥ the minimum (property)", () => {
    fc.assert(
      fc.property(
        fc.bigInt({ min: 0n, max: 1n << 80n }),
        fc.bigInt({ min: 0n, max: 1n << 40n }),
        fc.integer({ min: -100, max: 1000 }),
        fc.nat({ max: 10 }),
        fc.constantFrom(...NETWORK_NAMES),
        (d, ts, delta, uncles, net) => {
          const p = NETWORK_MINING_PARAMS[net];
          const next = nextDifficulty({
            parentDifficulty: d,
            parentTimestamp: ts,
            timestamp: ts + BigInt(delta),
            uncleCount: uncles,
            durationLimit: p.durationLimit,
            divisor: p.difficultyDivisor,
            minDifficulty: p.minDifficulty,
          });
          const step = d / p.difficultyDivisor;
          if (delta < 0) expect(next).toBe(d);
          else {
            expect(next >= p.minDifficulty).toBe(true);
            const raw = next === p.minDifficulty ? d : next;
            expect(raw - d <= step && d - raw <= step).toBe(true);
          }
        },
      ),
    );
  });

  it("rejects a non-positive divisor and bad uncle counts", () => {
    expect(() => nextDifficulty({ ...base, timestamp: 1n, divisor: 0n })).toThrow(/divisor/);
    expect(() => nextDifficulty({ ...base, timestamp: 1n, uncleCount: -1 })).toThrow(/uncle/);
  });
});

describe("NETWORK_MINING_PARAMS (rskj-facts §4.1, §2.9)", () => {
  it("the reference's current values; devnet copies regtest", () => {
    expect(NETWORK_MINING_PARAMS.mainnet).toEqual({
      durationLimit: 14,
      difficultyDivisor: 400n,
      minDifficulty: 7_000_000_000_000_000n,
      bitcoinTimestampLimit: 300,
    });
    expect(NETWORK_MINING_PARAMS.testnet).toEqual({
      durationLimit: 14,
      difficultyDivisor: 400n,
      minDifficulty: 550_000_000n,
      bitcoinTimestampLimit: 7200,
    });
    expect(NETWORK_MINING_PARAMS.regtest).toEqual({
      durationLimit: 10,
      difficultyDivisor: 2048n,
      minDifficulty: 1n,
      bitcoinTimestampLimit: 300,
    });
    expect(NETWORK_MINING_PARAMS.devnet).toEqual(NETWORK_MINING_PARAMS.regtest);
  });
});
