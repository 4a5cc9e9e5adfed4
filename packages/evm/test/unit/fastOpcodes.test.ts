import { bytesToHex } from "@nodex/types";
import { describe, expect, it } from "vitest";
import { bytesWord, wordBytes } from "../../src/fastOpcodes.js";

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
      expect(bytesWord(bytes)).toBe(w);
    }
  });

  it("reads 32 bytes inside a larger array at any offset", () => {
    const backing = new Uint8Array(100).map((_, i) => (i * 37) & 0xff);
    for (let at = 0; at <= 68; at++) {
      const view = backing.subarray(at, at + 32);
      expect(bytesWord(view)).toBe(BigInt(bytesToHex(view)));
    }
  });
});
