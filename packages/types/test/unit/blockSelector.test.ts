import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  type BlockSelector,
  BlockTag,
  bytesToHex,
  CodecError,
  formatBlockSelector,
  hexToBytes,
  isBlockTag,
  parseBlockNumberOrTag,
  parseBlockSelector,
  parseBlockTag,
} from "../../src/index.js";
import { codecMessage } from "./codecTesting.js";

const HASH = `0x${"ab".repeat(32)}`;

/** Strings that look like hex, with the odd stray character, of lengths around a hash. */
const hexLike = fc
  .tuple(
    fc.constantFrom("0x", "0X", "", "0"),
    fc.string({ unit: fc.constantFrom(..."0123456789abcdefABCDEFxg "), maxLength: 70 }),
  )
  .map(([prefix, digits]) => `${prefix}${digits}`);

/** Objects built from the selector keys (and a stray one) with values of any kind. */
const selectorLike = fc.dictionary(
  fc.constantFrom("blockHash", "blockNumber", "requireCanonical", "other"),
  fc.oneof(fc.anything(), hexLike, fc.constantFrom(...Object.values(BlockTag), HASH)),
);
describe("block tags", () => {
  it.each(Object.values(BlockTag))("accepts %s", (tag) => {
    expect(isBlockTag(tag)).toBe(true);
    expect(parseBlockTag(tag)).toBe(tag);
    expect(parseBlockNumberOrTag(tag)).toEqual({ kind: "tag", tag });
    expect(parseBlockSelector(tag)).toEqual({ kind: "tag", tag });
  });

  it("are the five of the execution-apis spec", () => {
    expect(BlockTag).toEqual({
      LATEST: "latest",
      EARLIEST: "earliest",
      PENDING: "pending",
      SAFE: "safe",
      FINALIZED: "finalized",
    });
  });

  it.each(["safe", "finalized"])("accepts %s in every form a tag takes, and formats it", (tag) => {
    const sel: BlockSelector = { kind: "tag", tag: tag as BlockTag };
    expect(parseBlockTag(tag, 2)).toBe(tag);
    expect(parseBlockNumberOrTag(tag, 1)).toEqual(sel);
    expect(parseBlockSelector(tag)).toEqual(sel);
    expect(parseBlockSelector({ blockNumber: tag })).toEqual(sel);
    expect(formatBlockSelector(sel)).toBe(tag);
    expect(codecMessage(() => parseBlockTag(tag.toUpperCase()))).toMatch(/invalid block tag/);
  });

  it("rejects unknown tags, naming the choices", () => {
    expect(codecMessage(() => parseBlockTag("latests", 1))).toBe(
      'invalid argument 1: invalid block tag "latests", want latest, earliest, pending, safe, finalized',
    );
    expect(codecMessage(() => parseBlockNumberOrTag("Latest", 1))).toBe(
      'invalid argument 1: invalid block tag "Latest", want latest, earliest, pending, safe, finalized or a hex block number',
    );
    expect(codecMessage(() => parseBlockTag(1))).toBe(
      "invalid argument 0: expected a block tag (latest, earliest, pending, safe, finalized), got number",
    );
  });
});

