import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  type Address,
  bigintToBytes,
  bytesToHex,
  DecodeError,
  decodeBody,
  decodeSenders,
  decodeTransaction,
  deriveDevAccounts,
  encodeBody,
  encodeSenders,
  rlpDecode,
  rlpEncode,
  type SignedTransaction,
  signTransaction,
  TransactionError,
} from "../../../src/index.js";

const accounts = deriveDevAccounts();

/** `count` transactions, signed in turn by the first three development accounts. */
function transactions(count: number): SignedTransaction[] {
  return Array.from({ length: count }, (_, i) =>
    signTransaction(
      {
        nonce: BigInt(i),
        gasPrice: 1n,
        gasLimit: 21_000n,
        to: i % 2 === 0 ? null : accounts[5]!.address,
        value: BigInt(i),
        data: new Uint8Array([i]),
      },
      accounts[i % 3]!.privateKey,
      33,
    ),
  );
}

const view = (tx: SignedTransaction) => ({
  ...tx,
  from: bytesToHex(tx.from),
  hash: bytesToHex(tx.hash),
  raw: bytesToHex(tx.raw),
});

describe("senders", () => {
  it("are the 20-byte addresses one after the other, and read back", () => {
    const txs = transactions(3);
    const bytes = encodeSenders(txs);
    expect(bytes.length).toBe(60);
    expect(bytesToHex(bytes.subarray(20, 40))).toBe(bytesToHex(accounts[1]!.address));
    expect(decodeSenders(bytes).map(bytesToHex)).toEqual(txs.map((t) => bytesToHex(t.from)));
    expect(encodeSenders([])).toEqual(new Uint8Array());
    expect(decodeSenders(new Uint8Array())).toEqual([]);
  });

  it("refuse a length that is not a multiple of 20", () => {
    for (const n of [1, 19, 21, 59]) {
      expect(() => decodeSenders(new Uint8Array(n))).toThrow(DecodeError);
    }
    expect(() => decodeSenders(new Uint8Array(21))).toThrow(
      "invalid block senders: 21 bytes is not a whole number of 20-byte addresses",
    );
  });

  it("read back copies, not views of the stored bytes", () => {
    const bytes = encodeSenders(transactions(2));
    const [first] = decodeSenders(bytes);
    bytes.fill(0);
    expect(bytesToHex(first!)).toBe(bytesToHex(accounts[0]!.address));
  });
});

describe("bodies with senders", () => {
  it("decode to the body that signature recovery gives (same from, hash and raw)", () => {
    fc.assert(
      fc.property(fc.nat({ max: 6 }), (count) => {
        const body = { transactions: transactions(count), uncles: [] };
        const bytes = encodeBody(body);
        const recovered = decodeBody(bytes);
        const stored = decodeBody(bytes, decodeSenders(encodeSenders(recovered.transactions)));
        expect(stored.transactions.map(view)).toEqual(recovered.transactions.map(view));
        expect(stored.uncles).toEqual(recovered.uncles);
        expect(encodeBody(stored)).toEqual(bytes);
      }),
      { numRuns: 10 },
    );
  });

  it("take from as given, without recovering a public key", () => {
    const txs = transactions(2);
    const other = new Uint8Array(20).fill(0xee) as Address;
    const body = decodeBody(encodeBody({ transactions: txs, uncles: [] }), [other, other]);
    expect(body.transactions.map((t) => bytesToHex(t.from))).toEqual([
      bytesToHex(other),
      bytesToHex(other),
    ]);
    expect(bytesToHex(body.transactions[1]!.hash)).toBe(bytesToHex(txs[1]!.hash));
  });

  it("decode a signature that no public key recovers from, which proves recovery skipped", () => {
    const tx = transactions(1)[0]!;
    const fields = rlpDecode(tx.raw, "tx") as Uint8Array[];
    // An r that is no point's x coordinate: in range, but recovery fails on it.
    let unrecoverable: Uint8Array | undefined;
    for (let r = 1n; unrecoverable === undefined; r++) {
      const raw = rlpEncode([...fields.slice(0, 7), bigintToBytes(r), fields[8]!]);
      try {
        decodeTransaction(raw);
      } catch (err) {
        if ((err as Error).message.includes("no public key recovers")) unrecoverable = raw;
      }
    }
    const body = encodeBody({
      transactions: [decodeTransaction(unrecoverable, tx.from)],
      uncles: [],
    });
    expect(() => decodeBody(body)).toThrow(TransactionError);
    expect(bytesToHex(decodeBody(body, [tx.from]).transactions[0]!.from)).toBe(bytesToHex(tx.from));
  });

  it("refuse a sender count that is not the transaction count", () => {
    const bytes = encodeBody({ transactions: transactions(2), uncles: [] });
    const one = [accounts[0]!.address];
    expect(() => decodeBody(bytes, one)).toThrow(DecodeError);
    expect(() => decodeBody(bytes, one)).toThrow(
      "invalid block senders: 1 senders for 2 transactions",
    );
    expect(() => decodeBody(bytes, [...one, ...one, ...one])).toThrow(DecodeError);
    expect(() => decodeBody(encodeBody({ transactions: [], uncles: [] }), one)).toThrow(
      DecodeError,
    );
  });

  it("refuse a sender that is not 20 bytes", () => {
    const bytes = encodeBody({ transactions: transactions(1), uncles: [] });
    expect(() => decodeBody(bytes, [new Uint8Array(19)])).toThrow(DecodeError);
  });
});
