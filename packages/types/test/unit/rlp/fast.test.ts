import { decode as libraryDecode, encode as libraryEncode, RLP } from "@ethereumjs/rlp";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  decodeRlp,
  encodeRlp,
  fastRlpInstalled,
  installFastRlp,
  type RLPItem,
} from "../../../src/index.js";

/** What a decoder gives for `input`: its result, or the message it throws. */
function outcome(decode: (input: Uint8Array) => unknown, input: Uint8Array): unknown {
  try {
    return { ok: decode(input) };
  } catch (err) {
    return { error: (err as Error).message, type: (err as Error).constructor.name };
  }
}

const item: fc.Arbitrary<RLPItem> = fc.letrec<{ item: RLPItem }>((tie) => ({
  item: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    fc.uint8Array({ maxLength: 70 }),
    fc.uint8Array({ minLength: 1, maxLength: 1 }),
    fc.uint8Array({ minLength: 50, maxLength: 300 }),
    fc.array(tie("item"), { maxLength: 20 }),
  ),
})).item;

/** Encodings with a byte changed, cut short or extended: mostly invalid, some valid. */
const damaged = fc
  .tuple(item, fc.nat(), fc.integer({ min: 0, max: 255 }), fc.integer({ min: 0, max: 3 }))
  .map(([it, at, byte, how]) => {
    const bytes = libraryEncode(it);
    const i = bytes.length === 0 ? 0 : at % bytes.length;
    if (how === 0 && bytes.length > 0) bytes[i] = byte;
    if (how === 1) return bytes.slice(0, i);
    if (how === 2) return Uint8Array.from([...bytes, byte]);
    if (how === 3) return Uint8Array.from([...bytes.slice(0, i), byte, ...bytes.slice(i)]);
    return bytes;
  });

describe("RLP in one pass", () => {
  it("encodes as @ethereumjs/rlp does, byte for byte", () => {
    fc.assert(
      fc.property(item, (it) => {
        expect(encodeRlp(it)).toEqual(libraryEncode(it));
      }),
      { numRuns: 3000 },
    );
  });

  it("decodes valid encodings as @ethereumjs/rlp does", () => {
    fc.assert(
      fc.property(item, (it) => {
        const bytes = libraryEncode(it);
        expect(decodeRlp(bytes)).toEqual(libraryDecode(bytes));
        expect(decodeRlp(bytes)).toEqual(it);
      }),
      { numRuns: 3000 },
    );
  });

  it("answers damaged and random input with the library's result or error message", () => {
    fc.assert(
      fc.property(fc.oneof(damaged, fc.uint8Array({ maxLength: 80 })), (bytes) => {
        expect(outcome(decodeRlp, bytes)).toEqual(outcome(libraryDecode, bytes));
        const stream = (b: Uint8Array) => decodeRlp(b, true);
        const libraryStream = (b: Uint8Array) => libraryDecode(b, true);
        expect(outcome(stream, bytes)).toEqual(outcome(libraryStream, bytes));
      }),
      { numRuns: 20000 },
    );
  });

  it("refuses the library's edge cases with its messages", () => {
    const cases: [string, string][] = [
      ["8100", "invalid RLP encoding: invalid prefix, single byte < 0x80 are not prefixed"],
      ["b800", "invalid RLP: not enough bytes for string length"],
      ["b90000aa", "invalid RLP: extra zeros"],
      ["b837" + "00".repeat(55), "invalid RLP: expected string length to be greater than 55"],
      ["f837" + "00".repeat(55), "invalid RLP: encoded list too short"],
      ["f8ff00", "invalid RLP: total length is larger than the data"],
      ["c3c2", "invalid RLP (safeSlice): end slice of Uint8Array out-of-bounds"],
      ["0000", "invalid RLP: remainder must be zero"],
    ];
    for (const [hex, message] of cases) {
      const bytes = Uint8Array.from(Buffer.from(hex, "hex"));
      expect(() => libraryDecode(bytes)).toThrow(message);
      expect(() => decodeRlp(bytes)).toThrow(message);
    }
  });

  it("returns copies, and the input itself only for a single byte below 0x80", () => {
    const input = Uint8Array.from([0xc3, 0x82, 0x80, 0x81]);
    const out = decodeRlp(input) as Uint8Array[];
    input[2] = 0xff;
    expect(out[0]).toEqual(Uint8Array.from([0x80, 0x81]));
    const one = Uint8Array.from([0x05]);
    expect(encodeRlp(one)).toBe(one);
    expect(encodeRlp(Uint8Array.from([0x80]))).toEqual(Uint8Array.from([0x81, 0x80]));
  });

  it("hands inputs other than bytes to the library", () => {
    expect(encodeRlp(["0x0102", 5, 0n, null] as never)).toEqual(
      libraryEncode(["0x0102", 5, 0n, null]),
    );
    expect(decodeRlp("0x820102" as never)).toEqual(Uint8Array.from([1, 2]));
    expect(decodeRlp(new Uint8Array())).toEqual(new Uint8Array());
  });

  it("installs into an RLP object, keeping the library's answers", () => {
    const target = { encode: RLP.encode, decode: RLP.decode };
    expect(fastRlpInstalled(target)).toBe(false);
    installFastRlp(target);
    expect(fastRlpInstalled(target)).toBe(true);
    expect(target.decode(Uint8Array.from([0xc1, 0x01]))).toEqual([Uint8Array.from([1])]);
  });
});
