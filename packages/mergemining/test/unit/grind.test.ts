import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { bitcoinHash } from "../../src/bitcoinHeader.js";
import { grindNonce } from "../../src/grind.js";
import { difficultyToTarget, hashMeetsTarget, targetToBytes } from "../../src/target.js";
import { mainnetCheckpoints } from "./vectors.js";

function naive(header: Uint8Array, target: Uint8Array, from: number, to: number): number {
  const h = Uint8Array.from(header);
  const view = new DataView(h.buffer);
  for (let n = from; n < to; n++) {
    view.setUint32(76, n, true);
    if (hashMeetsTarget(bitcoinHash(h), target)) return n;
  }
  return -1;
}

describe("grindNonce", () => {
  it("finds the same first nonce as hashing each whole header (property)", () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ minLength: 80, maxLength: 80 }),
        fc.bigInt({ min: 1n, max: 100n }),
        fc.nat({ max: 2 ** 32 - 300 }),
        (header, d, from) => {
          const t = targetToBytes(difficultyToTarget(d));
          expect(grindNonce(header, t, from, from + 300)).toBe(naive(header, t, from, from + 300));
        },
      ),
      { numRuns: 50 },
    );
  });

  it("finds the real nonce of a real mainnet header (rskj checkpoints) near it", () => {
    const header = mainnetCheckpoints()[200]!.header;
    const nonce = new DataView(header.buffer, header.byteOffset).getUint32(76, true);
    const from = Math.max(0, nonce - 1000);
    // The header's own hash as the target: exactly its nonce meets it in this range (or an
    // earlier one with an even smaller hash, which the naive loop agrees on).
    const target = Uint8Array.from(bitcoinHash(header)).reverse();
    const found = grindNonce(header, target, from, nonce + 1);
    expect(found).toBe(naive(header, target, from, nonce + 1));
    expect(found).toBeGreaterThanOrEqual(from);
  });

  it("returns −1 when no nonce in the range meets the target, and checks its arguments", () => {
    expect(grindNonce(new Uint8Array(80), new Uint8Array(32), 0, 100)).toBe(-1);
    expect(() => grindNonce(new Uint8Array(79), new Uint8Array(32), 0, 1)).toThrow(/80-byte/);
    expect(() => grindNonce(new Uint8Array(80), new Uint8Array(32), 0, 2 ** 32 + 1)).toThrow(
      /nonce range/,
    );
  });
});
