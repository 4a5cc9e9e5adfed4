import { Bucket, type Database, type WriteOp } from "@nodex/state";
import { bytesToHex, type Receipt, writeU64BE } from "@nodex/types";
import type { LocatedLog } from "./logRecords.js";

/**
 * The log index (`Bucket.LOG_INDEX`): for each canonical block, one empty entry per distinct
 * emitting address and per distinct (position, topic) of its logs, keyed
 * `kind ‖ address-or-topic ‖ number (8 bytes, big-endian)`, so that the blocks where a value
 * occurs are one ordered key range. Entries are written in the batch that makes a block
 * canonical and deleted in the batch that takes it off the canonical chain.
 *
 * Blocks made canonical before the index existed have no entries: `META` `logIndexStart` holds
 * the number of the first block indexed (written with the first block indexed). A query reads
 * the index from that number on and tests the blooms of the blocks below it.
 */
export const LogIndexKind = {
  ADDRESS: 0x00,
  /** Topic at position 0; position `p` is `TOPIC + p`. */
  TOPIC: 0x01,
} as const;

/** What log queries read of the index and of the log records. */
export interface LogIndexReader {
  /** The first block number indexed, `undefined` while none is. */
  logIndexStart(): Promise<bigint | undefined>;
  /**
   * The indexed blocks in [`from`, `to`] whose logs have any of `values` as `kind`, or
   * `undefined` past `limit` entries; then `past`, when given, learns a block number by which
   * [`from`, that number] holds more than `limit` entries.
   */
  logIndexBlocks(
    kind: number,
    values: readonly Uint8Array[],
    from: bigint,
    to: bigint,
    limit: number,
    past?: (reach: bigint) => void,
  ): Promise<bigint[] | undefined>;
  /** The first block number with log records (see `logRecords.ts`), `undefined` while none has. */
  logRecordStart(): Promise<bigint | undefined>;
  /** The logs of canonical block `number` from its log record, `undefined` when it has none. */
  logRecord(number: bigint): Promise<readonly LocatedLog[] | undefined>;
  /** The canonical blocks in [`from`, `to`] with a log record, ascending, at most `limit`. */
  logRecordNumbers(from: bigint, to: bigint, limit: number): Promise<bigint[]>;
}

/** `META` key of the first indexed block number (8 bytes, big-endian, as `numberKey` writes it). */
export const LOG_INDEX_START_KEY = new TextEncoder().encode("logIndexStart");

/** Topic positions a log can have (LOG0 to LOG4). */
const MAX_TOPICS = 4;

/** The index keys of a block's logs, each once. */
export function logIndexKeys(number: bigint, receipts: readonly Receipt[]): Uint8Array[] {
  const seen = new Set<string>();
  const keys: Uint8Array[] = [];
  const add = (kind: number, value: Uint8Array) => {
    const key = entryKey(kind, value, number);
    const id = bytesToHex(key);
    if (seen.has(id)) return;
    seen.add(id);
    keys.push(key);
  };
  for (const receipt of receipts) {
    for (const log of receipt.logs) {
      add(LogIndexKind.ADDRESS, log.address);
      for (let position = 0; position < log.topics.length; position++)
        add(LogIndexKind.TOPIC + position, log.topics[position]!);
    }
  }
  return keys;
}

/** The writes that index a block joining the canonical chain. */
export function logIndexWrites(number: bigint, receipts: readonly Receipt[]): WriteOp[] {
  return logIndexKeys(number, receipts).map((key) => ({
    type: "put",
    bucket: Bucket.LOG_INDEX,
    key,
    value: new Uint8Array(),
  }));
}

/** The deletes of a block leaving the canonical chain (harmless for a block never indexed). */
export function logIndexDeletes(number: bigint, receipts: readonly Receipt[]): WriteOp[] {
  return logIndexKeys(number, receipts).map((key) => ({
    type: "del",
    bucket: Bucket.LOG_INDEX,
    key,
  }));
}

/**
 * The numbers of the indexed blocks in [`from`, `to`] where any of `values` occurs as `kind`
 * (an address, or a topic at one position), ascending; `undefined` when there are more than
 * `limit` entries (the value is too common for the index to save reads). Then `past`, when
 * given, is told the last block read: [`from`, it] holds more than `limit` entries already.
 */
export async function logIndexBlocks(
  db: Database,
  kind: number,
  values: readonly Uint8Array[],
  from: bigint,
  to: bigint,
  limit: number,
  past?: (reach: bigint) => void,
): Promise<bigint[] | undefined> {
  if (kind >= LogIndexKind.TOPIC + MAX_TOPICS) return [];
  const found = new Set<bigint>();
  let left = limit;
  /** The highest block of the entries read (each value's are read in ascending order). */
  let reach = from;
  for (const value of values) {
    const gte = entryKey(kind, value, from);
    const lt = entryKey(kind, value, to + 1n);
    const keys = await db.keyList(Bucket.LOG_INDEX, { gte, lt, limit: left + 1 });
    const last = keys.length > 0 ? readNumber(keys[keys.length - 1]!) : from;
    if (last > reach) reach = last;
    if (keys.length > left) {
      past?.(reach);
      return undefined;
    }
    left -= keys.length;
    for (const key of keys) found.add(readNumber(key));
  }
  return [...found].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}

function entryKey(kind: number, value: Uint8Array, number: bigint): Uint8Array {
  const key = new Uint8Array(1 + value.length + 8);
  key[0] = kind;
  key.set(value, 1);
  writeU64BE(key, 1 + value.length, number);
  return key;
}

function readNumber(key: Uint8Array): bigint {
  return new DataView(key.buffer, key.byteOffset + key.length - 8, 8).getBigUint64(0);
}

export function decodeLogIndexStart(bytes: Uint8Array): bigint {
  return new DataView(bytes.buffer, bytes.byteOffset, 8).getBigUint64(0);
}
