import { bytesToBigintBE } from "../bytes.js";
import { NodexError } from "../errors.js";
import { decodeHexDigits } from "../hex.js";
import { decodeRlp, encodeRlp } from "./fast.js";

export const DecodeErrorCode = { INVALID_RLP: "TYPES_INVALID_RLP" } as const;

/** A byte string that is not a valid encoding of what was expected. */
export class DecodeError extends NodexError<typeof DecodeErrorCode.INVALID_RLP> {
  constructor(message: string, meta: Record<string, unknown> = {}) {
    super(DecodeErrorCode.INVALID_RLP, message, meta);
    this.name = "DecodeError";
  }
}

export type RLPItem = Uint8Array | RLPItem[];

export function rlpEncode(item: RLPItem): Uint8Array {
  return encodeRlp(item);
}

/** Decodes exactly one RLP item spanning all of `bytes`; throws `DecodeError` (`what` names it). */
export function rlpDecode(bytes: Uint8Array, what: string): RLPItem {
  try {
    return decodeRlp(bytes);
  } catch (err) {
    throw new DecodeError(`invalid ${what}: ${rlpReason((err as Error).message)}`);
  }
}

/** The decoder's reason in the client's terms: its out-of-bounds slice names its own internals. */
function rlpReason(message: string): string {
  return message.includes("(safeSlice)")
    ? "invalid RLP: an item is longer than the data that holds it"
    : message;
}

/** Minimal big-endian bytes of a non-negative integer; zero is the empty string. */
export function bigintToBytes(value: bigint): Uint8Array {
  if (value < 0n) throw new RangeError(`cannot encode negative ${value}`);
  if (value === 0n) return new Uint8Array();
  if (value <= 0xffffffffn) {
    const n = Number(value);
    const length = n > 0xffffff ? 4 : n > 0xffff ? 3 : n > 0xff ? 2 : 1;
    const out = new Uint8Array(length);
    for (let i = length - 1, x = n; i >= 0; i--, x >>>= 8) out[i] = x & 0xff;
    return out;
  }
  const hex = value.toString(16);
  return decodeHexDigits(hex.length % 2 === 1 ? `0${hex}` : hex, 0)!;
}

/** Reads a canonical integer: no leading zero bytes, at most `maxBytes` long. */
export function bytesToBigint(item: RLPItem, what: string, maxBytes = 32): bigint {
  const bytes = expectBytes(item, what);
  if (bytes.length > maxBytes)
    throw new DecodeError(`invalid ${what}: integer longer than ${maxBytes} bytes`);
  if (bytes.length > 0 && bytes[0] === 0)
    throw new DecodeError(`invalid ${what}: integer has leading zero bytes`);
  return bytesToBigintBE(bytes);
}

export function expectBytes(item: RLPItem | undefined, what: string, size?: number): Uint8Array {
  if (!(item instanceof Uint8Array))
    throw new DecodeError(`invalid ${what}: expected a byte string, got a list`);
  if (size !== undefined && item.length !== size) {
    throw new DecodeError(`invalid ${what}: expected ${size} bytes, got ${item.length}`);
  }
  return item;
}

export function expectList(item: RLPItem, what: string, length?: number): RLPItem[] {
  if (item instanceof Uint8Array)
    throw new DecodeError(`invalid ${what}: expected a list, got a byte string`);
  if (length !== undefined && item.length !== length) {
    throw new DecodeError(`invalid ${what}: expected ${length} items, got ${item.length}`);
  }
  return item;
}

/** RLP list of items that are already encoded (no re-encoding of their contents). */
export function rlpListOfEncoded(parts: readonly Uint8Array[]): Uint8Array {
  let length = 0;
  for (const p of parts) length += p.length;
  const prefix = listPrefix(length);
  const out = new Uint8Array(prefix.length + length);
  out.set(prefix);
  let at = prefix.length;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

function listPrefix(length: number): Uint8Array {
  if (length < 56) return new Uint8Array([0xc0 + length]);
  const lengthBytes = bigintToBytes(BigInt(length));
  return new Uint8Array([0xf7 + lengthBytes.length, ...lengthBytes]);
}