describe("parseBlockNumberOrTag", () => {
  it("round-trips block numbers", () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: (1n << 64n) - 1n }), (n) => {
        const sel = parseBlockNumberOrTag(`0x${n.toString(16)}`);
        expect(sel).toEqual({ kind: "number", number: n });
        expect(formatBlockSelector(sel)).toBe(`0x${n.toString(16)}`);
      }),
    );
  });

  it("rejects a hash, which only selectors accept", () => {
    expect(codecMessage(() => parseBlockNumberOrTag(HASH))).toBe(
      "invalid argument 0: hex number > 64 bits",
    );
  });

  it.each([
    [12, "invalid argument 0: expected a block number or tag, got number"],
    ["0x01", "invalid argument 0: hex string has leading zero digits"],
    ["0x", 'invalid argument 0: hex string "0x" has no digits'],
    ["0X1f", "invalid argument 0: hex string without 0x prefix"],
    ["0x1g", "invalid argument 0: invalid hex string"],
    [
      "26",
      'invalid argument 0: invalid block tag "26", want latest, earliest, pending, safe, finalized or a hex block number',
    ],
    [
      "",
      'invalid argument 0: invalid block tag "", want latest, earliest, pending, safe, finalized or a hex block number',
    ],
    ["0x10000000000000000", "invalid argument 0: hex number > 64 bits"],
    [null, "invalid argument 0: expected a block number or tag, got null"],
    [{ blockNumber: "0x1" }, "invalid argument 0: expected a block number or tag, got object"],
  ])("rejects %j", (value, msg) => {
    expect(codecMessage(() => parseBlockNumberOrTag(value))).toBe(msg);
  });

  it("rejects any leading zero digit", () => {
    fc.assert(
      fc.property(
        fc.bigInt({ min: 0n, max: (1n << 56n) - 1n }),
        fc.integer({ min: 1, max: 4 }),
        fc.integer({ min: 0, max: 5 }),
        (n, zeros, arg) => {
          const text = `0x${"0".repeat(zeros)}${n.toString(16)}`;
          expect(codecMessage(() => parseBlockNumberOrTag(text, arg))).toBe(
            `invalid argument ${arg}: hex string has leading zero digits`,
          );
        },
      ),
    );
  });

  it("cuts long strings in messages", () => {
    const long = "x".repeat(200);
    expect(codecMessage(() => parseBlockNumberOrTag(long))).toBe(
      `invalid argument 0: invalid block tag "${"x".repeat(80)}…", want latest, earliest, pending, safe, finalized or a hex block number`,
    );
    expect(codecMessage(() => parseBlockTag(long))).toBe(
      `invalid argument 0: invalid block tag "${"x".repeat(80)}…", want latest, earliest, pending, safe, finalized`,
    );
  });

  it("never throws anything but a CodecError on arbitrary input", () => {
    fc.assert(
      fc.property(fc.oneof(fc.anything(), fc.string(), hexLike), (value) => {
        try {
          parseBlockNumberOrTag(value);
          parseBlockTag(value);
        } catch (err) {
          expect(err).toBeInstanceOf(CodecError);
        }
      }),
    );
  });
});

