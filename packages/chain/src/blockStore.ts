import { Bucket, type Database, type WriteOp } from "@nodex/state";
import {
  type Block,
  type BlockHeader,
  bigintToBytes,
  bytesToBigint,
  bytesToHex,
  decodeBody,
  decodeHeader,
  decodeReceiptList,
  decodeSenders,
  encodeBody,
  encodeHeader,
  encodeReceiptList,
  encodeSenders,
  type Receipt,
  rlpDecode,
  rlpEncode,
  writeU64BE,
} from "@nodex/types";
import { LRUCache } from "lru-cache";
import {
  decodeLogIndexStart,
  LOG_INDEX_START_KEY,
  logIndexBlocks,
  logIndexDeletes,
  logIndexWrites,
} from "./logIndex.js";
import {
  decodeLogRecord,
  LOG_RECORD_START_KEY,
  type LocatedLog,
  logRecordChanges,
  logRecordNumbers,
  readLogRecord,
} from "./logRecords.js";

/** A block of the chain with what the store knows of it. */
export interface StoredBlock {
  readonly block: Block;
  readonly hash: Uint8Array;
  readonly totalDifficulty: bigint;
}

/** Where a transaction is: its block and index. */
export interface TransactionLocation {
  readonly blockHash: Uint8Array;
  readonly index: number;
}

/**
 * How many decoded entries the block store keeps in memory, by kind. Each is a least-recently
 * used cache; a larger one trades memory for fewer LevelDB reads and decodes.
 */
export interface ChainCacheSizes {
  /** Whole blocks (header, transactions with their senders, uncles). */
  readonly blocks: number;
  /** Headers read alone, for fork-detection data and the miners' work. */
  readonly headers: number;
  /** Receipt lists, by block (`eth_getLogs` reads them block by block). */
  readonly receipts: number;
  /** Canonical number → hash entries. */
  readonly canonical: number;
  /**
   * Bytes of decoded log records (by canonical number, `eth_getLogs` reads them block by
   * block), each counted as twice its stored length plus `LOG_OBJECT_BYTES` per log plus
   * `RECORD_ENTRY_BYTES` (a block without logs as `RECORD_ENTRY_BYTES` alone).
   */
  readonly logRecordBytes: number;
}

export const DEFAULT_CHAIN_CACHE_SIZES: ChainCacheSizes = {
  blocks: 256,
  headers: 2048,
  receipts: 1024,
  canonical: 8192,
  logRecordBytes: 16 * 1024 * 1024,
};

/** A canonical block without logs, in the log record cache. */
const NO_LOGS: readonly LocatedLog[] = Object.freeze([]);
/**
 * What one decoded log takes in memory besides its bytes, about: its objects, and the JSON the
 * RPC keeps of it while they live.
 */
const LOG_OBJECT_BYTES = 1024;
/**
 * What one entry of the log record cache takes besides its logs, about: its bigint key and the
 * cache's own bookkeeping (measured: ~107 bytes). A block without logs takes this alone; counted
 * as 1 byte, 16 MiB let a scan of a long chain keep some 16 million of them (1.7 GB).
 */
const RECORD_ENTRY_BYTES = 128;

/**
 * The blocks, receipts and indexes in the database, with caches of their decoded forms. Reads
 * only: the chain writes through the batches `blockWrites` and `canonicalWrites` build, then
 * tells the store what changed (`remember`, `setCanonical`, `forget`).
 */
export class BlockStore {
  readonly #db: Database;
  readonly #blocks: LRUCache<string, StoredBlock>;
  readonly #headers: LRUCache<string, BlockHeader>;
  readonly #receipts: LRUCache<string, readonly Receipt[]>;
  /**
   * Canonical hashes by number. Entries are set when a block becomes canonical; a change of
   * the canonical chain must replace the entries of the blocks it changes.
   */
  readonly #canonical: LRUCache<bigint, Uint8Array>;
  /**
   * Decoded log records by canonical number (`NO_LOGS` for a block without logs). Like canonical
   * hashes, they change with the canonical chain: `setCanonical` and `forgetCanonical` drop the
   * entries of the numbers that change, and `#changes` counts the changes so that a read that
   * overlapped one keeps nothing.
   */
  readonly #records: LRUCache<bigint, readonly LocatedLog[]>;
  #changes = 0;
  /** The first block of the log index, once read (it never changes once written). */
  #logIndexStart: bigint | undefined;
  /** The first block with log records, once read (it never changes once written). */
  #logRecordStart: bigint | undefined;

