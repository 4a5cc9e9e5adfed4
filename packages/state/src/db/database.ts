import { ClassicLevel } from "classic-level";
import { StateError, StateErrorCode } from "../errors.js";
import { Bucket, bucketKey } from "./buckets.js";

export interface DatabaseOpenOptions {
  /** Let worker threads of this process open the same database (classic-level's option). */
  readonly multithreading?: boolean;
  /**
   * Faults to inject, for tests of what a failed write does: asked before each write (and each
   * probe) reaches LevelDB; an error it returns fails that write as LevelDB's would.
   */
  readonly faults?: WriteFaults;
}

/** See `Database.onReopen`. */
export interface ReopenHooks {
  beforeClose(): Promise<void>;
  afterOpen(): void;
}

/** See `DatabaseOpenOptions.faults`. */
export interface WriteFaults {
  beforeWrite(): Error | undefined;
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

/** Whether the database takes writes, and if not, why and since when. */
export interface StorageHealth {
  readonly writable: boolean;
  /** Why writes are refused: the failed write's error, or the free space below the minimum. */
  readonly reason?: string;
  /** When writes stopped (milliseconds since the epoch). */
  readonly since?: number;
}

/** Why writes are refused: a write that failed, or too little free space seen in advance. */
interface Failure {
  readonly kind: "write" | "space";
  readonly reason: string;
  readonly since: number;
}

const PROBE_KEY = new TextEncoder().encode("storageProbe");

/**
 * The node's one LevelDB database, addressed by bucket and key.
 *
 * A write's operations are readable as soon as it is issued: `get` finds them in memory until
 * LevelDB has them, so a caller can go on (make a block the head, answer a request) while the
 * batch crosses to LevelDB's thread. Writes land in the order they were issued. Key ranges
 * (`keys`, `keyList`) are read once every write issued before has landed.
 */
export class Database {
  readonly path: string;
  #level: ClassicLevel<Uint8Array, Uint8Array>;
  /** Set while the database takes no writes (see `health`). */
  #failure: Failure | undefined;
  readonly #healthListeners = new Set<(health: StorageHealth) => void>();
  /** A reopening in progress (after a failure LevelDB keeps): reads wait for it. */
  #reopening: Promise<void> | undefined;
  readonly #reopenHooks = new Set<ReopenHooks>();
  /** The operations of writes on their way, by key (`landingKey`). */
  readonly #landing = new Map<string, Landing>();
  #writes = 0;
  /** The last write issued; settles (never rejects) once it has landed or failed. */
  #lastWrite: Promise<void> = Promise.resolve();
  #inFlight = 0;
  readonly #staging = new Staging();

  readonly #openOptions: DatabaseOpenOptions;

  private constructor(
    path: string,
    level: ClassicLevel<Uint8Array, Uint8Array>,
    opts: DatabaseOpenOptions,
  ) {
    this.path = path;
    this.#level = level;
    this.#openOptions = opts;
  }

  /**
   * Opens (creating if needed) the database in `path`. With `multithreading`, worker threads of
   * this process may open the same path (with `multithreading` too) and share LevelDB's handle:
   * they read what has landed (see `landed`). Throws `StateError` (`OPEN_FAILED`) saying why in
   * an operator's terms: another process holds it, no permission, a read-only or full file
   * system, damage.
   */
  static async open(path: string, opts: DatabaseOpenOptions = {}): Promise<Database> {
    return new Database(path, await openLevel(path, opts), opts);
  }

  /** Whether writes are taken, and if not, why. */
  health(): StorageHealth {
    const failure = this.#failure;
    if (failure === undefined) return WRITABLE;
    return { writable: false, reason: failure.reason, since: failure.since };
  }

  /** Calls `listener` whenever writes stop or start again. Returns the unsubscribe function. */
  onHealthChange(listener: (health: StorageHealth) => void): () => void {
    this.#healthListeners.add(listener);
    return () => this.#healthListeners.delete(listener);
  }

  /** Throws `StateError` (`STORAGE_UNAVAILABLE`) while the database takes no writes. */
  checkWritable(): void {
    const failure = this.#failure;
    if (failure !== undefined) throw unavailable(this.path, failure.reason);
  }

