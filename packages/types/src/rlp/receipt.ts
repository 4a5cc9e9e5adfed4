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

export interface Log {
  readonly address: Address;
  /** 0 to 4 topics of 32 bytes. */
  readonly topics: readonly Hash32[];
  readonly data: Uint8Array;
}

/** A receipt in Ethereum's post-Byzantium form: status, cumulative gas, bloom, logs. */
export interface Receipt {
  readonly status: 0 | 1;
  readonly cumulativeGasUsed: bigint;
  readonly logsBloom: Uint8Array;
  readonly logs: readonly Log[];
}

function logItem(log: Log): RLPItem {
  return [log.address, [...log.topics], log.data];
}

export function encodeReceipt(receipt: Receipt): Uint8Array {
  return rlpEncode([
    receipt.status === 1 ? new Uint8Array([1]) : new Uint8Array(),
    bigintToBytes(receipt.cumulativeGasUsed),
    receipt.logsBloom,
    receipt.logs.map(logItem),
  ]);
}

export function decodeReceipt(bytes: Uint8Array): Receipt {
  return receiptFromItem(rlpDecode(bytes, "receipt"));
}

/** A block's receipts as stored: the RLP list of their encodings. */
export function encodeReceiptList(receipts: readonly Receipt[]): Uint8Array {
  return rlpListOfEncoded(receipts.map(encodeReceipt));
}

export function decodeReceiptList(bytes: Uint8Array): Receipt[] {
  return expectList(rlpDecode(bytes, "receipt list"), "receipt list").map(receiptFromItem);
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
