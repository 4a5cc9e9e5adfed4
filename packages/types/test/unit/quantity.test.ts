import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { CodecError, encodeQuantity, parseQuantity } from "../../src/index.js";
import { codecMessage, hexString } from "./codecTesting.js";

const MAX256 = (1n << 256n) - 1n;
describe("QUANTITY", () => {
  it("round-trips every 256-bit value", () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: MAX256 }), (n) => {
        const text = encodeQuantity(n);
        expect(text).toMatch(/^0x(0|[1-9a-f][0-9a-f]*)$/);
        expect(parseQuantity(text)).toBe(n);
      }),
    );
  });

  it("encodes numbers and zero canonically", () => {
    expect(encodeQuantity(0)).toBe("0x0");
    expect(encodeQuantity(0n)).toBe("0x0");
    expect(encodeQuantity(1024)).toBe("0x400");
    expect(encodeQuantity(33)).toBe("0x21");
    expect(() => encodeQuantity(-1)).toThrow(RangeError);
    expect(() => encodeQuantity(-1n)).toThrow(RangeError);
    expect(() => encodeQuantity(1.5)).toThrow(RangeError);
  });

  it("accepts uppercase digits", () => {
    expect(parseQuantity("0xABcd")).toBe(0xabcdn);
  });

  it("rejects any leading zero digit", () => {
    fc.assert(
      fc.property(
        fc.bigInt({ min: 0n, max: MAX256 >> 8n }),
        fc.integer({ min: 1, max: 5 }),
        (n, zeros) => {
          const text = `0x${"0".repeat(zeros)}${n.toString(16)}`;
          expect(codecMessage(() => parseQuantity(text, 2))).toBe(
            "invalid argument 2: hex string has leading zero digits",
          );
        },
      ),
    );
  });

  it("rejects a missing prefix", () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: MAX256 }), (n) => {
        expect(codecMessage(() => parseQuantity(n.toString(16)))).toBe(
          "invalid argument 0: hex string without 0x prefix",
        );
      }),
    );
    expect(codecMessage(() => parseQuantity("0X1f"))).toBe(
      "invalid argument 0: hex string without 0x prefix",
    );
  });

  it("rejects non-hex characters anywhere", () => {
    const nonHex = fc.string({ minLength: 1, maxLength: 1 }).filter((c) => !/[0-9a-fA-F]/.test(c));
    fc.assert(
      fc.property(
        hexString({ maxLength: 10 }),
        nonHex,
        hexString({ maxLength: 10 }),
        (a, bad, b) => {
          expect(codecMessage(() => parseQuantity(`0x${a}${bad}${b}`))).toBe(
            "invalid argument 0: invalid hex string",
          );
        },
      ),
    );
  });

  it.each([
    ["", "empty hex string"],
    ["0x", 'hex string "0x" has no digits'],
    ["0x00", "hex string has leading zero digits"],
    ["0x0g", "invalid hex string"],
    [" 0x1", "hex string without 0x prefix"],
    ["0x1 ", "invalid hex string"],
    ["-0x1", "hex string without 0x prefix"],
    [`0x1${"0".repeat(64)}`, "hex number > 256 bits"],
  ])("rejects %j: %s", (text, why) => {
    expect(codecMessage(() => parseQuantity(text, 1))).toBe(`invalid argument 1: ${why}`);
  });

  it.each([
    [1, "number"],
    [null, "null"],
    [true, "boolean"],
    [[], "array"],
    [{}, "object"],
    [undefined, "undefined"],
  ])("rejects the JSON value %j, naming its type", (value, type) => {
    expect(codecMessage(() => parseQuantity(value, 3))).toBe(
      `invalid argument 3: expected a hex string, got ${type}`,
    );
  });

  it("honours maxBits", () => {
    expect(parseQuantity("0xffffffffffffffff", 0, { maxBits: 64 })).toBe((1n << 64n) - 1n);
    expect(codecMessage(() => parseQuantity("0x10000000000000000", 0, { maxBits: 64 }))).toBe(
      "invalid argument 0: hex number > 64 bits",
    );
    expect(parseQuantity(`0x${"f".repeat(64)}`)).toBe(MAX256);
  });

  it("never throws anything but a CodecError on arbitrary input", () => {
    fc.assert(
      fc.property(fc.anything(), (value) => {
        try {
          parseQuantity(value);
        } catch (err) {
          expect(err).toBeInstanceOf(CodecError);
        }
      }),
    );
  });
});
