import { createHash, randomBytes } from "node:crypto";
import {
  closeSync,
  fsyncSync,
  openSync,
  readFileSync,
  renameSync,
  statSync,
  unlinkSync,
  type WatchListener,
  watch,
  writeFileSync,
} from "node:fs";
import { basename, dirname, join } from "node:path";
import type { Logger } from "@nodex/types";

/**
 * API keys of a hosted node. A key is shown once, when it is made; the node and its files keep
 * only its SHA-256 digest, with an id that logs, `keys list` and `CallContext.keyId` use.
 */

/** The form of an API key as it appears in a request path. */
export const API_KEY_PATTERN = /^[A-Za-z0-9_-]{8,128}$/;

/** What a key may do, besides being a key. Absent fields: no limit, no list. */
export interface KeyPolicy {
  /** Token bucket: units per second (and the bucket holds one second's worth). */
  readonly rate?: number;
  /** Units per UTC day. */
  readonly daily?: number;
  /** Allow list: modules (`eth`) or methods (`eth_call`); absent means every served method. */
  readonly methods?: readonly string[];
  /** Deny list: modules or methods refused to this key. */
  readonly deny?: readonly string[];
  /** What hosted mode turns off that this key may call anyway (modules or methods). */
  readonly allow?: readonly string[];
}

/** One key as stored: never the key itself. */
export interface ApiKeyRecord extends KeyPolicy {
  readonly id: string;
  readonly name: string;
  /** SHA-256 of the key, lowercase hex. */
  readonly sha256: string;
  /** ISO 8601 time of creation. */
  readonly created: string;
  /** ISO 8601 time of revocation; a revoked key is refused (401). */
  readonly revoked?: string;
}

/**
 * Where the node looks keys up. The embedded implementations read files in the datadir; another
 * (a shared database) implements the same two calls, answering `find` from memory: it runs for
 * every request.
 */
export interface KeyStore {
  /** The record of the key with this SHA-256 digest (hex), revoked ones included. */
  find(sha256: string): ApiKeyRecord | undefined;
  /** Keys not revoked. */
  active(): number;
  /** Stops watching for changes. */
  close(): void;
  /**
   * Why the store cannot vouch for its keys now (a shared registry not read for too long), or
   * `undefined`. While set, `find` knows none of its keys: a request with one is refused (503).
   */
  unavailable?(): string | undefined;
}

/** The digest keys are stored and compared by. */
export function hashKey(key: string): string {
  return createHash("sha256").update(key).digest("hex");
}

/** A new key: 192 random bits, URL-safe, with a prefix that says what it is. */
export function newApiKey(): string {
  return `nx_${randomBytes(24).toString("base64url")}`;
}

/** A new key id: short, random, and nothing of the key. */
export function newKeyId(): string {
  return `key_${randomBytes(6).toString("hex")}`;
}

/** Keys given as they are (`--api-key`), replaced as a whole on reload. */
export class StaticKeyStore implements KeyStore {
  #records = new Map<string, ApiKeyRecord>();

  constructor(keys: readonly string[], prefix = "static") {
    this.set(keys, prefix);
  }

  set(keys: readonly string[], prefix = "static"): void {
    const records = new Map<string, ApiKeyRecord>();
    for (const key of keys) {
      const sha256 = hashKey(key);
      records.set(sha256, {
        id: `${prefix}-${sha256.slice(0, 12)}`,
        name: prefix,
        sha256,
        created: "",
      });
    }
    this.#records = records;
  }

  find(sha256: string): ApiKeyRecord | undefined {
    return this.#records.get(sha256);
  }

  active(): number {
    return this.#records.size;
  }

  close(): void {}
}

/** Several stores as one: the first that knows a digest answers. */
export class CombinedKeyStore implements KeyStore {
  readonly #stores: readonly KeyStore[];

  constructor(stores: readonly KeyStore[]) {
    this.#stores = stores;
  }

  find(sha256: string): ApiKeyRecord | undefined {
    for (const store of this.#stores) {
      const found = store.find(sha256);
      if (found !== undefined) return found;
    }
    return undefined;
  }

