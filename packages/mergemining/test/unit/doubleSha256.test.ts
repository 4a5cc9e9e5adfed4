import { createHash } from "node:crypto";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { doubleSha256, hashPair } from "../../src/doubleSha256.js";
import { toHex } from "./vectors.js";

const ref = (b: Uint8Array) =>
  createHash("sha256").update(createHash("sha256").update(b).digest()).digest("hex");

describe("doubleSha256", () => {
  it("is SHA-256 twice", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 200 }), (b) => {
        expect(toHex(doubleSha256(b))).toBe(ref(b));
      }),
    );
  });

  it("the 64-byte path (Merkle steps) agrees too", () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 64, maxLength: 64 }), (b) => {
        expect(toHex(doubleSha256(b))).toBe(ref(b));
      }),
    );
  });

  it("hashPair hashes left ‖ right", () => {
    const l = new Uint8Array(32).fill(1);
    const r = new Uint8Array(32).fill(2);
    expect(toHex(hashPair(l, r))).toBe(ref(Uint8Array.from([...l, ...r])));
  });
});
