import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  bytesToHex,
  CodecError,
  encodeData,
  hexToBytes,
  parseAddress,
  parseBloom,
  parseData,
  parseHash,
  parseNonce,
  toChecksumAddress,
} from "../../src/index.js";
import { codecMessage, hexString } from "./codecTesting.js";

const nonHexChar = fc.string({ minLength: 1, maxLength: 1 }).filter((c) => !/[0-9a-fA-F]/.test(c));

describe("DATA", () => {
  it("round-trips arbitrary bytes", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 300 }), (bytes) => {
        const text = encodeData(bytes);
        expect(text).toMatch(/^0x([0-9a-f]{2})*$/);
        expect(parseData(text)).toEqual(bytes);
        expect(hexToBytes(text)).toEqual(bytes);
        expect(bytesToHex(bytes)).toBe(`0x${Buffer.from(bytes).toString("hex")}`);
      }),
    );
  });

  it("encodes views into a larger buffer by their own bytes only", () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 2, maxLength: 300 }), fc.nat(), (bytes, cut) => {
        const start = cut % bytes.length;
        const view = bytes.subarray(start, bytes.length - ((cut >> 8) % (bytes.length - start)));
        expect(bytesToHex(view)).toBe(`0x${Buffer.from(view).toString("hex")}`);
      }),
    );
  });

  it("accepts the empty string 0x and uppercase digits", () => {
    expect(parseData("0x")).toEqual(new Uint8Array());
    expect(parseData("0xABcd")).toEqual(new Uint8Array([0xab, 0xcd]));
  });

  it("rejects odd lengths", () => {
    fc.assert(
      fc.property(
        hexString({ minLength: 1, maxLength: 99 }).filter((s) => s.length % 2 === 1),
        (digits) => {
          expect(codecMessage(() => parseData(`0x${digits}`, 4))).toBe(
            "invalid argument 4: hex string of odd length",
          );
        },
      ),
    );
  });

  it("rejects non-hex characters", () => {
    expect(codecMessage(() => parseData("0xzz"))).toBe("invalid argument 0: invalid hex string");
    expect(codecMessage(() => parseData("0xz"))).toBe("invalid argument 0: invalid hex string");
    expect(codecMessage(() => parseData("abcd"))).toBe(
      "invalid argument 0: hex string without 0x prefix",
    );
  });

  it("rejects a non-hex character anywhere, whatever the length", () => {
    fc.assert(
      fc.property(
        hexString({ maxLength: 40 }),
        nonHexChar,
        hexString({ maxLength: 40 }),
        fc.integer({ min: 0, max: 3 }),
        (a, bad, b, arg) => {
          expect(codecMessage(() => parseData(`0x${a}${bad}${b}`, arg))).toBe(
            `invalid argument ${arg}: invalid hex string`,
          );
          expect(codecMessage(() => parseAddress(`0x${a}${bad}${b}`, arg))).toBe(
            `invalid argument ${arg}: invalid hex string`,
          );
        },
      ),
    );
  });

  it("rejects a missing or uppercase prefix", () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ maxLength: 64 }),
        fc.constantFrom("", "0X", "x", " 0x"),
        (bytes, prefix) => {
          const text = `${prefix}${encodeData(bytes).slice(2)}`;
          expect(codecMessage(() => parseData(text, 1))).toBe(
            text === ""
              ? "invalid argument 1: empty hex string"
              : "invalid argument 1: hex string without 0x prefix",
          );
        },
      ),
    );
  });

  it.each([
    [1, "number"],
    [null, "null"],
    [true, "boolean"],
    [[], "array"],
    [{}, "object"],
    [undefined, "undefined"],
  ])("rejects the JSON value %j, naming its type", (value, type) => {
    expect(codecMessage(() => parseHash(value, 2))).toBe(
      `invalid argument 2: expected a hex string, got ${type}`,
    );
  });

  it("names the fixed size only when asked", () => {
    expect(codecMessage(() => parseData("0x1234", 0, { size: 3 }))).toBe(
      "invalid argument 0: hex string has length 4, want 6",
    );
    expect(codecMessage(() => parseAddress(`0x${"ab".repeat(19)}`))).toBe(
      "invalid argument 0: hex string has length 38, want 40 for address",
    );
  });

  it("checks characters before the size", () => {
    expect(codecMessage(() => parseAddress("0xzz"))).toBe("invalid argument 0: invalid hex string");
    expect(codecMessage(() => parseAddress("0xabc"))).toBe(
      "invalid argument 0: hex string of odd length",
    );
  });

  it.each([
    [20, "address", parseAddress],
    [32, "hash", parseHash],
    [8, "nonce", parseNonce],
    [256, "bloom", parseBloom],
  ] as const)("accepts exactly %i bytes for %s, and nothing else", (size, what, parse) => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 300 }), (bytes) => {
        const text = encodeData(bytes);
        if (bytes.length === size) {
          expect(parse(text, 1)).toEqual(bytes);
        } else {
          expect(codecMessage(() => parse(text, 1))).toBe(
            `invalid argument 1: hex string has length ${bytes.length * 2}, want ${size * 2} for ${what}`,
          );
        }
      }),
    );
  });

  it("hexToBytes throws TypeError on malformed trusted input", () => {
    expect(hexToBytes("abcd")).toEqual(new Uint8Array([0xab, 0xcd]));
    expect(() => hexToBytes("0xabc")).toThrow(TypeError);
    expect(() => hexToBytes("0xgg")).toThrow(TypeError);
  });

  it("never throws anything but a CodecError on arbitrary input", () => {
    fc.assert(
      fc.property(fc.anything(), (value) => {
        try {
          parseData(value, 0, { size: 20, what: "address" });
        } catch (err) {
          expect(err).toBeInstanceOf(CodecError);
        }
      }),
    );
  });
});

describe("toChecksumAddress", () => {
  it.each([
    "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed",
    "0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359",
    "0xdbF03B407c01E7cD3CBea99509d93f8DDDC8C6FB",
    "0xD1220A0cf47c7B9Be7A2E6BA89F429762e7b9aDb",
    "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266",
    "0x52908400098527886E0F7030069857D2E4169EE7",
    "0x8617E340B3D01FA5F11F306F4090FD50E238070D",
    "0xde709f2102306220921060314715629080e2fb77",
    "0x27b1fdb04752bbc536007a920d24acb045561c26",
  ])("matches the EIP-55 vector %s", (address) => {
    expect(toChecksumAddress(hexToBytes(address.toLowerCase()))).toBe(address);
    expect(toChecksumAddress(parseAddress(address))).toBe(address);
  });

  it("changes only the case of the address", () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 20, maxLength: 20 }), (bytes) => {
        const checksummed = toChecksumAddress(bytes);
        expect(checksummed).toMatch(/^0x[0-9a-fA-F]{40}$/);
        expect(checksummed.toLowerCase()).toBe(bytesToHex(bytes));
      }),
    );
  });
});
