import { CodecError } from "./errors.js";
import { bytesToHex, decodeHexDigits, type Hex, hexDigit } from "./hex.js";
import { keccak256 } from "./keccak.js";
import { expectHexString } from "./quantity.js";

export type Address = Uint8Array & { readonly __brand: "Address" };
export type Hash32 = Uint8Array & { readonly __brand: "Hash32" };

/** Decodes DATA: `0x` and an even number of hex digits, of `size` bytes when given. */
export function parseData(
  value: unknown,
  arg = 0,
  opts: { size?: number; what?: string } = {},
): Uint8Array {
  const text = expectHexString(value, arg);
  const digits = text.length - 2;
  if (digits % 2 !== 0) {
    for (let i = 2; i < text.length; i++) {
      if (hexDigit(text.charCodeAt(i)) < 0) throw new CodecError(arg, "invalid hex string");
    }
    throw new CodecError(arg, "hex string of odd length");
  }
  const bytes = decodeHexDigits(text, 2);
  if (bytes === undefined) throw new CodecError(arg, "invalid hex string");
  if (opts.size !== undefined && bytes.length !== opts.size) {
    throw new CodecError(
      arg,
      `hex string has length ${digits}, want ${opts.size * 2}${opts.what === undefined ? "" : ` for ${opts.what}`}`,
    );
  }
  return bytes;
}

export function encodeData(bytes: Uint8Array): Hex {
  return bytesToHex(bytes);
}

export function parseAddress(value: unknown, arg = 0): Address {
  return parseData(value, arg, { size: 20, what: "address" }) as Address;
}

export function parseHash(value: unknown, arg = 0): Hash32 {
  return parseData(value, arg, { size: 32, what: "hash" }) as Hash32;
}

export function parseNonce(value: unknown, arg = 0): Uint8Array {
  return parseData(value, arg, { size: 8, what: "nonce" });
}

export function parseBloom(value: unknown, arg = 0): Uint8Array {
  return parseData(value, arg, { size: 256, what: "bloom" });
}

/** EIP-55 mixed-case checksum form of a 20-byte address. */
export function toChecksumAddress(address: Uint8Array): string {
  const lower = bytesToHex(address).slice(2);
  const hash = keccak256(new TextEncoder().encode(lower));
  let out = "0x";
  for (let i = 0; i < lower.length; i++) {
    const nibble = i % 2 === 0 ? hash[i >> 1]! >> 4 : hash[i >> 1]! & 0x0f;
    out += nibble >= 8 ? lower[i]!.toUpperCase() : lower[i]!;
  }
  return out;
}
