import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { parseBitcoinBlock } from "../../src/block.js";
import { hashPair } from "../../src/doubleSha256.js";
import { coinbaseBranch, merkleRoot } from "../../src/merkle.js";
import { coreBlocks, hex, toHex } from "./vectors.js";

const txidsArb = fc.array(fc.uint8Array({ minLength: 32, maxLength: 32 }), {
  minLength: 1,
  maxLength: 40,
});

describe("merkleRoot", () => {
  it("one txid is its own root; two are hashed as a pair; an odd one is paired with itself", () => {
    const a = new Uint8Array(32).fill(0xaa);
    const b = new Uint8Array(32).fill(0xbb);
    const c = new Uint8Array(32).fill(0xcc);
    expect(toHex(merkleRoot([a]))).toBe(toHex(a));
    expect(toHex(merkleRoot([a, b]))).toBe(toHex(hashPair(a, b)));
    expect(toHex(merkleRoot([a, b, c]))).toBe(toHex(hashPair(hashPair(a, b), hashPair(c, c))));
    expect(() => merkleRoot([])).toThrow(/at least one/);
  });

  it("Bitcoin Core blocks: the root of the txids is the header's", () => {
    for (const b of coreBlocks()) {
      const block = parseBitcoinBlock(hex(b.hex));
      expect(toHex(merkleRoot(block.txids))).toBe(toHex(block.header.merkleRoot));
    }
  });
});

describe("coinbaseBranch", () => {
  it("folding the branch onto the first txid (always on the left) gives the root", () => {
    fc.assert(
      fc.property(txidsArb, (txids) => {
        const branch = coinbaseBranch(txids);
        expect(branch.length).toBe(Math.ceil(Math.log2(txids.length)));
        let acc: Uint8Array = txids[0]!;
        for (const s of branch) acc = hashPair(acc, s);
        expect(toHex(acc)).toBe(toHex(merkleRoot(txids)));
      }),
    );
  });
});
