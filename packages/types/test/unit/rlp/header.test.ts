import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  type Block,
  type BlockHeader,
  bytesToHex,
  DecodeError,
  decodeBlock,
  decodeHeader,
  decodeReceipt,
  deriveDevAccounts,
  encodeBlock,
  encodeHeader,
  encodeReceipt,
  hashForMergedMiningBase,
  headerHash,
  keccak256,
  type Receipt,
  rlpDecode,
  rlpEncode,
  signTransaction,
  unclesHash,
  withForkDetectionData,
} from "../../../src/index.js";

const bytes = (n: number) => fc.uint8Array({ minLength: n, maxLength: n });
const u64 = fc.bigInt({ min: 0n, max: (1n << 64n) - 1n });
const u256 = fc.bigInt({ min: 0n, max: (1n << 256n) - 1n });

const headerArb: fc.Arbitrary<BlockHeader> = fc.record({
  parentHash: bytes(32),
  unclesHash: bytes(32),
  coinbase: bytes(20),
  stateRoot: bytes(32),
  transactionsRoot: bytes(32),
  receiptsRoot: bytes(32),
  logsBloom: bytes(256),
  difficulty: u256,
  number: u64,
  gasLimit: u64,
  gasUsed: u64,
  timestamp: u64,
  extraData: fc.uint8Array({ maxLength: 32 }),
  paidFees: u256,
  minimumGasPrice: u256,
  uncleCount: fc.integer({ min: 0, max: 10 }),
  ummRoot: fc.constant(new Uint8Array()),
  bitcoinMergedMiningHeader: fc.oneof(bytes(80), fc.constant(new Uint8Array())),
  bitcoinMergedMiningMerkleProof: fc.uint8Array({ maxLength: 96 }),
  bitcoinMergedMiningCoinbaseTransaction: fc.uint8Array({ maxLength: 120 }),
});

describe("block headers", () => {
  it("round-trip through the full encoding", () => {
    fc.assert(
      fc.property(headerArb, (h) => {
        expect(decodeHeader(encodeHeader(h))).toEqual(h);
      }),
      { numRuns: 200 },
    );
  });

  it("hash over everything but the Merkle proof and the coinbase", () => {
    fc.assert(
      fc.property(headerArb, bytes(64), bytes(80), (h, other, btc) => {
        const hash = headerHash(h);
        expect(headerHash({ ...h, bitcoinMergedMiningMerkleProof: other })).toEqual(hash);
        expect(headerHash({ ...h, bitcoinMergedMiningCoinbaseTransaction: other })).toEqual(hash);
        expect(headerHash({ ...h, number: h.number + 1n })).not.toEqual(hash);
        if (!bytesEqual(btc, h.bitcoinMergedMiningHeader)) {
          expect(headerHash({ ...h, bitcoinMergedMiningHeader: btc })).not.toEqual(hash);
        }
      }),
      { numRuns: 50 },
    );
  });

  it("give hashForMergedMining no input from the merged-mining fields", () => {
    fc.assert(
      fc.property(headerArb, bytes(80), (h, btc) => {
        const base = hashForMergedMiningBase(h);
        expect(
          hashForMergedMiningBase({
            ...h,
            bitcoinMergedMiningHeader: btc,
            bitcoinMergedMiningMerkleProof: new Uint8Array(),
            bitcoinMergedMiningCoinbaseTransaction: new Uint8Array(),
          }),
        ).toEqual(base);
        expect(hashForMergedMiningBase({ ...h, paidFees: h.paidFees + 1n })).not.toEqual(base);
      }),
      { numRuns: 50 },
    );
  });

  it("hash exactly the 18 and 17 items the chain defines", () => {
    fc.assert(
      fc.property(headerArb, (h) => {
        const items = rlpDecode(encodeHeader(h), "header") as Uint8Array[];
        expect(items).toHaveLength(20);
        expect(headerHash(h)).toEqual(keccak256(rlpEncode([...items.slice(0, 17), items[17]!])));
        expect(hashForMergedMiningBase(h)).toEqual(keccak256(rlpEncode(items.slice(0, 17))));
      }),
      { numRuns: 20 },
    );
  });

  it("put fork-detection data in the last 12 bytes", () => {
    const base = new Uint8Array(32).fill(0xaa);
    const data = new Uint8Array(12).fill(0x01);
    expect(bytesToHex(withForkDetectionData(base, data))).toBe(
      `0x${"aa".repeat(20)}${"01".repeat(12)}`,
    );
  });

  it.each([
    [
      "19 fields",
      (items: Uint8Array[]) => items.slice(0, 19),
      "invalid block header: expected 20 items, got 19",
    ],
    [
      "a 31-byte parent hash",
      (items: Uint8Array[]) => [items[0]!.slice(1), ...items.slice(1)],
      "invalid header parentHash: expected 32 bytes, got 31",
    ],
    [
      "a padded number",
      (items: Uint8Array[]) => withItem(items, 8, new Uint8Array([0, 1])),
      "invalid header number: integer has leading zero bytes",
    ],
    [
      "33 bytes of extraData",
      (items: Uint8Array[]) => withItem(items, 12, new Uint8Array(33)),
      "invalid header extraData: 33 bytes, at most 32",
    ],
    [
      "a non-empty ummRoot",
      (items: Uint8Array[]) => withItem(items, 16, new Uint8Array(20)),
      "invalid header ummRoot: expected 0 bytes, got 20",
    ],
  ])("refuse %s", (_what, mutate, message) => {
    const h = fc.sample(headerArb, { numRuns: 1, seed: 7 })[0]!;
    const items = rlpDecode(encodeHeader(h), "header") as Uint8Array[];
    expect(() => decodeHeader(rlpEncode(mutate(items)))).toThrow(new DecodeError(message));
  });
});

