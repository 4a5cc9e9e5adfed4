import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { bytesToHex, bytesToUnprefixedHex, hexToBytes, keccak256 } from "../../src/index.js";
import { hexString } from "./codecTesting.js";

const nonHexChar = fc.string({ minLength: 1, maxLength: 1 }).filter((c) => !/[0-9a-fA-F]/.test(c));

describe("bytesToHex", () => {
  it("writes lowercase 0x hex, two digits a byte", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 300 }), (bytes) => {
        const text = bytesToHex(bytes);
        expect(text).toBe(`0x${Buffer.from(bytes).toString("hex")}`);
        expect(text).toMatch(/^0x([0-9a-f]{2})*$/);
      }),
    );
  });

  it("writes 0x for no bytes and keeps leading zero bytes", () => {
    expect(bytesToHex(new Uint8Array())).toBe("0x");
    expect(bytesToHex(new Uint8Array([0, 1, 0xab, 0xff]))).toBe("0x0001abff");
  });

  it("reads only the view of a subarray", () => {
    const buf = new Uint8Array([1, 2, 3, 4]);
    expect(bytesToHex(buf.subarray(1, 3))).toBe("0x0203");
  });
});

describe("bytesToUnprefixedHex", () => {
  it("is bytesToHex without 0x, and hexToBytes reads it back", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 100 }), (bytes) => {
        const text = bytesToUnprefixedHex(bytes);
        expect(text).toBe(Buffer.from(bytes).toString("hex"));
        expect(hexToBytes(text)).toEqual(bytes);
      }),
    );
    expect(bytesToUnprefixedHex(new Uint8Array())).toBe("");
  });

  it("reads only its view, at any offset into a larger buffer and at every length", () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ minLength: 1, maxLength: 300 }),
        fc.nat(),
        fc.nat(),
        (bytes, a, b) => {
          const start = a % bytes.length;
          const end = start + (b % (bytes.length - start + 1));
          const view = bytes.subarray(start, end);
          expect(bytesToUnprefixedHex(view)).toBe(
            Buffer.from(bytes.slice(start, end)).toString("hex"),
          );
        },
      ),
    );
  });
});

describe("bytesToHex and bytesToUnprefixedHex in turn", () => {
  it("spell each length alone, longer before shorter, with and without 0x", () => {
    // Lengths from 8 to 64 are spelled in one shared buffer: nothing of one text may show up in
    // the next, and the input stays as it was.
    for (let n = 80; n >= 0; n--) {
      const bytes = Uint8Array.from({ length: n }, (_, i) => (n * 29 + i * 11) & 0xff);
      const copy = bytes.slice();
      const expected = Buffer.from(copy).toString("hex");
      expect(bytesToHex(bytes)).toBe(`0x${expected}`);
      expect(bytesToUnprefixedHex(bytes)).toBe(expected);
      expect(bytes).toEqual(copy);
    }
  });
});

describe("hexToBytes", () => {
  it("round-trips with bytesToHex, with or without 0x, in either case", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 300 }), (bytes) => {
        const text = bytesToHex(bytes);
        expect(hexToBytes(text)).toEqual(bytes);
        expect(hexToBytes(text.slice(2))).toEqual(bytes);
        expect(hexToBytes(`0x${text.slice(2).toUpperCase()}`)).toEqual(bytes);
      }),
    );
  });

  it("decodes the empty forms to no bytes", () => {
    expect(hexToBytes("0x")).toEqual(new Uint8Array());
    expect(hexToBytes("")).toEqual(new Uint8Array());
  });

  it("throws a TypeError on odd lengths", () => {
    fc.assert(
      fc.property(
        hexString({ minLength: 1, maxLength: 99 }).filter((s) => s.length % 2 === 1),
        fc.boolean(),
        (digits, prefixed) => {
          expect(() => hexToBytes(prefixed ? `0x${digits}` : digits)).toThrow(TypeError);
        },
      ),
    );
  });

  it("throws a TypeError on any non-hex character", () => {
    fc.assert(
      fc.property(
        hexString({ maxLength: 20 }),
        nonHexChar,
        hexString({ maxLength: 20 }),
        (a, c, b) => {
          // Pad to an even length so only the bad character can be the cause.
          const digits = `${a}${c}${b}`;
          const even = digits.length % 2 === 0 ? digits : `${digits}0`;
          expect(() => hexToBytes(`0x${even}`)).toThrow(TypeError);
        },
      ),
    );
    expect(() => hexToBytes("0X12")).toThrow(TypeError);
  });
});

describe("keccak256", () => {
  it.each([
    ["", "0xc5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470"],
    ["abc", "0x4e03657aea45a94fc7d47ba826c8d667c0d1e6e33a64a036ec44f58fa12d6c45"],
    ["cow", "0xc85ef7d79691fe79573b1a7064c19c1a9819ebdbd1faaab1a8ec92344438aaf4"],
  ])("hashes %j", (text, hash) => {
    expect(bytesToHex(keccak256(new TextEncoder().encode(text)))).toBe(hash);
  });
});
