import { describe, expect, it } from "vitest";
import { bitcoinHash, hashToDisplayHex } from "../../src/bitcoinHeader.js";
import { coinbaseWithoutWitness, parseBitcoinBlock } from "../../src/block.js";
import { merkleRoot } from "../../src/merkle.js";
import { compactToTarget, hashToBigint } from "../../src/target.js";
import { txid } from "../../src/transaction.js";
import { bitcoinjsBlocks, coreBlocks, hex, testnetBlock926485, toHex } from "./vectors.js";

describe("whole blocks", () => {
  // Every fixture with more than a header ("Headers + Coinbase" is a one-transaction block).
  const full = bitcoinjsBlocks().valid.filter((b) => b.hex.length > 160);

  it.each(full.map((b) => [b.description, b] as const))(
    "bitcoinjs %s: id, Merkle root of the txids, proof of work",
    (_, b) => {
      const block = parseBitcoinBlock(hex(b.hex));
      expect(hashToDisplayHex(bitcoinHash(block.headerBytes))).toBe(b.id);
      expect(toHex(merkleRoot(block.txids))).toBe(b.merkleRoot);
      expect(hashToBigint(bitcoinHash(block.headerBytes)) <= compactToTarget(b.bits).target).toBe(
        true,
      );
    },
  );

  it("the bitcoinjs blocks have 1, 10, 103, 1 (genesis) and 4 (542213) transactions", () => {
    const counts = full.map((b) => parseBitcoinBlock(hex(b.hex)).transactions.length);
    expect(counts).toEqual([1, 10, 103, 1, 4]);
  });

  it.each(coreBlocks().map((b) => [b.id, b] as const))(
    "Bitcoin Core block %s: id, transaction count, Merkle root",
    (_, b) => {
      const block = parseBitcoinBlock(hex(b.hex));
      expect(hashToDisplayHex(bitcoinHash(block.headerBytes))).toBe(b.id);
      expect(block.transactions).toHaveLength(b.transactions);
      expect(toHex(merkleRoot(block.txids))).toBe(toHex(block.header.merkleRoot));
    },
  );

  it("testnet 926485 (Bitcoin Core blockfilters.json): id, 5 transactions, Merkle root, PoW", () => {
    const { id, block: bytes } = testnetBlock926485();
    const block = parseBitcoinBlock(bytes);
    expect(hashToDisplayHex(bitcoinHash(block.headerBytes))).toBe(id);
    expect(block.transactions).toHaveLength(5);
    expect(toHex(merkleRoot(block.txids))).toBe(toHex(block.header.merkleRoot));
    expect(
      hashToBigint(bitcoinHash(block.headerBytes)) <= compactToTarget(block.header.bits).target,
    ).toBe(true);
    const cb = coinbaseWithoutWitness(block);
    expect(cb).toHaveLength(229);
    expect(toHex(txid(cb))).toBe(toHex(block.txids[0]!));
  });

  it("rejects short input, trailing bytes and a block without transactions for its coinbase", () => {
    expect(() => parseBitcoinBlock(new Uint8Array(79))).toThrow(/80-byte header/);
    const { block } = testnetBlock926485();
    expect(() => parseBitcoinBlock(Uint8Array.from([...block, 0]))).toThrow(/trailing/);
    const empty = parseBitcoinBlock(Uint8Array.from([...block.subarray(0, 80), 0]));
    expect(() => coinbaseWithoutWitness(empty)).toThrow(/no transactions/);
  });
});
