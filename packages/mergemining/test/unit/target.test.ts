import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  compactToTarget,
  difficultyToTarget,
  hashMeetsTarget,
  hashToBigint,
  targetToBytes,
  targetToCompact,
} from "../../src/target.js";
import { bitcoinjsBlocks, toHex } from "./vectors.js";

describe("compactToTarget / targetToCompact", () => {
  it("bitcoinjs-lib fixture targets (nBits → target)", () => {
    const { targets } = bitcoinjsBlocks();
    expect(targets.length).toBe(6);
    for (const { bits, expected } of targets) {
      const n = Number.parseInt(bits, 16);
      const { target } = compactToTarget(n);
      expect(toHex(targetToBytes(target))).toBe(expected);
    }
  });

  // Bitcoin Core src/test/arith_uint256_tests.cpp (bignum_SetCompact), same inputs and outputs.
  const core: [number, bigint, boolean, boolean, number][] = [
    [0x00000000, 0n, false, false, 0],
    [0x00123456, 0n, false, false, 0],
    [0x01003456, 0n, false, false, 0],
    [0x02000056, 0n, false, false, 0],
    [0x03000000, 0n, false, false, 0],
    [0x04000000, 0n, false, false, 0],
    [0x00923456, 0n, false, false, 0],
    [0x01803456, 0n, false, false, 0],
    [0x02800056, 0n, false, false, 0],
    [0x03800000, 0n, false, false, 0],
    [0x04800000, 0n, false, false, 0],
    [0x01123456, 0x12n, false, false, 0x01120000],
    [0x01fedcba, 0x7en, true, false, 0x01fe0000],
    [0x02123456, 0x1234n, false, false, 0x02123400],
    [0x03123456, 0x123456n, false, false, 0x03123456],
    [0x04123456, 0x12345600n, false, false, 0x04123456],
    [0x04923456, 0x12345600n, true, false, 0x04923456],
    [0x05009234, 0x92340000n, false, false, 0x05009234],
    [0x20123456, 0x123456n << 232n, false, false, 0x20123456],
  ];
  it.each(core)("Core SetCompact(%s)", (bits, target, negative, overflow, back) => {
    const r = compactToTarget(bits);
    expect(r).toEqual({ target, negative, overflow });
    expect(targetToCompact(r.target, r.negative)).toBe(back);
  });

  it("overflow: 0xff123456 and the size limits", () => {
    expect(compactToTarget(0xff123456).overflow).toBe(true);
    expect(compactToTarget(0x2100ffff).overflow).toBe(false); // 0xffff << 240 fits
    expect(compactToTarget(0x21010000).overflow).toBe(true); // 0x010000 << 240 = 2^256
    expect(compactToTarget(0x21000100).overflow).toBe(false); // 2^248
    expect(compactToTarget(0x22000100).overflow).toBe(true); // 2^256
    expect(compactToTarget(0x22000001).overflow).toBe(false); // 2^248
    expect(compactToTarget(0x23000001).overflow).toBe(true);
    expect(compactToTarget(0x23000000).overflow).toBe(false); // zero never overflows
  });

  it("GetCompact shifts a mantissa with the sign bit into the exponent", () => {
    expect(targetToCompact(0x80n)).toBe(0x02008000);
    expect(targetToCompact(0x123456n)).toBe(0x03123456);
    expect(targetToCompact(0n)).toBe(0);
  });

  it("round trip: a target's compact value decodes to the target truncated to its significant bytes", () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: (1n << 256n) - 1n }), (t) => {
        const r = compactToTarget(targetToCompact(t));
        expect(r.negative || r.overflow).toBe(false);
        let size = 0;
        for (let x = t; x > 0n; x >>= 8n) size++;
        // Three significant bytes are kept, two when the top one has the sign bit (0x80) set.
        const keep = size > 0 && t >> BigInt(8 * (size - 1)) >= 0x80n ? 2 : 3;
        const drop = BigInt(8 * Math.max(0, size - keep));
        expect(r.target).toBe((t >> drop) << drop);
        expect(r.target <= t).toBe(true);
      }),
    );
  });

  it("rejects targets outside 256 bits", () => {
    expect(() => targetToCompact(1n << 256n)).toThrow(/256-bit/);
    expect(() => targetToCompact(-1n)).toThrow(/256-bit/);
  });
});

describe("difficultyToTarget", () => {
  it("floor(2^256 / max(d, 3))", () => {
    expect(difficultyToTarget(0n)).toBe((1n << 256n) / 3n);
    expect(difficultyToTarget(1n)).toBe((1n << 256n) / 3n);
    expect(difficultyToTarget(2n)).toBe((1n << 256n) / 3n);
    expect(difficultyToTarget(3n)).toBe((1n << 256n) / 3n);
    expect(difficultyToTarget(0x1aa2b738n)).toBe((1n << 256n) / 0x1aa2b738n);
    expect(difficultyToTarget(1n << 256n)).toBe(1n);
    expect(difficultyToTarget((1n << 256n) + 1n)).toBe(0n);
    expect(() => difficultyToTarget(-1n)).toThrow(/negative/);
  });
});

describe("hashMeetsTarget", () => {
  it("agrees with the bigint comparison of the display-order hash", () => {
    const bytes32 = fc.uint8Array({ minLength: 32, maxLength: 32 });
    fc.assert(
      fc.property(bytes32, bytes32, (h, t) => {
        const expected = hashToBigint(h) <= BigInt(`0x${toHex(t) || "0"}`);
        expect(hashMeetsTarget(h, t)).toBe(expected);
      }),
    );
  });

  it("equal is enough; one more is not", () => {
    const t = targetToBytes(1000n);
    const h = Uint8Array.from(t).reverse();
    expect(hashMeetsTarget(h, t)).toBe(true);
    h[0] = h[0]! + 1;
    expect(hashMeetsTarget(h, t)).toBe(false);
  });
});
