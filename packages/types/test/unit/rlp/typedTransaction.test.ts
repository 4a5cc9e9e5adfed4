import { Transaction, Wallet } from "ethers";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  type AccessListEntry,
  type Address,
  bytesToHex,
  DecodeError,
  decodeBody,
  decodeReceipt,
  decodeReceiptList,
  decodeSenders,
  decodeTransaction,
  deriveDevAccounts,
  encodeBody,
  encodeReceipt,
  encodeReceiptList,
  encodeSenders,
  type Hash32,
  hexToBytes,
  NETWORKS,
  type Receipt,
  rlpEncode,
  signTransaction,
  TransactionError,
  transactionFromItem,
  transactionListItem,
  typedTransactionsActive,
  type UnsignedTransaction,
} from "../../../src/index.js";

const [account] = deriveDevAccounts();
const KEY = account!.privateKey;
const TO = hexToBytes(`0x${"35".repeat(20)}`) as Address;

const LIST: AccessListEntry[] = [
  {
    address: hexToBytes(`0x${"de".repeat(20)}`) as Address,
    storageKeys: [
      hexToBytes(`0x${"00".repeat(31)}01`) as Hash32,
      hexToBytes(`0x${"ff".repeat(32)}`) as Hash32,
    ],
  },
  { address: TO, storageKeys: [] },
];

function ethersFields(tx: UnsignedTransaction, chainId: number) {
  return {
    type: tx.type ?? 0,
    chainId,
    nonce: Number(tx.nonce),
    gasLimit: tx.gasLimit,
    to: tx.to === null ? null : bytesToHex(tx.to),
    value: tx.value,
    data: bytesToHex(tx.data),
    ...(tx.type === 2
      ? { maxPriorityFeePerGas: tx.maxPriorityFeePerGas, maxFeePerGas: tx.maxFeePerGas }
      : { gasPrice: tx.gasPrice }),
    ...(tx.type === 1 || tx.type === 2
      ? {
          accessList: (tx.accessList ?? []).map((e) => ({
            address: bytesToHex(e.address),
            storageKeys: e.storageKeys.map(bytesToHex),
          })),
        }
      : {}),
  };
}

const TYPE1: UnsignedTransaction = {
  type: 1,
  nonce: 7n,
  gasPrice: 60_000_000n,
  gasLimit: 50_000n,
  to: TO,
  value: 10n ** 15n,
  data: hexToBytes("0xa9059cbb"),
  accessList: LIST,
};
const TYPE2: UnsignedTransaction = {
  type: 2,
  nonce: 0n,
  gasPrice: 0n, // set from the two fees by signTransaction
  gasLimit: 21_000n,
  to: TO,
  value: 1n,
  data: new Uint8Array(),
  maxPriorityFeePerGas: 2_000_000_000n,
  maxFeePerGas: 30_000_000_000n,
};

