import {
  EthereumJSErrorWithoutCode,
  decode as libraryDecode,
  encode as libraryEncode,
  type NestedUint8Array,
} from "@ethereumjs/rlp";

/**
 * RLP with the answers and errors of `@ethereumjs/rlp`, byte for byte and message for message,
 * in one pass over the input. The library decodes by copying every list's payload, making a
 * view and a result object per item and reading lengths through hex strings, and encodes by
 * concatenating a new array per item: on the trie, which decodes and encodes nodes for every
 * account and slot it reads or writes, that was an eighth of a transfer's CPU.
 *
 * Byte strings still come out as copies (`slice`), as the library makes them, so nothing
 * decoded keeps the input alive or changes with it. Inputs other than bytes (hex strings,
 * numbers, `null`) go to the library.
 */

type Input = Uint8Array | NestedUint8Array | unknown;
type Decoded = Uint8Array | NestedUint8Array;

/** Where the item that `decodeItem` just read ends. */
let cursor = 0;

function fail(message: string): never {
  throw EthereumJSErrorWithoutCode(message);
}

const OUT_OF_BOUNDS = "invalid RLP (safeSlice): end slice of Uint8Array out-of-bounds";

/** A big-endian length of `count` bytes at `at`; a leading zero is refused. */
function readLength(input: Uint8Array, at: number, count: number): number {
  if (input[at] === 0) fail("invalid RLP: extra zeros");
  let n = 0;
  for (let i = 0; i < count; i++) n = n * 256 + input[at + i]!;
  return n;
}

/** The item at `pos`, inside a list (or input) that ends at `end`; sets `cursor` past it. */
function decodeItem(input: Uint8Array, pos: number, end: number): Decoded {
  const first = input[pos]!;
  if (first <= 0x7f) {
    cursor = pos + 1;
    return input.slice(pos, pos + 1);
  }
  if (first <= 0xb7) {
    if (first === 0x80) {
      cursor = pos + 1;
      return new Uint8Array(0);
    }
    const stop = pos + 1 + (first - 0x80);
    if (stop > end) fail(OUT_OF_BOUNDS);
    if (first === 0x81 && input[pos + 1]! < 0x80)
      fail("invalid RLP encoding: invalid prefix, single byte < 0x80 are not prefixed");
    cursor = stop;
    return input.slice(pos + 1, stop);
  }
  if (first <= 0xbf) {
    const lengthBytes = first - 0xb7;
    // The library asks for one byte more than the length takes.
    if (end - pos - 1 < lengthBytes + 1) fail("invalid RLP: not enough bytes for string length");
    const length = readLength(input, pos + 1, lengthBytes);
    if (length <= 55) fail("invalid RLP: expected string length to be greater than 55");
    const start = pos + 1 + lengthBytes;
    const stop = start + length;
    if (stop > end) fail(OUT_OF_BOUNDS);
    cursor = stop;
    return input.slice(start, stop);
  }
  let start: number;
  let stop: number;
  if (first <= 0xf7) {
    start = pos + 1;
    stop = start + (first - 0xc0);
    if (stop > end) fail(OUT_OF_BOUNDS);
  } else {
    const lengthBytes = first - 0xf7;
    if (pos + 1 + lengthBytes > end) fail(OUT_OF_BOUNDS);
    const length = readLength(input, pos + 1, lengthBytes);
    if (length < 56) fail("invalid RLP: encoded list too short");
    start = pos + 1 + lengthBytes;
    stop = start + length;
    if (stop > end) fail("invalid RLP: total length is larger than the data");
  }
  const items: Decoded[] = [];
  let at = start;
  while (at < stop) {
    items.push(decodeItem(input, at, stop));
    at = cursor;
  }
  cursor = stop;
  return items as NestedUint8Array;
}

/** `RLP.decode` of `@ethereumjs/rlp`. */
export function decodeRlp(input: Uint8Array, stream?: false): Decoded;
export function decodeRlp(
  input: Uint8Array,
  stream: true,
): { data: Decoded; remainder: Uint8Array };
export function decodeRlp(
  input: Input,
  stream = false,
): Decoded | { data: Decoded; remainder: Uint8Array } {
  if (!(input instanceof Uint8Array) || input.length === 0) {
    return stream
      ? libraryDecode(input as Uint8Array, true)
      : (libraryDecode(input as Uint8Array) as Decoded);
  }
  const data = decodeItem(input, 0, input.length);
  if (stream) return { data, remainder: input.slice(cursor) };
  if (cursor !== input.length) fail("invalid RLP: remainder must be zero");
  return data;
}

