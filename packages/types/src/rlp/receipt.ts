import type { Address, Hash32 } from "../data.js";
import {
  bigintToBytes,
  bytesToBigint,
  DecodeError,
  expectBytes,
  expectList,
  type RLPItem,
  rlpDecode,
  rlpEncode,
  rlpListOfEncoded,
} from "./codec.js";
import type { TransactionType } from "./transaction.js";

export interface Log {
  readonly address: Address;
  /** 0 to 4 topics of 32 bytes. */
  readonly topics: readonly Hash32[];
  readonly data: Uint8Array;
}

/**
 * A receipt in Ethereum's post-Byzantium form: status, cumulative gas, bloom, logs. A typed
 * transaction's receipt is typed too (RSKIP546): its encoding is the type byte, then that RLP.
 */
export interface Receipt {
  readonly status: 0 | 1;
  readonly cumulativeGasUsed: bigint;
  readonly logsBloom: Uint8Array;
  readonly logs: readonly Log[];
  /** The transaction's type; 0 (legacy) when absent. */
  readonly type?: TransactionType;
}

function logItem(log: Log): RLPItem {
  return [log.address, [...log.topics], log.data];
}

/** The receipt as the receipts trie holds it: its RLP, after its type byte when it is typed. */
export function encodeReceipt(receipt: Receipt): Uint8Array {
  const encoded = rlpEncode([
    receipt.status === 1 ? new Uint8Array([1]) : new Uint8Array(),
    bigintToBytes(receipt.cumulativeGasUsed),
    receipt.logsBloom,
    receipt.logs.map(logItem),
  ]);
  const type = receipt.type ?? 0;
  if (type === 0) return encoded;
  const out = new Uint8Array(encoded.length + 1);
  out[0] = type;
  out.set(encoded, 1);
  return out;
}

export function decodeReceipt(bytes: Uint8Array): Receipt {
  if (bytes.length > 0 && bytes[0]! <= 0x7f) return typedReceipt(bytes);
  return receiptFromItem(rlpDecode(bytes, "receipt"));
}

/**
 * A block's receipts as stored: the RLP list of their encodings, a typed one as a byte string
 * (as a block's list holds typed transactions).
 */
export function encodeReceiptList(receipts: readonly Receipt[]): Uint8Array {
  return rlpListOfEncoded(
    receipts.map((receipt) =>
      (receipt.type ?? 0) === 0 ? encodeReceipt(receipt) : rlpEncode(encodeReceipt(receipt)),
    ),
  );
}

export function decodeReceiptList(bytes: Uint8Array): Receipt[] {
  return expectList(rlpDecode(bytes, "receipt list"), "receipt list").map((item) =>
    item instanceof Uint8Array ? typedReceipt(item) : receiptFromItem(item),
  );
}

function typedReceipt(bytes: Uint8Array): Receipt {
  const type = bytes[0];
  if (type !== 1 && type !== 2)
    throw new DecodeError(`invalid receipt: type ${type ?? "none"} is not 1 or 2`);
  return { ...receiptFromItem(rlpDecode(bytes.subarray(1), "receipt")), type };
}

function receiptFromItem(item: RLPItem): Receipt {
  const f = expectList(item, "receipt", 4);
  const status = expectBytes(f[0], "receipt status");
  if (!(status.length === 0 || (status.length === 1 && status[0] === 1))) {
    throw new DecodeError("invalid receipt status: want empty (0) or 0x01 (1)");
  }
  return {
    status: status.length === 0 ? 0 : 1,
    cumulativeGasUsed: bytesToBigint(f[1]!, "receipt cumulativeGasUsed", 8),
    logsBloom: expectBytes(f[2], "receipt logsBloom", 256),
    logs: expectList(f[3]!, "receipt logs").map((item, i) => {
      const l = expectList(item, `receipt log ${i}`, 3);
      const topics = expectList(l[1]!, `receipt log ${i} topics`);
      if (topics.length > 4) throw new DecodeError(`invalid receipt log ${i}: more than 4 topics`);
      return {
        address: expectBytes(l[0], `receipt log ${i} address`, 20) as Address,
        topics: topics.map((t, j) => expectBytes(t, `receipt log ${i} topic ${j}`, 32) as Hash32),
        data: expectBytes(l[2], `receipt log ${i} data`),
      };
    }),
  };
}
