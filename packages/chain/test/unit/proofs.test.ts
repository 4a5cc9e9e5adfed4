import { verifyMerkleProof } from "@ethereumjs/mpt";
import { RLP } from "@ethereumjs/rlp";
import {
  compressCoinbaseAt,
  encodeBip34Height,
  encodeBitcoinTransaction,
  RSK_TAG,
  SYNTHETIC_VERSION,
} from "@nodex/mergemining";
import { Bucket } from "@nodex/state";
import {
  type BlockHeader,
  bytesToHex,
  deriveDevAccounts,
  encodeReceipt,
  encodeReceiptList,
  type Hash32,
  keccak256,
  nullLogger,
  signTransaction,
} from "@nodex/types";
import { describe, expect, it } from "vitest";
import {
  BITCOIN_HEIGHT_WINDOW,
  type BlockSealer,
  Chain,
  ChainError,
  ChainErrorCode,
  ChainReader,
  SYNTHETIC_SEALER,
} from "../../src/index.js";
import { chainFactory, databaseOf, executor, MINER, network } from "./fixtures.js";

const makeChain = chainFactory();
const [alice, bob] = deriveDevAccounts();
const readerOf = (chain: Chain) => new ChainReader(chain, executor, { coinbase: () => MINER });

const pay = (from: typeof alice, nonce: bigint, value: bigint) =>
  signTransaction(
    {
      nonce,
      gasPrice: 1n,
      gasLimit: 21_000n,
      to: bob!.address,
      value,
      data: new Uint8Array(),
    },
    from!.privateKey,
    33,
  );

async function caught(work: Promise<unknown>): Promise<ChainError> {
  try {
    await work;
  } catch (err) {
    expect(err).toBeInstanceOf(ChainError);
    return err as ChainError;
  }
  throw new Error("expected a rejection");
}

describe("ChainReader.receiptNodes", () => {
  it("proves each receipt of a block against its receipts root, leaf first", async () => {
    const chain = await makeChain();
    const txs = Array.from({ length: 20 }, (_, i) => pay(alice, BigInt(i), BigInt(i + 1)));
    const mined = await chain.mine(txs, { coinbase: MINER });
    expect(mined.block.transactions).toHaveLength(20);
    const reader = readerOf(chain);
    const receipts = (await chain.getReceipts(mined.hash))!;
    for (const [i, tx] of mined.block.transactions.entries()) {
      const nodes = await reader.receiptNodes(mined.hash, tx.hash);
      const proof = [...nodes].reverse();
      expect(keccak256(proof[0]!)).toEqual(mined.block.header.receiptsRoot);
      const value = await verifyMerkleProof(RLP.encode(i), proof, {
        root: mined.block.header.receiptsRoot,
      });
      expect(value).toEqual(encodeReceipt(receipts[i]!));
      // The leaf first: its value is the receipt itself.
      expect(bytesToHex(nodes[0]!)).toContain(bytesToHex(encodeReceipt(receipts[i]!)).slice(2));
    }
  });

  it("is one node, the root, for a block of one transaction", async () => {
    const chain = await makeChain();
    const mined = await chain.mine([pay(alice, 0n, 1n)], { coinbase: MINER });
    const nodes = await readerOf(chain).receiptNodes(mined.hash, mined.block.transactions[0]!.hash);
    expect(nodes).toHaveLength(1);
    expect(keccak256(nodes[0]!)).toEqual(mined.block.header.receiptsRoot);
  });

  it("proves a receipt of a side block (not canonical) against its own root", async () => {
    const chain = await makeChain();
    await chain.mine([pay(alice, 0n, 1n)], { coinbase: MINER });
    await chain.mine([pay(alice, 1n, 1n)], { coinbase: MINER });
    const other = await makeChain();
    const side = await other.mine([pay(alice, 0n, 5n), pay(alice, 1n, 6n)], { coinbase: MINER });
    expect((await chain.importBlock(side.block)).result).toBe("IMPORTED_NOT_BEST");
    const tx = side.block.transactions[1]!;
    const nodes = await readerOf(chain).receiptNodes(side.hash, tx.hash);
    const receipts = (await chain.getReceipts(side.hash))!;
    expect(
      await verifyMerkleProof(RLP.encode(1), [...nodes].reverse(), {
        root: side.block.header.receiptsRoot,
      }),
    ).toEqual(encodeReceipt(receipts[1]!));
  });

  it("refuses to prove from stored receipts that do not give the receipts root", async () => {
    const chain = await makeChain();
    const one = await chain.mine([pay(alice, 0n, 1n), pay(alice, 1n, 2n)], { coinbase: MINER });
    const receipts = (await chain.getReceipts(one.hash))!;
    // The receipts of the block as if its second transaction had failed.
    const forged = [receipts[0]!, { ...receipts[1]!, status: 0 }];
    const db = databaseOf(chain);
    await db.write([
      { type: "put", bucket: Bucket.RECEIPTS, key: one.hash, value: encodeReceiptList(forged) },
    ]);
    // A chain opened on the database again reads them from disk, not from its caches.
    const reopened = await Chain.open(network, { db, executor, logger: nullLogger });
    expect((await reopened.getReceipts(one.hash))![1]!.status).toBe(0);
    const err = await caught(
      readerOf(reopened).receiptNodes(one.hash, one.block.transactions[1]!.hash),
    );
    expect(err.code).toBe(ChainErrorCode.CORRUPT);
    expect(err.message).toBe(
      `the receipts of block ${bytesToHex(one.hash)} do not give its receipts root`,
    );
    await db.write([{ type: "del", bucket: Bucket.RECEIPTS, key: one.hash }]);
    const again = await Chain.open(network, { db, executor, logger: nullLogger });
    const missing = await caught(
      readerOf(again).receiptNodes(one.hash, one.block.transactions[0]!.hash),
    );
    expect(missing.code).toBe(ChainErrorCode.CORRUPT);
    expect(missing.message).toBe(`the receipts of block ${bytesToHex(one.hash)} are missing`);
  });

  it("refuses an unknown block and a transaction of another block", async () => {
    const chain = await makeChain();
    const one = await chain.mine([pay(alice, 0n, 1n)], { coinbase: MINER });
    const two = await chain.mine([pay(alice, 1n, 1n)], { coinbase: MINER });
    const reader = readerOf(chain);
    const txOfOne = one.block.transactions[0]!.hash;
    const unknown = new Uint8Array(32).fill(0x55) as Hash32;
    const noBlock = await caught(reader.receiptNodes(unknown, txOfOne));
    expect(noBlock.code).toBe(ChainErrorCode.UNKNOWN_BLOCK);
    expect(noBlock.message).toBe(`block 0x${"55".repeat(32)} not found`);
    const elsewhere = await caught(reader.receiptNodes(two.hash, txOfOne));
    expect(elsewhere.code).toBe(ChainErrorCode.UNKNOWN_TRANSACTION);
    expect(elsewhere.message).toBe(
      `transaction ${bytesToHex(txOfOne)} is not in block ${bytesToHex(two.hash)}`,
    );
    const empty = await chain.mine([], { coinbase: MINER });
    expect((await caught(reader.receiptNodes(empty.hash, txOfOne))).code).toBe(
      ChainErrorCode.UNKNOWN_TRANSACTION,
    );
  });
});