  /**
   * Refuses writes in advance because free space is below the minimum (`reason` says so), or
   * lifts that refusal (`undefined`). A refusal for a failed write is lifted only by `probe`.
   */
  setLowSpace(reason: string | undefined): void {
    if (reason !== undefined) {
      if (this.#failure === undefined)
        this.#setFailure({ kind: "space", reason, since: Date.now() });
    } else if (this.#failure?.kind === "space") {
      this.#setFailure(undefined);
    }
  }

  /**
   * After a failed write: writes a small value to see whether the database takes writes again;
   * when LevelDB keeps failing (an error it holds on to, as after a failed compaction), closes
   * and reopens it once. Lifts the refusal and returns `true` when the write lands.
   */
  async probe(opts: { reopen?: boolean } = {}): Promise<boolean> {
    if (this.#failure?.kind !== "write") return this.#failure === undefined;
    const value = new TextEncoder().encode(String(Date.now()));
    const attempt = async () => {
      await this.#lastWrite;
      const fault = this.#openOptions.faults?.beforeWrite();
      if (fault !== undefined) throw fault;
      await this.#level.put(bucketKey(Bucket.META, PROBE_KEY), value, { sync: true });
    };
    try {
      await attempt();
    } catch {
      // Reopening closes the handle reads use: only with room to open again (`reopen`).
      if (opts.reopen === false) return false;
      try {
        await this.#reopen();
        await attempt();
      } catch {
        return false;
      }
    }
    this.#setFailure(undefined);
    return true;
  }

  /**
   * Other holders of LevelDB's handle (worker threads that opened the same path): LevelDB keeps
   * a failure for as long as any handle is open, so a reopening asks them to close theirs first
   * (`beforeClose`) and open again after (`afterOpen`). Returns the unsubscribe function.
   */
  onReopen(hooks: ReopenHooks): () => void {
    this.#reopenHooks.add(hooks);
    return () => this.#reopenHooks.delete(hooks);
  }

  async #reopen(): Promise<void> {
    const reopening = (async () => {
      const hooks = [...this.#reopenHooks];
      await Promise.all(hooks.map((h) => h.beforeClose().catch(() => {})));
      try {
        await this.#level.close().catch(() => {});
        this.#level = await openLevel(this.path, this.#openOptions);
      } finally {
        for (const h of hooks) h.afterOpen();
      }
    })();
    this.#reopening = reopening;
    try {
      await reopening;
    } finally {
      if (this.#reopening === reopening) this.#reopening = undefined;
    }
  }

  #setFailure(failure: Failure | undefined): void {
    this.#failure = failure;
    const health = this.health();
    for (const listener of this.#healthListeners) {
      try {
        listener(health);
      } catch {}
    }
  }

  /**
   * A write of the node's beside the database failed (the txpool journal, on the same disk):
   * the database refuses writes too, until a probe lands.
   */
  reportWriteFailure(err: unknown): void {
    this.#writeFailed(err);
  }

  #writeFailed(err: unknown): StateError {
    const reason = describeWriteError(err);
    if (this.#failure?.kind !== "write")
      this.#setFailure({ kind: "write", reason, since: Date.now() });
    return unavailable(this.path, reason, err);
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
    if (this.#reopening !== undefined) await this.#reopening;
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
    this.checkWritable();
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
    const faults = this.#openOptions.faults;
    const issue =
      faults === undefined
        ? () => batch.write({ sync: false })
        : () => {
            const fault = faults.beforeWrite();
            return fault === undefined
              ? batch.write({ sync: false })
              : batch.close().then(() => Promise.reject(fault));
          };
    const landed = this.#inFlight === 0 ? issue() : this.#lastWrite.then(issue);
    this.#inFlight++;
    this.#lastWrite = landed.then(
      () => this.#landed(keys, write),
      () => this.#landed(keys, write),
    );
    try {
      await landed;
    } catch (err) {
      throw this.#writeFailed(err);
    }
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
    if (this.#reopening !== undefined) await this.#reopening;
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
    if (this.#reopening !== undefined) await this.#reopening;
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
    if (this.#reopening !== undefined) await this.#reopening.catch(() => {});
    await this.#level.close();
  }
}

const WRITABLE: StorageHealth = Object.freeze({ writable: true });

async function openLevel(
  path: string,
  opts: DatabaseOpenOptions,
): Promise<ClassicLevel<Uint8Array, Uint8Array>> {
  const level = new ClassicLevel<Uint8Array, Uint8Array>(path, {
    keyEncoding: "view",
    valueEncoding: "view",
  });
  try {
    await level.open({ multithreading: opts.multithreading ?? false });
  } catch (err) {
    throw new StateError(
      StateErrorCode.OPEN_FAILED,
      `cannot open the database in ${path}: ${describeOpenError(err)}`,
      { path, locked: isLocked(err) },
      { cause: err },
    );
  }
  return level;
}

/** Whether another holder has the database (abstract-level wraps LevelDB's error as a cause). */
function isLocked(err: unknown): boolean {
  const cause = (err as { cause?: { code?: unknown } }).cause;
  return (err as { code?: unknown }).code === "LEVEL_LOCKED" || cause?.code === "LEVEL_LOCKED";
}

/** LevelDB's reason for a failed open (abstract-level wraps it as the error's cause). */
function describeOpenError(err: unknown): string {
  const cause = (err as { cause?: { code?: unknown; message?: unknown } }).cause;
  if (isLocked(err)) return "in use by another process (a running node?)";
  const text = typeof cause?.message === "string" ? cause.message : (err as Error).message;
  if (/permission denied/i.test(text)) return `permission denied (${text})`;
  if (/read-only file system/i.test(text)) return `the file system is read-only (${text})`;
  if (/no space left/i.test(text)) return `no space left on the device (${text})`;
  if (/corrupt/i.test(text)) return `the database is damaged (${text})`;
  return text;
}

/** LevelDB's reason for a failed write, in an operator's terms. */
function describeWriteError(err: unknown): string {
  const cause = (err as { cause?: { message?: unknown } }).cause;
  const text = typeof cause?.message === "string" ? cause.message : String((err as Error).message);
  if (/no space left/i.test(text)) return `no space left on the device (${text})`;
  return `a write failed (${text})`;
}

function unavailable(path: string, reason: string, cause?: unknown): StateError {
  return new StateError(
    StateErrorCode.STORAGE_UNAVAILABLE,
    `the node's storage takes no writes: ${reason}; database ${path}`,
    { path },
    ...(cause === undefined ? [] : [{ cause }]),
  );
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
