import { ClassicLevel } from "classic-level";
import { type Bucket, bucketKey } from "./buckets.js";

export type WriteOp =
  | {
      readonly type: "put";
      readonly bucket: Bucket;
      readonly key: Uint8Array;
      readonly value: Uint8Array;
    }
  | { readonly type: "del"; readonly bucket: Bucket; readonly key: Uint8Array };

/** The node's one LevelDB database, addressed by bucket and key. */
export class Database {
  readonly #level: ClassicLevel<Uint8Array, Uint8Array>;

  private constructor(level: ClassicLevel<Uint8Array, Uint8Array>) {
    this.#level = level;
  }

  /** Opens (creating if needed) the database in `path`. */
  static async open(path: string): Promise<Database> {
    const level = new ClassicLevel<Uint8Array, Uint8Array>(path, {
      keyEncoding: "view",
      valueEncoding: "view",
    });
    await level.open();
    return new Database(level);
  }

  /**
   * Reads on the calling thread: a read served by LevelDB's block cache or the OS page cache
   * takes microseconds, less than the round trip through libuv's thread pool that an
   * asynchronous read costs.
   */
  async get(bucket: Bucket, key: Uint8Array): Promise<Uint8Array | undefined> {
    const value = this.#level.getSync(bucketKey(bucket, key));
    // LevelDB hands back Buffers; callers get plain Uint8Array views of the same memory.
    return value === undefined
      ? undefined
      : new Uint8Array(value.buffer, value.byteOffset, value.byteLength);
  }

  /**
   * Writes all `ops` atomically: after a crash of the process (`kill -9` included) either all of
   * them are there or none. The batch is in LevelDB's log before this returns; it is not forced
   * to the disk (no fsync), so a power cut may lose the last blocks but never leaves half of one.
   */
  async write(ops: readonly WriteOp[]): Promise<void> {
    if (ops.length === 0) return;
    // A chained batch hands each operation to LevelDB's write batch as it comes: a third of the
    // main thread's time of the array form, which copies and checks every operation object
    // twice (abstract-level, then the binding) before the write starts.
    const batch = this.#level.batch();
    try {
      for (const op of ops) {
        if (op.type === "put") batch.put(bucketKey(op.bucket, op.key), op.value);
        else batch.del(bucketKey(op.bucket, op.key));
      }
    } catch (err) {
      await batch.close();
      throw err;
    }
    await batch.write({ sync: false });
  }

  /**
   * The keys of `bucket` (without the bucket byte), in order, from a snapshot taken now; with
   * `range`, only those from `gte` (included) to `lt` (excluded), both without the bucket byte.
   */
  async *keys(
    bucket: Bucket,
    range: { readonly gte?: Uint8Array; readonly lt?: Uint8Array } = {},
  ): AsyncGenerator<Uint8Array> {
    const start = range.gte === undefined ? Uint8Array.of(bucket) : bucketKey(bucket, range.gte);
    const end = range.lt === undefined ? Uint8Array.of(bucket + 1) : bucketKey(bucket, range.lt);
    for await (const key of this.#level.keys({ gte: start, lt: end })) {
      yield new Uint8Array(key.buffer, key.byteOffset + 1, key.byteLength - 1);
    }
  }

  /**
   * The keys of `bucket` (without the bucket byte) from `gte` (included) to `lt` (excluded), in
   * order, at most `limit` of them, read in one go: cheaper than `keys` for short ranges.
   */
  async keyList(
    bucket: Bucket,
    range: { readonly gte: Uint8Array; readonly lt: Uint8Array; readonly limit: number },
  ): Promise<Uint8Array[]> {
    const keys = await this.#level
      .keys({
        gte: bucketKey(bucket, range.gte),
        lt: bucketKey(bucket, range.lt),
        limit: range.limit,
      })
      .all();
    return keys.map((key) => new Uint8Array(key.buffer, key.byteOffset + 1, key.byteLength - 1));
  }

  async close(): Promise<void> {
    await this.#level.close();
  }
}