  active(): number {
    let n = 0;
    for (const store of this.#stores) n += store.active();
    return n;
  }

  unavailable(): string | undefined {
    for (const store of this.#stores) {
      const why = store.unavailable?.();
      if (why !== undefined) return why;
    }
    return undefined;
  }

  close(): void {
    for (const store of this.#stores) store.close();
  }
}

/** A key file or registry the node refuses: the message says where and why (never a key). */
export class KeyFileError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "KeyFileError";
  }
}

/** The registry file: `{"version":1,"keys":[ApiKeyRecord…]}`. */
export interface KeyRegistry {
  readonly version: 1;
  readonly keys: readonly ApiKeyRecord[];
}

const ID = /^[A-Za-z0-9_-]{1,64}$/;
const SHA256 = /^[0-9a-f]{64}$/;
const ENTRY = /^[a-z0-9]+(_[A-Za-z0-9]+)?$/;

function positive(value: unknown, where: string): number | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "number" || !Number.isSafeInteger(value) || value <= 0)
    throw new KeyFileError(`${where} must be a positive integer`);
  return value;
}

function names(value: unknown, where: string): readonly string[] | undefined {
  if (value === undefined || value === null) return undefined;
  if (!Array.isArray(value) || value.some((v) => typeof v !== "string" || !ENTRY.test(v)))
    throw new KeyFileError(`${where} must be a list of module or method names`);
  return Object.freeze([...(value as string[])]);
}

/** Reads a registry's text, checking every field; throws `KeyFileError` with the reason. */
export function parseKeyRegistry(text: string, path: string): KeyRegistry {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw new KeyFileError(`${path} is not valid JSON: ${(err as Error).message}`);
  }
  if (typeof raw !== "object" || raw === null || Array.isArray(raw))
    throw new KeyFileError(`${path} must hold a JSON object {"version":1,"keys":[…]}`);
  const obj = raw as Record<string, unknown>;
  if (obj.version !== 1) throw new KeyFileError(`${path}: version must be 1`);
  if (!Array.isArray(obj.keys)) throw new KeyFileError(`${path}: keys must be a list`);
  const ids = new Set<string>();
  const keys = obj.keys.map((entry: unknown, i: number): ApiKeyRecord => {
    const where = `${path}: keys[${i}]`;
    if (typeof entry !== "object" || entry === null || Array.isArray(entry))
      throw new KeyFileError(`${where} must be an object`);
    const e = entry as Record<string, unknown>;
    if (typeof e.id !== "string" || !ID.test(e.id))
      throw new KeyFileError(`${where}.id must be 1-64 characters of A-Z, a-z, 0-9, _ and -`);
    if (ids.has(e.id)) throw new KeyFileError(`${where}.id ${e.id} is used twice`);
    ids.add(e.id);
    if (typeof e.sha256 !== "string" || !SHA256.test(e.sha256))
      throw new KeyFileError(`${where}.sha256 must be 64 lowercase hex digits`);
    const name = e.name ?? "";
    if (typeof name !== "string" || name.length > 200)
      throw new KeyFileError(`${where}.name must be a string of at most 200 characters`);
    const created = e.created ?? "";
    if (typeof created !== "string") throw new KeyFileError(`${where}.created must be a string`);
    if (e.revoked !== undefined && e.revoked !== null && typeof e.revoked !== "string")
      throw new KeyFileError(`${where}.revoked must be a time or null`);
    const rate = positive(e.rate, `${where}.rate`);
    const daily = positive(e.daily, `${where}.daily`);
    const methods = names(e.methods, `${where}.methods`);
    const deny = names(e.deny, `${where}.deny`);
    const allow = names(e.allow, `${where}.allow`);
    return Object.freeze({
      id: e.id,
      name,
      sha256: e.sha256,
      created,
      ...(typeof e.revoked === "string" ? { revoked: e.revoked } : {}),
      ...(rate === undefined ? {} : { rate }),
      ...(daily === undefined ? {} : { daily }),
      ...(methods === undefined ? {} : { methods }),
      ...(deny === undefined ? {} : { deny }),
      ...(allow === undefined ? {} : { allow }),
    });
  });
  return { version: 1, keys };
}

