import { CodecError } from "./errors.js";
import type { Hex } from "./hex.js";
import { hexDigit } from "./hex.js";

/** Names the JSON type of a value for error messages. */
export function jsonTypeName(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  return typeof value;
}

/** Checks the parts QUANTITY and DATA share: a string, non-empty, with a `0x` prefix. */
export function expectHexString(value: unknown, arg: number): string {
  if (typeof value !== "string")
    throw new CodecError(arg, `expected a hex string, got ${jsonTypeName(value)}`);
  if (value === "") throw new CodecError(arg, "empty hex string");
  if (value.charCodeAt(0) !== 48 || value.charCodeAt(1) !== 120) {
    throw new CodecError(arg, "hex string without 0x prefix");
  }
  return value;
}

/** Decodes a QUANTITY: `0x`, hex digits, no leading zeros (`0x0` for zero). */
export function parseQuantity(value: unknown, arg = 0, opts: { maxBits?: number } = {}): bigint {
  const text = expectHexString(value, arg);
  const digits = text.length - 2;
  if (digits === 0) throw new CodecError(arg, 'hex string "0x" has no digits');
  for (let i = 2; i < text.length; i++) {
    if (hexDigit(text.charCodeAt(i)) < 0) throw new CodecError(arg, "invalid hex string");
  }
  if (digits > 1 && text.charCodeAt(2) === 48)
    throw new CodecError(arg, "hex string has leading zero digits");
  const maxBits = opts.maxBits ?? 256;
  if (digits * 4 > maxBits + 3) throw new CodecError(arg, `hex number > ${maxBits} bits`);
  const n = BigInt(text);
  if (n >> BigInt(maxBits) !== 0n) throw new CodecError(arg, `hex number > ${maxBits} bits`);
  return n;
}

/** Encodes a non-negative integer as a QUANTITY. */
export function encodeQuantity(value: bigint | number): Hex {
  if (typeof value === "number") {
    if (!Number.isSafeInteger(value) || value < 0) {
      throw new RangeError(`cannot encode ${value} as a QUANTITY: not a non-negative safe integer`);
    }
    return `0x${value.toString(16)}`;
  }
  if (value < 0n) throw new RangeError(`cannot encode ${value} as a QUANTITY: negative`);
  return `0x${value.toString(16)}`;
}
