import { Bucket, type Database, type WriteOp } from "@nodex/state";
import {
  type Address,
  type Hash32,
  type Log,
  type Receipt,
  type SignedTransaction,
  writeU64BE,
} from "@nodex/types";
import { ChainError, ChainErrorCode } from "./errors.js";

/**
 * The log records (in `Bucket.LOG_INDEX`, kind `LOG_RECORD_KIND`): for each canonical block with
 * logs, one value keyed `kind ‖ number (8 bytes, big-endian)` holding what a log query answers
 * with, so that a query reads one small value per block and never a body or a receipt:
 *
 * ```
 * version (1 byte, 1) ‖ block hash (32)
 * then, for each transaction with logs, in block order:
 *   transaction index (4) ‖ transaction hash (32) ‖ log count (4)
 *   then each log: address (20) ‖ topic count (1) ‖ topics (32 each) ‖ data length (4) ‖ data
 * ```
 *
 * (numbers big-endian). A block's logs are numbered in that order, so a log's index in its block
 * is its position among the record's logs. Records are written in the batch that makes a block
 * canonical and deleted in the one that takes it off, as the log index's entries are; a
 * canonical block without logs has none. Blocks made canonical before records existed have none
 * either: `META` `logRecordStart` holds the number of the first block recorded, and queries read
 * the bodies and receipts of the blocks below it.
 */
export const LOG_RECORD_KIND = 0x10;

/** `META` key of the first block number with log records (8 bytes, big-endian). */
export const LOG_RECORD_START_KEY = new TextEncoder().encode("logRecordStart");

const VERSION = 1;
const HEAD = 1 + 32;

/** A log with where it is, as a log record holds it. */
export interface LocatedLog {
  readonly log: Log;
  readonly blockHash: Uint8Array;
  readonly blockNumber: bigint;
  readonly transactionHash: Uint8Array;
  readonly transactionIndex: number;
  /** Position among all the block's logs. */
  readonly logIndex: number;
}

/** The addresses and topics a log must have (empty addresses: any; `null` position: any). */
export interface LogMatch {
  readonly addresses: readonly Uint8Array[];
  readonly topics: readonly (readonly Uint8Array[] | null)[];
}

export function logRecordKey(number: bigint): Uint8Array {
  const key = new Uint8Array(9);
  key[0] = LOG_RECORD_KIND;
  writeU64BE(key, 1, number);
  return key;
}

/** The record of a block's logs, or `undefined` when it has none. */
export function encodeLogRecord(
  blockHash: Uint8Array,
  transactions: readonly Pick<SignedTransaction, "hash">[],
  receipts: readonly Receipt[],
): Uint8Array | undefined {
  let size = HEAD;
  for (const receipt of receipts) {
    if (receipt.logs.length === 0) continue;
    size += 4 + 32 + 4;
    for (const log of receipt.logs) size += 20 + 1 + 32 * log.topics.length + 4 + log.data.length;
  }
  if (size === HEAD) return undefined;
  const out = new Uint8Array(size);
  const view = new DataView(out.buffer);
  out[0] = VERSION;
  out.set(blockHash, 1);
  let at = HEAD;
  receipts.forEach((receipt, txIndex) => {
    if (receipt.logs.length === 0) return;
    view.setUint32(at, txIndex);
    out.set(transactions[txIndex]!.hash, at + 4);
    view.setUint32(at + 36, receipt.logs.length);
    at += 40;
    for (const log of receipt.logs) {
      out.set(log.address, at);
      out[at + 20] = log.topics.length;
      at += 21;
      for (const topic of log.topics) {
        out.set(topic, at);
        at += 32;
      }
      view.setUint32(at, log.data.length);
      out.set(log.data, at + 4);
      at += 4 + log.data.length;
    }
  });
  return out;
}

/**
 * Every log of record `bytes` (block `number`), in order. The logs are views of `bytes`:
 * nothing is copied.
 */