describe("receipts", () => {
  const receiptArb: fc.Arbitrary<Receipt> = fc.record({
    status: fc.constantFrom(0 as const, 1 as const),
    cumulativeGasUsed: u64,
    logsBloom: bytes(256),
    logs: fc.array(
      fc.record({
        address: bytes(20),
        topics: fc.array(bytes(32), { maxLength: 4 }),
        data: fc.uint8Array({ maxLength: 64 }),
      }),
      { maxLength: 3 },
    ),
  }) as fc.Arbitrary<Receipt>;

  it("round-trip", () => {
    fc.assert(
      fc.property(receiptArb, (r) => {
        expect(decodeReceipt(encodeReceipt(r))).toEqual(r);
      }),
    );
  });

  it("refuse a status other than empty or 0x01", () => {
    const bad = rlpEncode([new Uint8Array([2]), new Uint8Array(), new Uint8Array(256), []]);
    expect(() => decodeReceipt(bad)).toThrow("invalid receipt status: want empty (0) or 0x01 (1)");
  });
});

describe("blocks", () => {
  it("round-trip with transactions and uncles", () => {
    const key = deriveDevAccounts()[0]!.privateKey;
    fc.assert(
      fc.property(
        headerArb,
        fc.array(headerArb, { maxLength: 2 }),
        fc.nat({ max: 3 }),
        (header, uncles, txCount) => {
          const transactions = Array.from({ length: txCount }, (_, i) =>
            signTransaction(
              {
                nonce: BigInt(i),
                gasPrice: 1n,
                gasLimit: 21_000n,
                to: null,
                value: 0n,
                data: new Uint8Array([i]),
              },
              key,
              33,
            ),
          );
          const block: Block = { header, transactions, uncles };
          const decoded = decodeBlock(encodeBlock(block));
          expect(decoded.header).toEqual(header);
          expect(decoded.uncles).toEqual(uncles);
          expect(decoded.transactions.map((t) => bytesToHex(t.hash))).toEqual(
            transactions.map((t) => bytesToHex(t.hash)),
          );
          expect(encodeBlock(decoded)).toEqual(encodeBlock(block));
        },
      ),
      { numRuns: 30 },
    );
  });

  it("hash the empty uncle list as Ethereum does", () => {
    expect(bytesToHex(unclesHash([]))).toBe(
      "0x1dcc4de8dec75d7aab85b567b6ccd41ad312451b948a7413f0a142fd40d49347",
    );
  });
});

function withItem(items: Uint8Array[], index: number, value: Uint8Array): Uint8Array[] {
  const copy = [...items];
  copy[index] = value;
  return copy;
}

function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}
