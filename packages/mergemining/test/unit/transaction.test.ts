import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { parseBitcoinBlock } from "../../src/block.js";
import { MergeMiningErrorCode } from "../../src/errors.js";
import {
  type BitcoinTransaction,
  ByteReader,
  encodeBitcoinTransaction,
  encodeVarint,
  parseBitcoinTransaction,
  txid,
  wtxid,
} from "../../src/transaction.js";
import { bitcoinjsBlocks, coreBlocks, hex, testnetBlock926485, toHex } from "./vectors.js";

function rawTransactions(block: Uint8Array): Uint8Array[] {
  // Re-walk the block to get each transaction's own bytes.
  const r = new ByteReader(block, 80);
  const n = r.varint();
  const out: Uint8Array[] = [];
  for (let i = 0; i < n; i++) {
    const start = r.offset;
    const tx = parseBitcoinBlock(block).transactions[i]!;
    r.offset = start + encodeBitcoinTransaction(tx).length;
    out.push(block.slice(start, r.offset));
  }
  return out;
}

describe("transactions from real blocks", () => {
  const blocks = [
    ...bitcoinjsBlocks()
      .valid.filter((b) => b.hex.length > 160)
      .map((b) => [`bitcoinjs ${b.description}`, hex(b.hex)] as const),
    ...coreBlocks().map((b) => [`Core ${b.id.slice(0, 16)}`, hex(b.hex)] as const),
    ["testnet 926485", testnetBlock926485().block] as const,
  ];

  it.each(blocks)("%s: every transaction re-serializes byte for byte", (_, block) => {
    for (const raw of rawTransactions(block)) {
      const tx = parseBitcoinTransaction(raw);
      expect(toHex(encodeBitcoinTransaction(tx))).toBe(toHex(raw));
    }
  });

  it("segwit (mainnet 542213, bitcoinjs): txid hashes the stripped form, wtxid the full one", () => {
    const b = bitcoinjsBlocks().valid.find((x) => x.witnessCommit !== undefined)!;
    const block = parseBitcoinBlock(hex(b.hex));
    const segwit = block.transactions.filter((t) => t.hasWitness);
    expect(segwit.length).toBeGreaterThan(0);
    for (const t of segwit) {
      expect(toHex(txid(t))).not.toBe(toHex(wtxid(t)));
      expect(encodeBitcoinTransaction(t, false).length).toBeLessThan(
        encodeBitcoinTransaction(t).length,
      );
    }
    // stripped size and total size of the fixture
    const stripped =
      80 +
      1 +
      block.transactions.reduce((s, t) => s + encodeBitcoinTransaction(t, false).length, 0);
    expect(stripped).toBe((b as unknown as { strippedSize: number }).strippedSize);
  });

  it("the testnet 926485 coinbase: a segwit coinbase with one witness item of 32 zero bytes", () => {
    const cb = parseBitcoinBlock(testnetBlock926485().block).transactions[0]!;
    expect(cb.hasWitness).toBe(true);
    expect(cb.inputs[0]!.prevIndex).toBe(0xffffffff);
    expect(cb.inputs[0]!.witness.map(toHex)).toEqual(["00".repeat(32)]);
    expect(cb.outputs).toHaveLength(3);
    expect(encodeBitcoinTransaction(cb, false)).toHaveLength(229);
  });
});

const txArb: fc.Arbitrary<BitcoinTransaction> = fc
  .record({
    version: fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }),
    inputs: fc.array(
      fc.record({
        prevTxid: fc.uint8Array({ minLength: 32, maxLength: 32 }),
        prevIndex: fc.nat({ max: 0xffffffff }),
        scriptSig: fc.uint8Array({ maxLength: 300 }),
        sequence: fc.nat({ max: 0xffffffff }),
        witness: fc.array(fc.uint8Array({ maxLength: 80 }), { maxLength: 3 }),
      }),
      { minLength: 1, maxLength: 4 },
    ),
    outputs: fc.array(
      fc.record({
        value: fc.bigInt({ min: 0n, max: (1n << 64n) - 1n }),
        scriptPubKey: fc.uint8Array({ maxLength: 300 }),
      }),
      { maxLength: 4 },
    ),
    lockTime: fc.nat({ max: 0xffffffff }),
    withWitness: fc.boolean(),
  })
  .map(({ withWitness, inputs, ...rest }) => {
    const hasWitness = withWitness && inputs.some((i) => i.witness.length > 0);
    return {
      ...rest,
      inputs: inputs.map((i) => (hasWitness ? i : { ...i, witness: [] })),
      hasWitness,
    };
  });

describe("transactions: properties", () => {
  it("parse ∘ encode is the identity, legacy and segwit", () => {
    fc.assert(
      fc.property(txArb, (tx) => {
        const bytes = encodeBitcoinTransaction(tx);
        expect(parseBitcoinTransaction(bytes)).toEqual(tx);
        // Without witness, the txid is the same whichever form was parsed.
        expect(toHex(txid(bytes))).toBe(toHex(txid(encodeBitcoinTransaction(tx, false))));
      }),
    );
  });

  it("every strict prefix is rejected as malformed", () => {
    fc.assert(
      fc.property(txArb, fc.nat(), (tx, k) => {
        const bytes = encodeBitcoinTransaction(tx);
        const cut = k % bytes.length;
        expect(() => parseBitcoinTransaction(bytes.subarray(0, cut))).toThrow(
          expect.objectContaining({ code: MergeMiningErrorCode.MALFORMED }),
        );
      }),
      { numRuns: 50 },
    );
  });

  it("varints: canonical round trip, non-canonical rejected", () => {
    fc.assert(
      fc.property(
        fc.oneof(fc.nat({ max: 300 }), fc.nat({ max: 0xffffffff }), fc.maxSafeNat()),
        (n) => {
          const r = new ByteReader(encodeVarint(n));
          expect(r.varint()).toBe(n);
          expect(r.offset).toBe(r.bytes.length);
        },
      ),
    );
    expect(() => new ByteReader(hex("fd1000")).varint()).toThrow(/non-canonical/);
    expect(() => new ByteReader(hex("feffff0000")).varint()).toThrow(/non-canonical/);
  });

  it("rejects trailing bytes and a segwit flag other than 1", () => {
    const input = {
      prevTxid: new Uint8Array(32),
      prevIndex: 0,
      scriptSig: new Uint8Array(0),
      sequence: 0,
      witness: [],
    };
    const tx = encodeBitcoinTransaction({
      version: 1,
      inputs: [input],
      outputs: [],
      lockTime: 0,
      hasWitness: false,
    });
    expect(() => parseBitcoinTransaction(Uint8Array.from([...tx, 0]))).toThrow(/trailing/);
    expect(() => parseBitcoinTransaction(hex("01000000000201000000"))).toThrow(/segwit flag/);
  });
});