  constructor(db: Database, sizes: Partial<ChainCacheSizes> = {}) {
    const max = { ...DEFAULT_CHAIN_CACHE_SIZES, ...sizes };
    for (const [kind, size] of Object.entries(max)) {
      if (!Number.isSafeInteger(size) || size < 1)
        throw new RangeError(`the ${kind} cache must hold at least 1 entry, got ${size}`);
    }
    this.#db = db;
    this.#blocks = new LRUCache({ max: max.blocks });
    this.#headers = new LRUCache({ max: max.headers });
    this.#receipts = new LRUCache({ max: max.receipts });
    this.#canonical = new LRUCache({ max: max.canonical });
    this.#records = new LRUCache({ maxSize: max.logRecordBytes });
  }

  async getBlockByHash(hash: Uint8Array): Promise<StoredBlock | undefined> {
    const key = bytesToHex(hash);
    const cached = this.#blocks.get(key);
    if (cached !== undefined) return cached;
    const stored = await this.#readBlock(hash);
    if (stored !== undefined) this.#blocks.set(key, stored);
    return stored;
  }

  /**
   * Reads a block with the senders stored beside it, so that no signature is recovered; a block
   * written before senders were stored has them recovered.
   */
  async #readBlock(hash: Uint8Array): Promise<StoredBlock | undefined> {
    const [headerBytes, bodyBytes, tdBytes, senderBytes] = await Promise.all([
      this.#db.get(Bucket.HEADER, hash),
      this.#db.get(Bucket.BODY, hash),
      this.#db.get(Bucket.TOTAL_DIFFICULTY, hash),
      this.#db.get(Bucket.SENDERS, hash),
    ]);
    if (headerBytes === undefined || bodyBytes === undefined || tdBytes === undefined)
      return undefined;
    const header = decodeHeader(headerBytes);
    const senders = senderBytes === undefined ? undefined : decodeSenders(senderBytes);
    return {
      block: { header, ...decodeBody(bodyBytes, senders) },
      hash,
      totalDifficulty: bytesToBigint(tdBytes, "total difficulty"),
    };
  }

  /** The canonical hash at `number`, as the index says (the caller bounds it by the head). */
  async getCanonicalHash(number: bigint): Promise<Uint8Array | undefined> {
    const cached = this.#canonical.get(number);
    if (cached !== undefined) return cached;
    const hash = await this.#db.get(Bucket.CANONICAL, numberKey(number));
    if (hash !== undefined) this.#canonical.set(number, hash);
    return hash;
  }

  /** The receipts of a block, in transaction order. The array is shared: do not change it. */
  async getReceipts(blockHash: Uint8Array): Promise<readonly Receipt[] | undefined> {
    const key = bytesToHex(blockHash);
    const cached = this.#receipts.get(key);
    if (cached !== undefined) return cached;
    const bytes = await this.#db.get(Bucket.RECEIPTS, blockHash);
    if (bytes === undefined) return undefined;
    const receipts = decodeReceiptList(bytes);
    this.#receipts.set(key, receipts);
    return receipts;
  }

  async getTransactionLocation(txHash: Uint8Array): Promise<TransactionLocation | undefined> {
    const bytes = await this.#db.get(Bucket.TX_LOOKUP, txHash);
    if (bytes === undefined) return undefined;
    const [blockHash, index] = rlpDecode(bytes, "transaction location") as Uint8Array[];
    return { blockHash: blockHash!, index: Number(bytesToBigint(index!, "transaction index")) };
  }

  /** A block's header alone (cheaper than the block: no transaction is decoded). */
  async getHeaderByHash(hash: Uint8Array): Promise<BlockHeader | undefined> {
    const key = bytesToHex(hash);
    const block = this.#blocks.get(key);
    if (block !== undefined) return block.block.header;
    const cached = this.#headers.get(key);
    if (cached !== undefined) return cached;
    const bytes = await this.#db.get(Bucket.HEADER, hash);
    if (bytes === undefined) return undefined;
    const header = decodeHeader(bytes);
    this.#headers.set(key, header);
    return header;
  }

  /**
   * The first block number the log index covers (every canonical block from it on has its
   * entries), or `undefined` while no block has been indexed.
   */
  async logIndexStart(): Promise<bigint | undefined> {
    if (this.#logIndexStart === undefined) {
      const bytes = await this.#db.get(Bucket.META, LOG_INDEX_START_KEY);
      if (bytes !== undefined) this.#logIndexStart = decodeLogIndexStart(bytes);
    }
    return this.#logIndexStart;
  }

  /**
   * The indexed blocks in [`from`, `to`] whose logs have any of `values` as `kind`, or
   * `undefined` past `limit` entries (and `past` told where they were reached).
   */
  logIndexBlocks(
    kind: number,
    values: readonly Uint8Array[],
    from: bigint,
    to: bigint,
    limit: number,
    past?: (reach: bigint) => void,
  ): Promise<bigint[] | undefined> {
    return logIndexBlocks(this.#db, kind, values, from, to, limit, past);
  }

  /**
   * The first block number with log records (every canonical block from it on that has logs
   * has one), or `undefined` while no block has been recorded.
   */
  async logRecordStart(): Promise<bigint | undefined> {
    if (this.#logRecordStart === undefined) {
      const bytes = await this.#db.get(Bucket.META, LOG_RECORD_START_KEY);
      if (bytes !== undefined) this.#logRecordStart = decodeLogIndexStart(bytes);
    }
    return this.#logRecordStart;
  }

  /**
   * The logs of canonical block `number` from its log record, `undefined` when it has none (no
   * logs). The array and its objects are shared: do not change them.
   */
  async logRecord(number: bigint): Promise<readonly LocatedLog[] | undefined> {
    const cached = this.#records.get(number);
    if (cached !== undefined) return cached === NO_LOGS ? undefined : cached;
    const changes = this.#changes;
    const record = await readLogRecord(this.#db, number);
    const logs = record === undefined ? NO_LOGS : decodeLogRecord(record, number);
    if (changes === this.#changes) {
      const size =
        RECORD_ENTRY_BYTES +
        (record === undefined ? 0 : 2 * record.length + LOG_OBJECT_BYTES * logs.length);
      this.#records.set(number, logs, { size });
    }
    return logs === NO_LOGS ? undefined : logs;
  }

  /** The canonical blocks in [`from`, `to`] with a log record, ascending, at most `limit`. */
  logRecordNumbers(from: bigint, to: bigint, limit: number): Promise<bigint[]> {
    return logRecordNumbers(this.#db, from, to, limit);
  }

  /**
   * The log index's and the log records' side of a change of the canonical chain, for the
   * batch that makes it: the entries and records of `removed` deleted, then those of `added`
   * written (a block at the same number as a removed one may share entries with it), and where
   * each starts on its first use. A block whose receipts are unknown has no entries and no
   * record.
   */
  async logIndexChanges(
    removed: readonly StoredBlock[],
    added: readonly StoredBlock[],
    receiptsOf: (block: StoredBlock) => Promise<readonly Receipt[] | undefined>,
  ): Promise<WriteOp[]> {
    const ops: WriteOp[] = [];
    for (const block of removed) {
      const receipts = await receiptsOf(block);
      if (receipts !== undefined) ops.push(...logIndexDeletes(block.block.header.number, receipts));
    }
    const recorded = [];
    for (const block of added) {
      const receipts = await receiptsOf(block);
      if (receipts === undefined) continue;
      ops.push(...logIndexWrites(block.block.header.number, receipts));
      recorded.push({
        hash: block.hash,
        number: block.block.header.number,
        transactions: block.block.transactions,
        receipts,
      });
    }
    ops.push(...logRecordChanges(removed, recorded));
    if (added.length > 0) {
      // Blocks below the first added one were made canonical without entries (or records).
      const start = added.reduce(
        (low, block) => (block.block.header.number < low ? block.block.header.number : low),
        added[0]!.block.header.number,
      );
      for (const [key, first] of [
        [LOG_INDEX_START_KEY, await this.logIndexStart()],
        [LOG_RECORD_START_KEY, await this.logRecordStart()],
      ] as const) {
        if (first === undefined)
          ops.push({ type: "put", bucket: Bucket.META, key, value: numberKey(start) });
      }
    }
    return ops;
  }

  /** Keeps a block just written, and its receipts, in memory. */
  remember(stored: StoredBlock, receipts: readonly Receipt[]): void {
    const key = bytesToHex(stored.hash);
    this.#blocks.set(key, stored);
    this.#receipts.set(key, receipts);
  }

  /** Records that `hash` is now canonical at `number` (after the batch saying so is written). */
  setCanonical(number: bigint, hash: Uint8Array): void {
    this.#changes++;
    this.#canonical.set(number, hash);
    this.#records.delete(number);
  }

  /** Forgets the canonical entry at `number` (it left the canonical chain). */
  forgetCanonical(number: bigint): void {
    this.#changes++;
    this.#canonical.delete(number);
    this.#records.delete(number);
  }

  /** Forgets everything kept of a block deleted from the database. */
  forget(hash: Uint8Array): void {
    const key = bytesToHex(hash);
    this.#blocks.delete(key);
    this.#receipts.delete(key);
    this.#headers.delete(key);
  }
}

/** A block's own data, stored whether or not it is canonical: senders included. */
export function blockWrites(
  block: Block,
  hash: Uint8Array,
  totalDifficulty: bigint,
  receipts: readonly Receipt[],
): WriteOp[] {
  return [
    { type: "put", bucket: Bucket.HEADER, key: hash, value: encodeHeader(block.header) },
    { type: "put", bucket: Bucket.BODY, key: hash, value: encodeBody(block) },
    { type: "put", bucket: Bucket.SENDERS, key: hash, value: encodeSenders(block.transactions) },
    { type: "put", bucket: Bucket.RECEIPTS, key: hash, value: encodeReceiptList(receipts) },
    {
      type: "put",
      bucket: Bucket.TOTAL_DIFFICULTY,
      key: hash,
      value: bigintToBytes(totalDifficulty),
    },
  ];
}

/** Deletes what `blockWrites` wrote. */
export function blockDeletes(hash: Uint8Array): WriteOp[] {
  return [Bucket.HEADER, Bucket.BODY, Bucket.SENDERS, Bucket.RECEIPTS, Bucket.TOTAL_DIFFICULTY].map(
    (bucket) => ({ type: "del", bucket, key: hash }),
  );
}

/** The indexes of a canonical block: its number and the location of each transaction. */
export function canonicalWrites(stored: StoredBlock): WriteOp[] {
  const ops: WriteOp[] = [
    {
      type: "put",
      bucket: Bucket.CANONICAL,
      key: numberKey(stored.block.header.number),
      value: stored.hash,
    },
  ];
  stored.block.transactions.forEach((tx, i) => {
    ops.push({
      type: "put",
      bucket: Bucket.TX_LOOKUP,
      key: tx.hash,
      value: rlpEncode([stored.hash, bigintToBytes(BigInt(i))]),
    });
  });
  return ops;
}

/** Removes a block's indexes: its number (unless another block takes it) and its transactions. */
export function canonicalDeletes(stored: StoredBlock, number: boolean): WriteOp[] {
  const ops: WriteOp[] = stored.block.transactions.map((tx) => ({
    type: "del",
    bucket: Bucket.TX_LOOKUP,
    key: tx.hash,
  }));
  if (number)
    ops.push({
      type: "del",
      bucket: Bucket.CANONICAL,
      key: numberKey(stored.block.header.number),
    });
  return ops;
}

/** A block's difficulty plus its uncles': what it adds to the total difficulty of its chain. */
export function cumulativeDifficulty(block: Block): bigint {
  return block.uncles.reduce((sum, uncle) => sum + uncle.difficulty, block.header.difficulty);
}

export function numberKey(number: bigint): Uint8Array {
  const key = new Uint8Array(8);
  writeU64BE(key, 0, number);
  return key;
}
