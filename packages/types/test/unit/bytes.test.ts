import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  bigintToBytes,
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
  trimLeadingZeros,
  writeU32BE,
  writeU32LE,
  writeU64BE,
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

  it("integers and bytes convert as a byte-by-byte reading would, at every size", () => {
    const slow = (b: Uint8Array) => b.reduce((n, x) => (n << 8n) | BigInt(x), 0n);
    const sizes = [0, 1, 8, 31, 32, 33, 40, 48, 53, 54, 64, 255, 256];
    for (const bits of sizes) {
      for (const v of [(1n << BigInt(bits)) - 1n, 1n << BigInt(bits), BigInt(bits) * 3n]) {
        const minimal = bigintToBytes(v);
        expect(minimal[0] === 0).toBe(false);
        expect(slow(minimal)).toBe(v);
        expect(bytesToBigintBE(minimal)).toBe(v);
        if (v < 1n << 256n) expect(slow(bigintToBytesBE(v, 32))).toBe(v);
      }
    }
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 40 }), (b) => {
        expect(bytesToBigintBE(b)).toBe(slow(b));
      }),
    );
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: (1n << 300n) - 1n }), (v) => {
        const minimal = bigintToBytes(v);
        expect(minimal.length).toBe(v === 0n ? 0 : Math.ceil(v.toString(2).length / 8));
        expect(slow(minimal)).toBe(v);
        // The low eight bytes, as an overflowing write keeps them.
        expect(slow(bigintToBytesBE(v, 8))).toBe(v & 0xffffffffffffffffn);
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

  it("trimLeadingZeros drops exactly the leading zero bytes, as @ethereumjs/util's unpadBytes", async () => {
    const { unpadBytes } = await import("@ethereumjs/util");
    fc.assert(
      fc.property(fc.nat(6), fc.uint8Array({ maxLength: 32 }), (zeros, rest) => {
        const b = concatBytes(new Uint8Array(zeros), rest);
        expect(toHex(trimLeadingZeros(b))).toBe(toHex(unpadBytes(b)));
      }),
    );
    const none = Uint8Array.of(1, 0);
    expect(trimLeadingZeros(none)).toBe(none);
    expect(trimLeadingZeros(new Uint8Array(3)).length).toBe(0);
  });
});

describe("writeU64BE", () => {
  it("writes what DataView's setBigUint64 writes, wrapping modulo 2^64 alike", () => {
    const values = [0n, 1n, 255n, 256n, 2n ** 32n - 1n, 2n ** 32n, 2n ** 53n + 3n, 2n ** 64n - 1n];
    let seed = 0x1234_5678n;
    for (let i = 0; i < 500; i++) {
      seed = (seed * 6364136223846793005n + 1442695040888963407n) % 2n ** 64n;
      values.push(seed >> BigInt(i % 64));
    }
    values.push(-1n, -(2n ** 40n), 2n ** 64n + 5n);
    for (const value of values) {
      const expected = new Uint8Array(new ArrayBuffer(12));
      new DataView(expected.buffer).setBigUint64(3, value);
      const got = new Uint8Array(12);
      writeU64BE(got, 3, value);
      expect(got, `value ${value}`).toEqual(expected);
    }
  });
});
