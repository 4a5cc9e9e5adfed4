import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { coinbaseWithoutWitness, parseBitcoinBlock } from "../../src/block.js";
import {
  compressCoinbase,
  compressCoinbaseAt,
  compressedCoinbaseTxid,
  extractTaggedHash,
  RSK_TAG,
  splitCompressedCoinbase,
} from "../../src/coinbase.js";
import { doubleSha256 } from "../../src/doubleSha256.js";
import { MergeMiningErrorCode } from "../../src/errors.js";
import { rskBlock0x1b4, testnetBlock926485, toHex } from "./vectors.js";

const concat = (...p: Uint8Array[]) => Uint8Array.from(p.flatMap((x) => [...x]));

describe("compressed coinbase of the reference's block 0x1b4 (rskj doc/rpc example)", () => {
  const b = rskBlock0x1b4();
  it("128 bytes hashed into the midstate, a 105-byte tail, the tag at tail offset 60", () => {
    const { hashedLength, tail } = splitCompressedCoinbase(b.coinbase);
    expect(hashedLength).toBe(128n);
    expect(tail).toHaveLength(105);
    expect(Buffer.from(tail).indexOf(Buffer.from(RSK_TAG))).toBe(60);
    expect(toHex(extractTaggedHash(b.coinbase)!)).toBe(toHex(b.hashForMergedMining));
  });
});

describe("compressCoinbase on the real testnet block 926485 (Bitcoin Core blockfilters.json)", () => {
  const block = parseBitcoinBlock(testnetBlock926485().block);
  const cb = coinbaseWithoutWitness(block);

  it("tag at byte 184 of 229: 128 bytes hashed, tag at tail offset 56, txid equals the block's", () => {
    const compressed = compressCoinbase(cb);
    const { hashedLength, midstate, tail } = splitCompressedCoinbase(compressed);
    expect(hashedLength).toBe(128n);
    expect(midstate).toHaveLength(32);
    expect(toHex(tail)).toBe(toHex(cb.subarray(128)));
    expect(Buffer.from(tail).indexOf(Buffer.from(RSK_TAG))).toBe(56);
    expect(toHex(compressedCoinbaseTxid(compressed))).toBe(toHex(block.txids[0]!));
  });

  it("the tagged hash is the 32 bytes after RSKBLOCK:, in the full and the compressed form", () => {
    const h = extractTaggedHash(cb)!;
    expect(toHex(h)).toBe("cd16772ad61a3c5f00287480b720f6035d5e54c9efc71be94bb5e3727f109090");
    expect(toHex(extractTaggedHash(compressCoinbase(cb))!)).toBe(toHex(h));
  });
});

describe("compressCoinbase: properties", () => {
  const coinbaseArb = fc
    .tuple(
      fc.uint8Array({ maxLength: 300 }),
      fc.uint8Array({ minLength: 32, maxLength: 32 }),
      fc.uint8Array({ maxLength: 200 }),
    )
    .map(([before, hash, after]) => ({
      cb: concat(before, RSK_TAG, hash, after),
      p: before.length,
    }));

  it("hashes 64·floor(p/64) bytes; the tag lands in the tail's first 64 bytes; the txid is kept", () => {
    fc.assert(
      fc.property(coinbaseArb, ({ cb, p }) => {
        const at = Buffer.from(cb).lastIndexOf(Buffer.from(RSK_TAG));
        fc.pre(at === p);
        const compressed = compressCoinbase(cb);
        const { hashedLength, tail } = splitCompressedCoinbase(compressed);
        expect(hashedLength).toBe(BigInt(p - (p % 64)));
        expect(Buffer.from(tail).lastIndexOf(Buffer.from(RSK_TAG))).toBe(p % 64);
        expect(toHex(compressedCoinbaseTxid(compressed))).toBe(toHex(doubleSha256(cb)));
      }),
    );
  });

  it("compressCoinbaseAt keeps the txid for any whole-block cut", () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 400 }), fc.nat(), (cb, k) => {
        const cut = 64 * (k % (Math.floor(cb.length / 64) + 1));
        expect(toHex(compressedCoinbaseTxid(compressCoinbaseAt(cb, cut)))).toBe(
          toHex(doubleSha256(cb)),
        );
      }),
    );
  });
});

describe("compressCoinbase: errors", () => {
  it("a coinbase without the tag", () => {
    expect(() => compressCoinbase(new Uint8Array(100))).toThrow(
      expect.objectContaining({ code: MergeMiningErrorCode.TAG_MISSING }),
    );
  });

  it("uses the last tag", () => {
    const h1 = new Uint8Array(32).fill(1);
    const h2 = new Uint8Array(32).fill(2);
    const cb = concat(RSK_TAG, h1, new Uint8Array(100), RSK_TAG, h2);
    expect(toHex(extractTaggedHash(cb)!)).toBe(toHex(h2));
    expect(splitCompressedCoinbase(compressCoinbase(cb)).hashedLength).toBe(128n);
  });

  it("extractTaggedHash wants 32 bytes after the tag", () => {
    expect(extractTaggedHash(concat(RSK_TAG, new Uint8Array(31)))).toBeUndefined();
    expect(extractTaggedHash(new Uint8Array(50))).toBeUndefined();
  });

  it("split rejects a short field and a count that is not whole blocks", () => {
    expect(() => splitCompressedCoinbase(new Uint8Array(39))).toThrow(/40 bytes/);
    const bad = new Uint8Array(50);
    bad[7] = 65;
    expect(() => splitCompressedCoinbase(bad)).toThrow(/multiple of 64, got 65/);
    const huge = new Uint8Array(50);
    huge[0] = 0x20; // 2^61 bytes: the SHA-256 bit length would wrap
    expect(() => splitCompressedCoinbase(huge)).toThrow(/too large/);
    expect(() => compressedCoinbaseTxid(huge)).toThrow(/too large/);
    expect(() => compressCoinbaseAt(new Uint8Array(100), 32)).toThrow(/cannot hash 32/);
    expect(() => compressCoinbaseAt(new Uint8Array(100), 128)).toThrow(/cannot hash 128/);
  });
});