export function decodeLogRecord(bytes: Uint8Array, number: bigint): LocatedLog[] {
  if (bytes[0] !== VERSION || bytes.length < HEAD)
    throw new ChainError(
      ChainErrorCode.CORRUPT,
      `the log record of block ${number} is not one this node writes (version ${bytes[0]})`,
    );
  const { buffer, byteOffset } = bytes;
  const view = new DataView(buffer, byteOffset, bytes.byteLength);
  // Views made with the constructor: cheaper than `subarray`.
  const blockHash = new Uint8Array(buffer, byteOffset + 1, 32);
  const out: LocatedLog[] = [];
  let at = HEAD;
  while (at < bytes.length) {
    const transactionIndex = view.getUint32(at);
    const transactionHash = new Uint8Array(buffer, byteOffset + at + 4, 32);
    const count = view.getUint32(at + 36);
    at += 40;
    for (let i = 0; i < count; i++) {
      const topicCount = bytes[at + 20]!;
      const topics: Hash32[] = new Array(topicCount);
      for (let t = 0; t < topicCount; t++)
        topics[t] = new Uint8Array(buffer, byteOffset + at + 21 + 32 * t, 32) as Hash32;
      const dataAt = at + 21 + 32 * topicCount + 4;
      const dataLength = view.getUint32(dataAt - 4);
      out.push({
        log: {
          address: new Uint8Array(buffer, byteOffset + at, 20) as Address,
          topics,
          data: new Uint8Array(buffer, byteOffset + dataAt, dataLength),
        },
        blockHash,
        blockNumber: number,
        transactionHash,
        transactionIndex,
        logIndex: out.length,
      });
      at = dataAt + dataLength;
    }
  }
  return out;
}

/** Appends to `out` the logs of `logs` that `match` selects, in order. */
export function matchLogs(logs: readonly LocatedLog[], match: LogMatch, out: LocatedLog[]): void {
  const { addresses, topics } = match;
  for (const found of logs) {
    const { log } = found;
    if (addresses.length > 0 && !anyEqual(log.address, addresses)) continue;
    let matches = true;
    for (let p = 0; p < topics.length; p++) {
      const wanted = topics[p];
      if (wanted === null || wanted === undefined) continue;
      const topic = log.topics[p];
      if (topic === undefined || !anyEqual(topic, wanted)) {
        matches = false;
        break;
      }
    }
    if (matches) out.push(found);
  }
}

/**
 * Whether `bytes` equals any of `values`. Compared from the last byte: topics that hold an
 * address or a number are zeros at the start, and differ, if they do, at the end.
 */
function anyEqual(bytes: Uint8Array, values: readonly Uint8Array[]): boolean {
  for (const value of values) {
    if (value.length !== bytes.length) continue;
    let i = value.length - 1;
    while (i >= 0 && bytes[i] === value[i]) i--;
    if (i < 0) return true;
  }
  return false;
}

/**
 * The log records' side of a change of the canonical chain: the records of `removed` deleted,
 * then those of `added` written (a block at the same number as a removed one takes its key).
 */
export function logRecordChanges(
  removed: readonly { readonly block: { readonly header: { readonly number: bigint } } }[],
  added: readonly {
    readonly hash: Uint8Array;
    readonly number: bigint;
    readonly transactions: readonly Pick<SignedTransaction, "hash">[];
    readonly receipts: readonly Receipt[];
  }[],
): WriteOp[] {
  const ops: WriteOp[] = removed.map((stored) => ({
    type: "del",
    bucket: Bucket.LOG_INDEX,
    key: logRecordKey(stored.block.header.number),
  }));
  for (const block of added) {
    const value = encodeLogRecord(block.hash, block.transactions, block.receipts);
    if (value !== undefined)
      ops.push({ type: "put", bucket: Bucket.LOG_INDEX, key: logRecordKey(block.number), value });
  }
  return ops;
}

/** The record of canonical block `number`, `undefined` when it has no logs (or no record). */
export function readLogRecord(db: Database, number: bigint): Promise<Uint8Array | undefined> {
  return db.get(Bucket.LOG_INDEX, logRecordKey(number));
}

/**
 * The numbers of the blocks in [`from`, `to`] that have a record (logs), ascending, at most
 * `limit` of them.
 */
export async function logRecordNumbers(
  db: Database,
  from: bigint,
  to: bigint,
  limit: number,
): Promise<bigint[]> {
  const keys = await db.keyList(Bucket.LOG_INDEX, {
    gte: logRecordKey(from),
    lt: logRecordKey(to + 1n),
    limit,
  });
  return keys.map((key) => new DataView(key.buffer, key.byteOffset + 1, 8).getBigUint64(0));
}
