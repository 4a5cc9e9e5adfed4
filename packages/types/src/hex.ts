export type Hex = `0x${string}`;

const HEX_BYTE: readonly string[] = Array.from({ length: 256 }, (_, i) =>
  i.toString(16).padStart(2, "0"),
);

/** Lowercase `0x` hex of the bytes; `0x` for none. */
export function bytesToHex(bytes: Uint8Array): Hex {
  return `0x${bytesToUnprefixedHex(bytes)}`;
}

/**
 * Node's hex encoder called on any byte view (`Buffer.prototype.hexSlice`, which `toString("hex")`
 * ends in), without making a `Buffer` around the view first; `undefined` where the runtime has no
 * such method or it does not give the expected text.
 */
const hexSlice = ((): ((bytes: Uint8Array) => string) | undefined => {
  const method = (Buffer.prototype as { hexSlice?: unknown }).hexSlice;
  if (typeof method !== "function") return undefined;
  const encode = (bytes: Uint8Array): string =>
    (method as (this: Uint8Array, start: number, end: number) => string).call(
      bytes,
      0,
      bytes.length,
    );
  try {
    const probe = new Uint8Array(new ArrayBuffer(12), 2, 9);
    probe.set([0x00, 0x01, 0x7f, 0x80, 0xab, 0xcd, 0xef, 0xfe, 0xff]);
    return encode(probe) === "00017f80abcdeffeff" ? encode : undefined;
  } catch {
    return undefined;
  }
})();

/** Lowercase hex of the bytes without `0x` (Bitcoin hashes, key files, merged-mining RPC). */
export function bytesToUnprefixedHex(bytes: Uint8Array): string {
  // Node's encoder from 8 bytes on (addresses, hashes, slots, blooms, data): 2× the table's
  // speed at 20 and 32 bytes, and its string is flat, where the table's is a rope of pieces
  // that a map lookup or JSON.stringify then copies (at 20 bytes, looked up in a map, 150 ns
  // against 430). Below 8 bytes the table, where the call into the encoder costs more.
  if (bytes.length >= 8) {
    if (hexSlice !== undefined) return hexSlice(bytes);
    if (bytes.length >= 20)
      return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("hex");
  }
  let out = "";
  for (let i = 0; i < bytes.length; i++) out += HEX_BYTE[bytes[i]!];
  return out;
}

/** Value of one hex digit (char code), or -1. */
export function hexDigit(code: number): number {
  if (code >= 48 && code <= 57) return code - 48;
  if (code >= 97 && code <= 102) return code - 87;
  if (code >= 65 && code <= 70) return code - 55;
  return -1;
}

/** Decodes hex digits starting at `start`; `undefined` if any is not hex or the count is odd. */
export function decodeHexDigits(text: string, start: number): Uint8Array | undefined {
  const digits = text.length - start;
  if (digits % 2 !== 0) return undefined;
  const out = new Uint8Array(digits / 2);
  for (let i = 0, j = start; i < out.length; i++, j += 2) {
    const hi = hexDigit(text.charCodeAt(j));
    const lo = hexDigit(text.charCodeAt(j + 1));
    if (hi < 0 || lo < 0) return undefined;
    out[i] = (hi << 4) | lo;
  }
  return out;
}

/** Decodes trusted hex, with or without `0x`; throws `TypeError` when malformed. */
export function hexToBytes(hex: string): Uint8Array {
  const start = hex.startsWith("0x") ? 2 : 0;
  const bytes = decodeHexDigits(hex, start);
  if (bytes === undefined)
    throw new TypeError(`malformed hex string ${JSON.stringify(hex.slice(0, 80))}`);
  return bytes;
}
