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
  ])("matches the EIP-55 vector %s", (address) => {
    expect(toChecksumAddress(hexToBytes(address.toLowerCase()))).toBe(address);
  });
});