describe("typed transactions (RSKIP546: EIP-2718 envelopes of type 1 and 2)", () => {
  it.each([
    ["type 1", TYPE1],
    ["type 2", TYPE2],
    [
      "type 2 with an access list, creating a contract",
      { ...TYPE2, to: null, data: hexToBytes("0x6000"), accessList: LIST },
    ],
  ])("sign %s to the bytes ethers signs, and decode what ethers signs", async (_what, tx) => {
    const ours = signTransaction(tx, KEY, 33);
    const wallet = new Wallet(bytesToHex(KEY));
    const theirs = await wallet.signTransaction(ethersFields(tx, 33));
    expect(bytesToHex(ours.raw)).toBe(theirs);
    const parsed = Transaction.from(bytesToHex(ours.raw));
    expect(parsed.from).toBe(wallet.address);
    expect(parsed.hash).toBe(bytesToHex(ours.hash));
    const decoded = decodeTransaction(hexToBytes(theirs));
    expect(bytesToHex(decoded.from)).toBe(wallet.address.toLowerCase());
    expect(decoded.hash).toEqual(ours.hash);
    expect(decoded.type).toBe(tx.type);
    expect(decoded.chainId).toBe(33);
    expect(decoded.v).toBe(BigInt(parsed.signature!.yParity));
    expect(decoded.accessList).toEqual(tx.accessList ?? []);
    expect(decoded.accessListBytes).toBe(
      rlpEncode((tx.accessList ?? []).map((e) => [e.address, [...e.storageKeys]])).length,
    );
  });

  it("prices type 2 at the lower of its two fees (RSKIP546's effective gas price)", () => {
    expect(signTransaction(TYPE2, KEY, 33).gasPrice).toBe(2_000_000_000n);
    const capped = signTransaction(
      { ...TYPE2, maxPriorityFeePerGas: 9n, maxFeePerGas: 5n },
      KEY,
      33,
    );
    expect(capped.gasPrice).toBe(5n);
    expect(decodeTransaction(capped.raw).gasPrice).toBe(5n);
    expect(decodeTransaction(capped.raw).maxPriorityFeePerGas).toBe(9n);
    expect(decodeTransaction(capped.raw).maxFeePerGas).toBe(5n);
  });

  it("counts an empty access list as one byte (0xc0), a legacy transaction as none", () => {
    expect(signTransaction(TYPE2, KEY, 33).accessListBytes).toBe(1);
    expect(signTransaction({ ...TYPE2, type: 0, gasPrice: 1n }, KEY, 33).accessListBytes).toBe(0);
  });

  it("travel in a block's list as byte strings, beside legacy ones", () => {
    const txs = [
      signTransaction(TYPE1, KEY, 33),
      signTransaction({ ...TYPE1, type: 0, nonce: 8n }, KEY, 33),
      signTransaction({ ...TYPE2, nonce: 9n }, KEY, 33),
    ];
    expect(transactionListItem(txs[0]!)).toEqual(rlpEncode(txs[0]!.raw));
    expect(transactionListItem(txs[1]!)).toBe(txs[1]!.raw);
    const body = decodeBody(encodeBody({ transactions: txs, uncles: [] }));
    expect(body.transactions.map((t) => t.hash)).toEqual(txs.map((t) => t.hash));
    expect(body.transactions.map((t) => t.type)).toEqual([1, 0, 2]);
    expect(body.transactions.map((t) => bytesToHex(t.from))).toEqual(
      txs.map((t) => bytesToHex(t.from)),
    );
    // With the stored senders: no recovery, the same transactions.
    const stored = decodeBody(
      encodeBody({ transactions: txs, uncles: [] }),
      decodeSenders(encodeSenders(txs)),
    );
    expect(stored.transactions).toEqual(body.transactions);
    expect(() => transactionFromItem(new Uint8Array([0xc0]))).toThrow(DecodeError);
  });

  it("have typed receipts: the type byte, then the receipt's RLP; in a block's list as byte strings", () => {
    const base: Receipt = {
      status: 1,
      cumulativeGasUsed: 21_000n,
      logsBloom: new Uint8Array(256),
      logs: [],
    };
    const typed: Receipt = { ...base, type: 2 };
    expect(encodeReceipt(typed)).toEqual(new Uint8Array([2, ...encodeReceipt(base)]));
    expect(decodeReceipt(encodeReceipt(typed))).toEqual(typed);
    expect(decodeReceipt(encodeReceipt(base))).toEqual(base);
    const list = [typed, base, { ...base, type: 1 as const, status: 0 as const }];
    expect(decodeReceiptList(encodeReceiptList(list))).toEqual(list);
    expect(() => decodeReceipt(new Uint8Array([3, 0xc0]))).toThrow(DecodeError);
  });

  it.each([
    [
      "a y parity of 2",
      (f: Uint8Array[]) => {
        f[9] = new Uint8Array([2]);
      },
      "y parity 2 is neither 0 nor 1",
    ],
    [
      "11 fields",
      (f: Uint8Array[]) => {
        f.pop();
      },
      "expected 12 items, got 11",
    ],
    [
      "a short access list address",
      (f: Uint8Array[]) => {
        (f as unknown[])[8] = [[new Uint8Array(19), []]];
      },
      "address: expected 20 bytes",
    ],
    [
      "a 31-byte storage key",
      (f: Uint8Array[]) => {
        (f as unknown[])[8] = [[TO, [new Uint8Array(31)]]];
      },
      "storage key 0: expected 32 bytes",
    ],
    [
      "a leading zero in the chain id",
      (f: Uint8Array[]) => {
        f[0] = new Uint8Array([0, 33]);
      },
      "chainId: integer has leading zero bytes",
    ],
  ])("refuse a type 2 transaction with %s", (_what, damage, message) => {
    const fields = [
      new Uint8Array([33]),
      new Uint8Array(),
      new Uint8Array([1]),
      new Uint8Array([2]),
      new Uint8Array([0x52, 0x08]),
      TO,
      new Uint8Array([1]),
      new Uint8Array(),
      [] as unknown as Uint8Array,
      new Uint8Array(),
      new Uint8Array(32).fill(1),
      new Uint8Array(32).fill(1),
    ];
    damage(fields);
    const raw = new Uint8Array([2, ...rlpEncode(fields)]);
    expect(() => decodeTransaction(raw)).toThrow(message);
  });

  it("never throws anything but a DecodeError or TransactionError on damaged envelopes", () => {
    const good = [signTransaction(TYPE1, KEY, 33).raw, signTransaction(TYPE2, KEY, 33).raw];
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 1 }),
        fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { maxLength: 4 }),
        fc.nat(),
        (which, edits, cut) => {
          const raw = good[which]!.slice(0, Math.max(1, good[which]!.length - (cut % 8)));
          for (const [at, value] of edits) raw[at % raw.length] = value;
          try {
            decodeTransaction(raw);
          } catch (err) {
            expect(err instanceof DecodeError || err instanceof TransactionError).toBe(true);
          }
        },
      ),
      { numRuns: 2_000 },
    );
  });

  it("are active from genesis on the development networks, not on mainnet and testnet", () => {
    expect(typedTransactionsActive(NETWORKS.regtest, 0n)).toBe(true);
    expect(typedTransactionsActive(NETWORKS.devnet, 5n)).toBe(true);
    expect(typedTransactionsActive(NETWORKS.mainnet, 10n ** 9n)).toBe(false);
    expect(typedTransactionsActive(NETWORKS.testnet, 10n ** 9n)).toBe(false);
  });
});