/**
 * A key file provisioned by a deployment tool (`--api-key-file`): the registry's JSON form, or
 * one key per line (blank lines and lines starting with `#` skipped). Keys of the plain form
 * get the id `file-<first 12 hex digits of their digest>`.
 */
export function parseKeyFile(text: string, path: string): KeyRegistry {
  if (text.trimStart().startsWith("{")) return parseKeyRegistry(text, path);
  const keys: ApiKeyRecord[] = [];
  const seen = new Set<string>();
  text.split(/\r?\n/).forEach((line, i) => {
    const key = line.trim();
    if (key === "" || key.startsWith("#")) return;
    if (!API_KEY_PATTERN.test(key))
      throw new KeyFileError(
        `${path}:${i + 1}: an API key is 8-128 characters of A-Z, a-z, 0-9, _ and -`,
      );
    const sha256 = hashKey(key);
    if (seen.has(sha256)) return;
    seen.add(sha256);
    keys.push({ id: `file-${sha256.slice(0, 12)}`, name: basename(path), sha256, created: "" });
  });
  return { version: 1, keys };
}

/** Reads a registry; a missing file is an empty registry. */
export function readKeyRegistry(path: string): KeyRegistry {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return { version: 1, keys: [] };
    throw new KeyFileError(`cannot read ${path}: ${(err as Error).message}`);
  }
  return parseKeyRegistry(text, path);
}

/** Writes a file atomically: a temp file, fsync, rename over the old one, fsync the directory. */
export function writeFileAtomic(path: string, text: string): void {
  const temp = `${path}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`;
  const fd = openSync(temp, "w", 0o600);
  try {
    writeFileSync(fd, text);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  try {
    renameSync(temp, path);
  } catch (err) {
    try {
      unlinkSync(temp);
    } catch {}
    throw err;
  }
  const dir = openSync(dirname(path), "r");
  try {
    fsyncSync(dir);
  } finally {
    closeSync(dir);
  }
}

const LOCK_WAIT_MS = 10_000;

/**
 * Changes the registry under its lock file (`<path>.lock`, made with O_EXCL), so that two
 * writers cannot lose each other's changes: reads it, applies `change`, writes it atomically.
 * A lock whose process is gone is taken over.
 */
export function updateKeyRegistry<T>(
  path: string,
  change: (registry: KeyRegistry) => { registry: KeyRegistry; result: T },
): T {
  const lock = `${path}.lock`;
  const until = Date.now() + LOCK_WAIT_MS;
  for (;;) {
    try {
      const fd = openSync(lock, "wx", 0o600);
      writeFileSync(fd, String(process.pid));
      closeSync(fd);
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
      if (staleLock(lock)) {
        try {
          unlinkSync(lock);
        } catch {}
        continue;
      }
      if (Date.now() > until)
        throw new KeyFileError(
          `${lock} is held by another process; remove it if no nodex keys command runs`,
        );
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 5 + Math.random() * 20);
    }
  }
  try {
    const { registry, result } = change(readKeyRegistry(path));
    writeFileAtomic(path, `${JSON.stringify(registry, null, 2)}\n`);
    return result;
  } finally {
    try {
      unlinkSync(lock);
    } catch {}
  }
}

function staleLock(lock: string): boolean {
  let pid: number;
  try {
    pid = Number(readFileSync(lock, "utf8"));
  } catch {
    return false;
  }
  // An empty lock: its writer is between creating it and writing its pid.
  if (!Number.isSafeInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return false;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "ESRCH";
  }
}

/** How often a watched file's metadata is read, in case `fs.watch` misses a change. */
export const KEY_FILE_POLL_MS = 250;
/** How long a changed file must stay the same before it is read. */
const SETTLE_MS = 100;

/**
 * A key file the node follows while it runs: read at start (`load` throws when it is bad),
 * then again whenever it changes (`fs.watch`, and a stat every `KEY_FILE_POLL_MS` as fallback).
 * A change that cannot be read is logged and the last good keys stay.
 */