/** Bytes of an item's prefix for a payload of `length` bytes. */
function prefixBytes(length: number): number {
  if (length < 56) return 1;
  let n = 1;
  for (let l = length; l > 0; l = Math.floor(l / 256)) n++;
  return n;
}

/**
 * The encoded size of `item`, or -1 when something in it is not bytes. The payload size of
 * every list is pushed to `sizes` in the order `write` meets them.
 */
function measure(item: unknown, sizes: number[]): number {
  if (item instanceof Uint8Array) {
    const n = item.length;
    return n === 1 && item[0]! < 0x80 ? 1 : prefixBytes(n) + n;
  }
  if (!Array.isArray(item)) return -1;
  const slot = sizes.length;
  sizes.push(0);
  let payload = 0;
  for (let i = 0; i < item.length; i++) {
    const n = measure(item[i], sizes);
    if (n < 0) return -1;
    payload += n;
  }
  sizes[slot] = payload;
  return prefixBytes(payload) + payload;
}

function writePrefix(out: Uint8Array, at: number, length: number, offset: number): number {
  if (length < 56) {
    out[at] = offset + length;
    return at + 1;
  }
  const bytes = prefixBytes(length) - 1;
  out[at] = offset + 55 + bytes;
  for (let i = bytes, l = length; i >= 1; i--, l = Math.floor(l / 256)) out[at + i] = l % 256;
  return at + 1 + bytes;
}

let listIndex = 0;

function write(
  item: Uint8Array | NestedUint8Array,
  out: Uint8Array,
  at: number,
  sizes: number[],
): number {
  if (item instanceof Uint8Array) {
    if (item.length === 1 && item[0]! < 0x80) {
      out[at] = item[0]!;
      return at + 1;
    }
    const from = writePrefix(out, at, item.length, 0x80);
    out.set(item, from);
    return from + item.length;
  }
  let pos = writePrefix(out, at, sizes[listIndex++]!, 0xc0);
  for (let i = 0; i < item.length; i++) pos = write(item[i]!, out, pos, sizes);
  return pos;
}

/** `RLP.encode` of `@ethereumjs/rlp`: a single byte below 0x80 comes back as the same array. */
export function encodeRlp(input: Input): Uint8Array {
  if (input instanceof Uint8Array) {
    const n = input.length;
    if (n === 1 && input[0]! < 0x80) return input;
    const out = new Uint8Array(prefixBytes(n) + n);
    out.set(input, writePrefix(out, 0, n, 0x80));
    return out;
  }
  const sizes: number[] = [];
  const size = Array.isArray(input) ? measure(input, sizes) : -1;
  // biome-ignore lint/suspicious/noExplicitAny: the library takes any encodable input
  if (size < 0) return libraryEncode(input as any);
  const out = new Uint8Array(size);
  listIndex = 0;
  write(input as NestedUint8Array, out, 0, sizes);
  return out;
}

/** The methods `installFastRlp` replaces: the `RLP` object of an `@ethereumjs/rlp` copy. */
export interface RlpObject {
  // biome-ignore lint/suspicious/noExplicitAny: the copies type their inputs each their own way
  encode: (input: any) => Uint8Array;
  // biome-ignore lint/suspicious/noExplicitAny: as above
  decode: (input: any, stream?: any) => unknown;
}

/**
 * Gives an `@ethereumjs/rlp` `RLP` object these implementations, so the trie, accounts and the
 * EVM, which call through it, use them too. Answers and errors are the library's.
 */
export function installFastRlp(target: RlpObject): void {
  (target as { encode: unknown }).encode = encodeRlp;
  (target as { decode: unknown }).decode = decodeRlp;
}

/** Whether `target` runs these implementations. */
export function fastRlpInstalled(target: RlpObject): boolean {
  return (target.encode as unknown) === encodeRlp && (target.decode as unknown) === decodeRlp;
}
