import { ClassicLevel } from "classic-level";
import { type Bucket, bucketKey } from "./buckets.js";

export interface DatabaseOpenOptions {
  /** Let worker threads of this process open the same database (classic-level's option). */
  readonly multithreading?: boolean;
}

export type WriteOp =
  | {
      readonly type: "put";
      readonly bucket: Bucket;
      readonly key: Uint8Array;
      readonly value: Uint8Array;
    }
  | { readonly type: "del"; readonly bucket: Bucket; readonly key: Uint8Array };

/** An operation of a write issued and not yet done: the value it puts, or none (a delete). */
interface Landing {
  readonly value: Uint8Array | undefined;
  /** Which write: a later write of the same key replaces the entry. */
  readonly write: number;
}

/**
 * The node's one LevelDB database, addressed by bucket and key.
 *
 * A write's operations are readable as soon as it is issued: `get` finds them in memory until
 * LevelDB has them, so a caller can go on (make a block the head, answer a request) while the
 * batch crosses to LevelDB's thread. Writes land in the order they were issued. Key ranges
 * (`keys`, `keyList`) are read once every write issued before has landed.
 */
export class Database {
  readonly #level: ClassicLevel<Uint8Array, Uint8Array>;
  /** The operations of writes on their way, by key (`landingKey`). */
  readonly #landing = new Map<string, Landing>();
  #writes = 0;
  /** The last write issued; settles (never rejects) once it has landed or failed. */
  #lastWrite: Promise<void> = Promise.resolve();
  #inFlight = 0;
  readonly #staging = new Staging();

  private constructor(level: ClassicLevel<Uint8Array, Uint8Array>) {
    this.#level = level;
  }

  /**
   * Opens (creating if needed) the database in `path`. With `multithreading`, worker threads of
   * this process may open the same path (with `multithreading` too) and share LevelDB's handle:
   * they read what has landed (see `landed`).
   */
  static async open(path: string, opts: DatabaseOpenOptions = {}): Promise<Database> {
    const level = new ClassicLevel<Uint8Array, Uint8Array>(path, {
      keyEncoding: "view",
      valueEncoding: "view",
    });
    await level.open({ multithreading: opts.multithreading ?? false });
    return new Database(level);
  }

  /**
   * Settles (never rejects) once every write issued so far has landed in LevelDB or failed:
   * from then on another thread reading the same database sees them.
   */
  landed(): Promise<void> {
    return this.#inFlight === 0 ? Promise.resolve() : this.#lastWrite;
  }

  /**
   * Reads on the calling thread: a read served by LevelDB's block cache or the OS page cache
   * takes microseconds, less than the round trip through libuv's thread pool that an
   * asynchronous read costs.
   */
  async get(bucket: Bucket, key: Uint8Array): Promise<Uint8Array | undefined> {
    const full = this.#staging.key(bucket, key);
    if (this.#inFlight > 0) {
      const landing = this.#landing.get(landingKey(full));
      if (landing !== undefined) return landing.value;
    }
    const value = this.#level.getSync(full);
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
    const write = ++this.#writes;
    const keys: string[] = [];
    try {
      for (const op of ops) {
        const key = this.#staging.key(op.bucket, op.key);
        if (op.type === "put") batch.put(key, this.#staging.value(key, op.value));
        else batch.del(key);
        keys.push(landingKey(key));
      }
    } catch (err) {
      await batch.close();
      throw err;
    }
    for (let i = 0; i < ops.length; i++) {
      const op = ops[i]!;
      this.#landing.set(keys[i]!, { value: op.type === "put" ? op.value : undefined, write });
    }
    // In the order issued: after the writes still on their way, or at once.
    const landed =
      this.#inFlight === 0
        ? batch.write({ sync: false })
        : this.#lastWrite.then(() => batch.write({ sync: false }));
    this.#inFlight++;
    this.#lastWrite = landed.then(
      () => this.#landed(keys, write),
      () => this.#landed(keys, write),
    );
    await landed;
  }

  #landed(keys: readonly string[], write: number): void {
    this.#inFlight--;
    for (const key of keys) if (this.#landing.get(key)?.write === write) this.#landing.delete(key);
  }

  /**
   * The keys of `bucket` (without the bucket byte), in order, from a snapshot taken now; with
   * `range`, only those from `gte` (included) to `lt` (excluded), both without the bucket byte.
   */
  async *keys(
    bucket: Bucket,
    range: { readonly gte?: Uint8Array; readonly lt?: Uint8Array } = {},
  ): AsyncGenerator<Uint8Array> {
    await this.#lastWrite;
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
    await this.#lastWrite;
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
    await this.#lastWrite;
    await this.#level.close();
  }
}

/**
 * Where keys and short values are put together for LevelDB's binding, which copies them during
 * the call (`getSync`, a batch's `put` and `del`). V8 keeps a typed array of 64 bytes or fewer
 * inside its object, and the first time native code asks for its memory moves it out to a
 * buffer of its own (a `malloc`, and bookkeeping the GC sweeps later): every database key and
 * every hash-sized value went through that once. Views of one buffer allocated outside the heap
 * do not. A view is good until the next call.
 */
class Staging {
  /** Past V8's 64 bytes: allocated outside the heap. */
  readonly #buffer = new Uint8Array(new ArrayBuffer(1024));

  /** The bucket byte and `key`, as a view of the buffer's start. */
  key(bucket: Bucket, key: Uint8Array): Uint8Array {
    const length = key.length + 1;
    if (length > this.#buffer.length / 2) return bucketKey(bucket, key);
    const buffer = this.#buffer;
    buffer[0] = bucket;
    buffer.set(key, 1);
    return buffer.subarray(0, length);
  }

  /** `value`, copied beside `key` (a view `key` returned) when it is as short as a key. */
  value(key: Uint8Array, value: Uint8Array): Uint8Array {
    if (value.length > SHORT_VALUE || key.buffer !== this.#buffer.buffer) return value;
    const at = key.length;
    this.#buffer.set(value, at);
    return this.#buffer.subarray(at, at + value.length);
  }
}

/** Values up to this length are copied into the staging buffer (V8 keeps them in its heap). */
const SHORT_VALUE = 64;

/** A database key as a string, for the map of operations on their way. */
function landingKey(key: Uint8Array): string {
  return Buffer.from(key.buffer, key.byteOffset, key.byteLength).toString("latin1");
}