describe("parseBlockSelector", () => {
  it("accepts a bare block hash", () => {
    expect(parseBlockSelector(HASH)).toEqual({
      kind: "hash",
      hash: hexToBytes(HASH),
      requireCanonical: false,
    });
  });

  it.each([
    [{ blockHash: HASH }, false],
    [{ blockHash: HASH, requireCanonical: false }, false],
    [{ blockHash: HASH, requireCanonical: true }, true],
  ])("accepts the EIP-1898 hash object %j", (value, canonical) => {
    const sel = parseBlockSelector(value);
    expect(sel).toEqual({ kind: "hash", hash: hexToBytes(HASH), requireCanonical: canonical });
    expect(formatBlockSelector(sel)).toBe(HASH);
  });

  it("round-trips any hash, bare or in an object", () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ minLength: 32, maxLength: 32 }),
        fc.constantFrom(undefined, true, false),
        (bytes, canonical) => {
          const hash = bytesToHex(bytes);
          expect(parseBlockSelector(hash)).toEqual({
            kind: "hash",
            hash: bytes,
            requireCanonical: false,
          });
          const obj =
            canonical === undefined
              ? { blockHash: hash }
              : { blockHash: hash, requireCanonical: canonical };
          const sel = parseBlockSelector(obj);
          expect(sel).toEqual({ kind: "hash", hash: bytes, requireCanonical: canonical === true });
          expect(formatBlockSelector(sel)).toBe(hash);
        },
      ),
    );
  });

  it("accepts an uppercase hash", () => {
    expect(parseBlockSelector(`0x${"AB".repeat(32)}`)).toEqual({
      kind: "hash",
      hash: hexToBytes(HASH),
      requireCanonical: false,
    });
  });

  it.each<[unknown, BlockSelector]>([
    [{ blockNumber: "0x1b4" }, { kind: "number", number: 0x1b4n }],
    [{ blockNumber: "0x0" }, { kind: "number", number: 0n }],
    ...Object.values(BlockTag).map((tag): [unknown, BlockSelector] => [
      { blockNumber: tag },
      { kind: "tag", tag },
    ]),
    [
      { blockNumber: "0x1", requireCanonical: undefined },
      { kind: "number", number: 1n },
    ],
    [
      { blockHash: undefined, blockNumber: "0x2" },
      { kind: "number", number: 2n },
    ],
    ["0x0", { kind: "number", number: 0n }],
    ["0xffffffffffffffff", { kind: "number", number: (1n << 64n) - 1n }],
  ])("accepts %j", (value, expected) => {
    expect(parseBlockSelector(value)).toEqual(expected);
  });

  it.each([
    [
      { blockHash: HASH, blockNumber: "0x1" },
      "cannot specify both blockHash and blockNumber, choose one",
    ],
    [{}, "a block selector object needs blockHash or blockNumber"],
    [
      { blockHash: HASH, requireCanonical: "yes" },
      "requireCanonical must be a boolean, got string",
    ],
    [
      { blockNumber: "0x1", requireCanonical: true },
      "requireCanonical is only allowed with blockHash",
    ],
    [{ blockHash: "0x1234" }, "blockHash: hex string has length 4, want 64 for hash"],
    [{ blockNumber: "0x01" }, "blockNumber: hex string has leading zero digits"],
    [{ blockHash: HASH, extra: 1 }, 'unknown block selector field "extra"'],
    [{ blockNumber: "0x1", BlockHash: HASH }, 'unknown block selector field "BlockHash"'],
    [{ requireCanonical: true }, "a block selector object needs blockHash or blockNumber"],
    [
      { blockHash: null, blockNumber: "0x1" },
      "cannot specify both blockHash and blockNumber, choose one",
    ],
    [{ blockHash: null }, "blockHash: expected a hex string, got null"],
    [{ blockHash: 5 }, "blockHash: expected a hex string, got number"],
    [{ blockHash: HASH.slice(2) }, "blockHash: hex string without 0x prefix"],
    [{ blockHash: `${HASH}0` }, "blockHash: hex string of odd length"],
    [{ blockHash: HASH, requireCanonical: null }, "requireCanonical must be a boolean, got null"],
    [{ blockHash: HASH, requireCanonical: 1 }, "requireCanonical must be a boolean, got number"],
    [{ blockNumber: null }, "blockNumber: expected a block number or tag, got null"],
    [{ blockNumber: 5 }, "blockNumber: expected a block number or tag, got number"],
    [{ blockNumber: HASH }, "blockNumber: hex number > 64 bits"],
    [
      { blockNumber: "latests" },
      'blockNumber: invalid block tag "latests", want latest, earliest, pending, safe, finalized or a hex block number',
    ],
    [
      { blockNumber: "0x1", requireCanonical: false },
      "requireCanonical is only allowed with blockHash",
    ],
    [[], "expected a block number, tag, hash or object, got array"],
    [[HASH], "expected a block number, tag, hash or object, got array"],
    [true, "expected a block number, tag, hash or object, got boolean"],
    [7, "expected a block number, tag, hash or object, got number"],
    [null, "expected a block number, tag, hash or object, got null"],
    [undefined, "expected a block number, tag, hash or object, got undefined"],
    [`0x${"zz".repeat(32)}`, "invalid hex string"],
    [`0X${"ab".repeat(32)}`, "hex string without 0x prefix"],
    [`0x1${"ab".repeat(32)}`, "hex number > 64 bits"],
    [
      "latests",
      'invalid block tag "latests", want latest, earliest, pending, safe, finalized or a hex block number',
    ],
    ["0x01", "hex string has leading zero digits"],
  ])("rejects %j", (value, why) => {
    expect(codecMessage(() => parseBlockSelector(value, 2))).toBe(`invalid argument 2: ${why}`);
  });

  it("never throws anything but a CodecError on arbitrary input", () => {
    fc.assert(
      fc.property(fc.oneof(fc.anything(), hexLike, selectorLike), (value) => {
        try {
          parseBlockSelector(value);
        } catch (err) {
          expect(err).toBeInstanceOf(CodecError);
        }
      }),
    );
  });
});
