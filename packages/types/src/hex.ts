export type Hex = `0x${string}`;

const HEX_BYTE: readonly string[] = Array.from({ length: 256 }, (_, i) =>
  i.toString(16).padStart(2, "0"),
);

/** Lowercase `0x` hex of the bytes; `0x` for none. */
export function bytesToHex(bytes: Uint8Array): Hex {
  return `0x${bytesToUnprefixedHex(bytes)}`;
}

/** Lowercase hex of the bytes without `0x` (Bitcoin hashes, key files, merged-mining RPC). */
export function bytesToUnprefixedHex(bytes: Uint8Array): string {
  // Node's encoder from 24 bytes on (hashes, blooms, data: 1.4× at 32 bytes, 4× at 256); a
  // table below, where the call into it costs more than the loop.
  if (bytes.length >= 24)
    return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("hex");
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