export class WatchedKeyFile implements KeyStore {
  readonly path: string;
  readonly #parse: (text: string, path: string) => KeyRegistry;
  readonly #log: Logger;
  /** Whether a missing file is an empty one (the registry) or an error (a provisioned file). */
  readonly #optional: boolean;
  #byDigest = new Map<string, ApiKeyRecord>();
  #active = 0;
  #stamp = "";
  /** A change seen and not read yet: read once it has stayed the same for `SETTLE_MS`. */
  #seen = "";
  #settle: NodeJS.Timeout | undefined;
  #timer: NodeJS.Timeout | undefined;
  #watcher: ReturnType<typeof watch> | undefined;

  constructor(
    path: string,
    opts: {
      parse: (text: string, path: string) => KeyRegistry;
      logger: Logger;
      optional: boolean;
    },
  ) {
    this.path = path;
    this.#parse = opts.parse;
    this.#log = opts.logger;
    this.#optional = opts.optional;
  }

  /** First read: throws `KeyFileError` when the file is bad. */
  load(): this {
    this.#read(true);
    return this;
  }

  /** Follows the file from now on. */
  watch(): this {
    const onChange: WatchListener<string> = (_event, name) => {
      if (name === null || name === basename(this.path)) this.#check();
    };
    try {
      // The directory, not the file: a rename replaces the file, and the registry may not exist yet.
      this.#watcher = watch(dirname(this.path), { persistent: false }, onChange);
      this.#watcher.on("error", () => {});
    } catch {}
    this.#timer = setInterval(() => this.#check(), KEY_FILE_POLL_MS);
    this.#timer.unref();
    return this;
  }

  find(sha256: string): ApiKeyRecord | undefined {
    return this.#byDigest.get(sha256);
  }

  active(): number {
    return this.#active;
  }

  records(): readonly ApiKeyRecord[] {
    return [...this.#byDigest.values()];
  }

  close(): void {
    clearInterval(this.#timer);
    clearTimeout(this.#settle);
    this.#watcher?.close();
  }

  /**
   * A file written in place (not renamed over) is seen half written: a change is read once the
   * file has stayed the same for `SETTLE_MS`, so that a half-written file never replaces the keys.
   */
  #check(): void {
    const stamp = stampOf(this.path);
    if (stamp === this.#stamp) return;
    if (stamp !== this.#seen) {
      this.#seen = stamp;
      clearTimeout(this.#settle);
      this.#settle = setTimeout(() => this.#check(), SETTLE_MS);
      this.#settle.unref();
      return;
    }
    this.#read(false);
  }

  #read(first: boolean): void {
    const stamp = stampOf(this.path);
    let registry: KeyRegistry;
    try {
      let text: string;
      try {
        text = readFileSync(this.path, "utf8");
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== "ENOENT" || !this.#optional)
          throw new KeyFileError(`cannot read ${this.path}: ${(err as Error).message}`);
        text = "";
      }
      registry =
        text === "" && this.#optional ? { version: 1, keys: [] } : this.#parse(text, this.path);
    } catch (err) {
      if (first) throw err;
      // Not retried until the file changes again.
      this.#stamp = stamp;
      this.#log.warn("API key file not reloaded: keeping the keys read before", {
        path: this.path,
        reason: (err as Error).message,
      });
      return;
    }
    const byDigest = new Map<string, ApiKeyRecord>();
    for (const record of registry.keys) byDigest.set(record.sha256, record);
    this.#byDigest = byDigest;
    this.#active = registry.keys.filter((k) => k.revoked === undefined).length;
    this.#stamp = stamp;
    if (!first) this.#log.info("API keys reloaded", { path: this.path, active: this.#active });
  }
}

function stampOf(path: string): string {
  try {
    const s = statSync(path, { bigint: true });
    return `${s.ino}:${s.size}:${s.mtimeNs}:${s.ctimeNs}`;
  } catch {
    return "missing";
  }
}

/** The registry `nodex keys` writes, in a node's datadir. */
export function keyRegistryPath(datadir: string): string {
  return join(datadir, "api-keys.json");
}

/** The usage the node writes for `nodex keys list`, in a node's datadir. */
export function keyUsagePath(datadir: string): string {
  return join(datadir, "api-keys-usage.json");
}
