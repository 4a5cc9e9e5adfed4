import { bytesToHex } from "@nodex/types";
import { describe, expect, it } from "vitest";
import { bytesValue, wordBytes, wordOf } from "../../src/words.js";

/** Words of every length, in hex: 0, small, with leading zero bytes, odd digit counts, 2²⁵⁶ − 1. */
function words(): bigint[] {
  const out = [0n, 1n, 0xfn, 0x10n, 0xffn, 0x100n, 2n ** 255n, 2n ** 256n - 1n];
  let s = 12345;
  for (let i = 0; i < 2000; i++) {
    let w = 0n;
    for (let j = 0; j < 8; j++) {
      s = (s * 1664525 + 1013904223) >>> 0;
      w = (w << 32n) | BigInt(s);
    }
    out.push(w >> BigInt(i % 257));
  }
  return out;
}

describe("words and their bytes", () => {
  it("writes a word as 32 big-endian bytes, and reads it back", () => {
    for (const w of words()) {
      const bytes = wordBytes(w);
      expect(bytes.length).toBe(32);
      expect(bytesToHex(bytes), w.toString(16)).toBe(`0x${w.toString(16).padStart(64, "0")}`);
      expect(bytesValue(bytes)).toBe(w);
    }
  });

  it("reads 32 bytes inside a larger array at any offset", () => {
    const backing = new Uint8Array(100).map((_, i) => (i * 37) & 0xff);
    for (let at = 0; at <= 68; at++) {
      const view = backing.subarray(at, at + 32);
      expect(bytesValue(view)).toBe(BigInt(bytesToHex(view)));
    }
  });

  it("reads any 0 to 32 bytes at any offset, leading zeros or not", () => {
    const backing = new Uint8Array(80).map((_, i) => (i % 5 === 0 ? 0 : (i * 53) & 0xff));
    for (let at = 0; at <= 48; at++)
      for (let size = 0; size <= 32; size++) {
        const bytes = backing.subarray(at, at + size);
        const expected = size === 0 ? 0n : BigInt(bytesToHex(bytes));
        expect(wordOf(backing, at, size), `${at}+${size}`).toBe(expected);
      }
  });
});
