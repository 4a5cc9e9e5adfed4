import { describe, expect, it } from "vitest";
import { bytesToHex, keccak256, keccak256Noble, keccakBackend } from "../../src/index.js";

const utf8 = (s: string) => new TextEncoder().encode(s);

describe("keccak256", () => {
  it("runs in WebAssembly on this runtime", () => {
    expect(keccakBackend).toBe("wasm");
  });

  it("gives the known digests", () => {
    expect(bytesToHex(keccak256(new Uint8Array()))).toBe(
      "0xc5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470",
    );
    expect(bytesToHex(keccak256(utf8("transfer(address,uint256)")).subarray(0, 4))).toBe(
      "0xa9059cbb",
    );
    // One byte short of a rate block, a whole block and one past it (rate 136 bytes).
    for (const n of [135, 136, 137, 272]) {
      const data = new Uint8Array(n).fill(0x61);
      expect(keccak256(data)).toEqual(keccak256Noble(data));
    }
  });

  it("agrees with @noble/hashes on random inputs, views into larger buffers included", () => {
    let seed = 7;
    const next = () => {
      seed = (seed * 1103515245 + 12345) >>> 0;
      return seed >>> 8;
    };
    for (let i = 0; i < 3000; i++) {
      const length = i < 2000 ? next() % 300 : next() % 5000;
      const offset = next() % 16;
      const buffer = new Uint8Array(length + offset + 8);
      for (let j = 0; j < buffer.length; j++) buffer[j] = next() & 0xff;
      const view = buffer.subarray(offset, offset + length);
      expect(keccak256(view)).toEqual(keccak256Noble(view));
    }
  });

  it("hashes short inputs one after another as they are, each length alone", () => {
    // Inputs up to 64 bytes are copied to a staging buffer first: a longer one before a
    // shorter must leave nothing behind, and the input stays as it was.
    for (let n = 70; n >= 0; n--) {
      const data = Uint8Array.from({ length: n }, (_, i) => (n * 13 + i) & 0xff);
      const copy = data.slice();
      expect(keccak256(data)).toEqual(keccak256Noble(copy));
      expect(data).toEqual(copy);
    }
  });

  it("hands back a new array each time, not a view of the hasher's memory", () => {
    const a = keccak256(utf8("a"));
    const copy = a.slice();
    keccak256(utf8("b"));
    expect(a).toEqual(copy);
    expect(a.buffer.byteLength).toBe(32);
  });
});
