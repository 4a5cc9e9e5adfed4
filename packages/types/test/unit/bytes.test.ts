import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  bigintToBytesBE,
  bytesToBigintBE,
  concatBytes,
  equalBytes,
  hexToBytes as fromHex,
  lastIndexOf,
  readU32BE,
  readU32LE,
  reverseBytes,
  bytesToUnprefixedHex as toHex,
  writeU32BE,
  writeU32LE,
} from "../../src/index.js";

describe("byte helpers", () => {
  it("lastIndexOf agrees with Buffer.lastIndexOf", () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ maxLength: 60 }),
        fc.uint8Array({ minLength: 1, maxLength: 3 }),
        (h, n) => {
          expect(lastIndexOf(h, n)).toBe(Buffer.from(h).lastIndexOf(Buffer.from(n)));
        },
      ),
    );
  });

  it("integers round-trip", () => {
    fc.assert(
      fc.property(fc.nat({ max: 0xffffffff }), (v) => {
        const b = new Uint8Array(4);
        writeU32LE(b, 0, v);
        expect(readU32LE(b, 0)).toBe(v);
        writeU32BE(b, 0, v);
        expect(readU32BE(b, 0)).toBe(v);
      }),
    );
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: (1n << 256n) - 1n }), (v) => {
        expect(bytesToBigintBE(bigintToBytesBE(v, 32))).toBe(v);
      }),
    );
  });

  it("hex, concat, reverse, equal", () => {
    expect(toHex(fromHex("0x00ff10"))).toBe("00ff10");
    expect(() => fromHex("abc")).toThrow(/hex/);
    expect(toHex(concatBytes(Uint8Array.of(1), Uint8Array.of(2, 3)))).toBe("010203");
    expect(toHex(reverseBytes(Uint8Array.of(1, 2, 3)))).toBe("030201");
    expect(equalBytes(Uint8Array.of(1), Uint8Array.of(1))).toBe(true);
    expect(equalBytes(Uint8Array.of(1), Uint8Array.of(1, 2))).toBe(false);
  });
});
