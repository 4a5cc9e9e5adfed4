import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  BlockTag,
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
describe("block tags", () => {
  it.each(Object.values(BlockTag))("accepts %s", (tag) => {
    expect(isBlockTag(tag)).toBe(true);
    expect(parseBlockTag(tag)).toBe(tag);
    expect(parseBlockNumberOrTag(tag)).toEqual({ kind: "tag", tag });
    expect(parseBlockSelector(tag)).toEqual({ kind: "tag", tag });
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
    [null, "invalid argument 0: expected a block number or tag, got null"],
  ])("rejects %j", (value, msg) => {
    expect(codecMessage(() => parseBlockNumberOrTag(value))).toBe(msg);
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

  it.each([
    [{ blockNumber: "0x1b4" }, { kind: "number", number: 0x1b4n }],
    [{ blockNumber: "latest" }, { kind: "tag", tag: "latest" }],
    ["0x0", { kind: "number", number: 0n }],
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
    [[], "expected a block number, tag, hash or object, got array"],
    [true, "expected a block number, tag, hash or object, got boolean"],
    [`0x${"zz".repeat(32)}`, "invalid hex string"],
  ])("rejects %j", (value, why) => {
    expect(codecMessage(() => parseBlockSelector(value, 2))).toBe(`invalid argument 2: ${why}`);
  });

  it("never throws anything but a CodecError on arbitrary input", () => {
    fc.assert(
      fc.property(fc.anything(), (value) => {
        try {
          parseBlockSelector(value);
        } catch (err) {
          expect(err).toBeInstanceOf(CodecError);
        }
      }),
    );
  });
});