/** Seals with a coinbase kept whole whose scriptSig states `heightOf(header)` (when defined). */
function statingSealer(heightOf: (header: BlockHeader) => bigint | undefined): BlockSealer {
  return {
    seal: async (header, hashForMergedMining) => {
      const height = heightOf(header);
      const scriptSig =
        height === undefined ? Uint8Array.of(8, 1, 2, 3, 4, 5, 6, 7, 8) : encodeBip34Height(height);
      const coinbase = encodeBitcoinTransaction(
        {
          version: 1,
          inputs: [
            {
              prevTxid: new Uint8Array(32),
              prevIndex: 0xffffffff,
              scriptSig,
              sequence: 0xffffffff,
              witness: [],
            },
          ],
          outputs: [
            {
              value: 0n,
              scriptPubKey: Uint8Array.of(0x6a, 41, ...RSK_TAG, ...hashForMergedMining),
            },
          ],
          lockTime: 0,
          hasWitness: false,
        },
        false,
      );
      const bitcoinHeader = new Uint8Array(80);
      new DataView(bitcoinHeader.buffer).setUint32(0, SYNTHETIC_VERSION, true);
      return {
        ...header,
        bitcoinMergedMiningHeader: bitcoinHeader,
        bitcoinMergedMiningCoinbaseTransaction: compressCoinbaseAt(coinbase, 0),
        bitcoinMergedMiningMerkleProof: new Uint8Array(),
      };
    },
  };
}

describe("ChainReader.bitcoinBestChainHeight", () => {
  it("is the highest BIP34 height the recent proofs state", async () => {
    // Block n states 900,000 + n, except block 3, which states a stale fork's 850,000.
    const chain = await makeChain({
      sealer: statingSealer((h) => (h.number === 3n ? 850_000n : 900_000n + h.number)),
    });
    const reader = readerOf(chain);
    expect(await reader.bitcoinBestChainHeight()).toBe(0n); // genesis has no proof
    for (let i = 0; i < 4; i++) await chain.mine([], { coinbase: MINER });
    expect(await reader.bitcoinBestChainHeight()).toBe(900_004n);
    // Only the last two blocks: 3 (850,000) and 4.
    expect(await reader.bitcoinBestChainHeight(2)).toBe(900_004n);
    expect(await reader.bitcoinBestChainHeight(1)).toBe(900_004n);
  });

  it("reads back no further than its window", async () => {
    const chain = await makeChain({
      sealer: statingSealer((h) => (h.number <= 2n ? 700_000n + h.number : undefined)),
    });
    const reader = readerOf(chain);
    for (let i = 0; i < 5; i++) await chain.mine([], { coinbase: MINER });
    expect(await reader.bitcoinBestChainHeight()).toBe(700_002n);
    expect(await reader.bitcoinBestChainHeight(4)).toBe(700_002n); // blocks 5, 4, 3, 2
    expect(await reader.bitcoinBestChainHeight(3)).toBe(0n); // blocks 5, 4, 3
    expect(BITCOIN_HEIGHT_WINDOW).toBe(128);
  });

  it("is 0 for synthetic proofs (their coinbase states no height)", async () => {
    const chain = await makeChain({ sealer: SYNTHETIC_SEALER });
    for (let i = 0; i < 3; i++) await chain.mine([], { coinbase: MINER });
    expect(await readerOf(chain).bitcoinBestChainHeight()).toBe(0n);
  });
});
