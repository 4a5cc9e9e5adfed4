import {
  createCipheriv,
  createDecipheriv,
  pbkdf2,
  randomBytes,
  randomUUID,
  scrypt,
  timingSafeEqual,
} from "node:crypto";
import { mkdir, open, readdir, readFile, rename, rm } from "node:fs/promises";
import { join } from "node:path";
import {
  type Address,
  bytesToUnprefixedHex,
  equalBytes,
  hexToBytes,
  keccak256,
  type Logger,
  NodexError,
  privateKeyToAddress,
} from "@nodex/types";

/** How hard the key-derivation function works when a key file is written. */
export type KeystoreKdf = "standard" | "light";
export const KEYSTORE_KDFS: readonly KeystoreKdf[] = ["standard", "light"];

/** scrypt parameters of written files: geth's standard ones, and its `--lightkdf` ones. */
export const SCRYPT_PARAMS: Readonly<Record<KeystoreKdf, { n: number; r: number; p: number }>> = {
  standard: { n: 262_144, r: 8, p: 1 },
  light: { n: 4096, r: 8, p: 6 },
};

export const KeystoreErrorCode = {
  /** The MAC does not match: the passphrase is wrong (or the ciphertext altered). */
  WRONG_PASSPHRASE: "KEYSTORE_WRONG_PASSPHRASE",
  /** Not a v3 key file this node can read. */
  INVALID_FILE: "KEYSTORE_INVALID_FILE",
} as const;
export type KeystoreErrorCode = (typeof KeystoreErrorCode)[keyof typeof KeystoreErrorCode];

/** A key file that can't be used; the message names no key and no passphrase. */
export class KeystoreError extends NodexError<KeystoreErrorCode> {
  constructor(code: KeystoreErrorCode, message: string, meta: Record<string, unknown> = {}) {
    super(code, message, meta);
    this.name = "KeystoreError";
  }
}

/** A Web3 Secret Storage (version 3) key file, as geth, ethers and web3.js write it. */
export interface KeyFileJson {
  readonly address: string;
  readonly id: string;
  readonly version: 3;
  readonly crypto: {
    readonly cipher: "aes-128-ctr";
    readonly ciphertext: string;
    readonly cipherparams: { readonly iv: string };
    readonly kdf: "scrypt";
    readonly kdfparams: {
      readonly dklen: number;
      readonly n: number;
      readonly r: number;
      readonly p: number;
      readonly salt: string;
    };
    readonly mac: string;
  };
}

/** Largest scrypt cost accepted from a file (2^20, 1 GiB with r = 8), so a file can't exhaust memory. */
const MAX_SCRYPT_MEMORY = 1024 * 1024 * 1024;
const MAX_PBKDF2_ROUNDS = 10_000_000;

/** Passphrases as UTF-8 of their NFKC form, as ethers derives them (the same bytes for ASCII). */
function passphraseBytes(passphrase: string): Buffer {
  return Buffer.from(passphrase.normalize("NFKC"), "utf8");
}

function scryptAsync(
  password: Buffer,
  salt: Uint8Array,
  params: { n: number; r: number; p: number; dklen: number },
): Promise<Buffer> {
  const memory = 128 * params.n * params.r;
  return new Promise((resolve, reject) =>
    scrypt(
      password,
      salt,
      params.dklen,
      { N: params.n, r: params.r, p: params.p, maxmem: memory * 2 + 32 * 1024 * 1024 },
      (err, key) => (err === null ? resolve(key) : reject(err)),
    ),
  );
}

function mac(derived: Uint8Array, ciphertext: Uint8Array): Uint8Array {
  const joined = new Uint8Array(16 + ciphertext.length);
  joined.set(derived.subarray(16, 32));
  joined.set(ciphertext, 16);
  return keccak256(joined);
}

function aes128ctr(key: Uint8Array, iv: Uint8Array, data: Uint8Array, encrypt: boolean): Buffer {
  const cipher = encrypt
    ? createCipheriv("aes-128-ctr", key, iv)
    : createDecipheriv("aes-128-ctr", key, iv);
  return Buffer.concat([cipher.update(data), cipher.final()]);
}

/** Encrypts `privateKey` into a v3 key file (scrypt, AES-128-CTR, keccak256 MAC). */
export async function encryptKey(
  privateKey: Uint8Array,
  passphrase: string,
  kdf: KeystoreKdf,
): Promise<KeyFileJson> {
  const salt = randomBytes(32);
  const iv = randomBytes(16);
  const params = { ...SCRYPT_PARAMS[kdf], dklen: 32 };
  const derived = await scryptAsync(passphraseBytes(passphrase), salt, params);
  try {
    const ciphertext = aes128ctr(derived.subarray(0, 16), iv, privateKey, true);
    return {
      address: bytesToUnprefixedHex(privateKeyToAddress(privateKey)),
      id: randomUUID(),
      version: 3,
      crypto: {
        cipher: "aes-128-ctr",
        ciphertext: bytesToUnprefixedHex(ciphertext),
        cipherparams: { iv: bytesToUnprefixedHex(iv) },
        kdf: "scrypt",
        kdfparams: {
          dklen: 32,
          n: params.n,
          r: params.r,
          p: params.p,
          salt: bytesToUnprefixedHex(salt),
        },
        mac: bytesToUnprefixedHex(mac(derived, ciphertext)),
      },
    };
  } finally {
    derived.fill(0);
  }
}

function invalid(why: string): KeystoreError {
  return new KeystoreError(KeystoreErrorCode.INVALID_FILE, `invalid key file: ${why}`);
}

function field(o: unknown, name: string): unknown {
  return typeof o === "object" && o !== null ? (o as Record<string, unknown>)[name] : undefined;
}

function hexField(o: unknown, name: string, size?: number): Uint8Array {
  const text = field(o, name);
  if (typeof text !== "string" || !/^(0x)?([0-9a-fA-F]{2})*$/.test(text))
    throw invalid(`${name} is not hex`);
  const bytes = hexToBytes(text);
  if (size !== undefined && bytes.length !== size) throw invalid(`${name} is not ${size} bytes`);
  return bytes;
}

function intField(o: unknown, name: string, min: number, max: number): number {
  const n = field(o, name);
  if (typeof n !== "number" || !Number.isSafeInteger(n) || n < min || n > max)
    throw invalid(`${name} is out of range`);
  return n;
}

/** The address a key file declares, without decrypting it; throws when it is not a v3 file. */
export function keyFileAddress(json: unknown): Address {
  if (field(json, "version") !== 3) throw invalid("not version 3");
  cryptoOf(json);
  return hexField(json, "address", 20) as Address;
}

function cryptoOf(json: unknown): Record<string, unknown> {
  // ethers writes `Crypto`, geth and web3.js `crypto`.
  const crypto = field(json, "crypto") ?? field(json, "Crypto");
  if (typeof crypto !== "object" || crypto === null) throw invalid("no crypto section");
  return crypto as Record<string, unknown>;
}

async function deriveKey(crypto: Record<string, unknown>, passphrase: string): Promise<Buffer> {
  const params = crypto.kdfparams;
  const salt = hexField(params, "salt");
  const dklen = intField(params, "dklen", 32, 64);
  if (crypto.kdf === "scrypt") {
    const n = intField(params, "n", 2, 1 << 24);
    const r = intField(params, "r", 1, 64);
    const p = intField(params, "p", 1, 64);
    if ((n & (n - 1)) !== 0) throw invalid("scrypt n is not a power of two");
    if (128 * n * r > MAX_SCRYPT_MEMORY || p * r > 1024)
      throw invalid("scrypt parameters too costly");
    return scryptAsync(passphraseBytes(passphrase), salt, { n, r, p, dklen });
  }
  if (crypto.kdf === "pbkdf2") {
    const c = intField(params, "c", 1, MAX_PBKDF2_ROUNDS);
    if (field(params, "prf") !== "hmac-sha256") throw invalid("pbkdf2 prf is not hmac-sha256");
    return new Promise((resolve, reject) =>
      pbkdf2(passphraseBytes(passphrase), salt, c, dklen, "sha256", (err, key) =>
        err === null ? resolve(key) : reject(err),
      ),
    );
  }
  throw invalid("kdf is neither scrypt nor pbkdf2");
}

/**
 * Decrypts a v3 key file. A wrong passphrase (MAC mismatch) and a malformed file are
 * `KeystoreError`s; a file whose key does not match its address is malformed.
 */
export async function decryptKey(json: unknown, passphrase: string): Promise<Uint8Array> {
  const address = keyFileAddress(json);
  const crypto = cryptoOf(json);
  if (crypto.cipher !== "aes-128-ctr") throw invalid("cipher is not aes-128-ctr");
  const iv = hexField(crypto.cipherparams, "iv", 16);
  const ciphertext = hexField(crypto, "ciphertext", 32);
  const expected = hexField(crypto, "mac", 32);
  const derived = await deriveKey(crypto, passphrase);
  try {
    if (!timingSafeEqual(mac(derived, ciphertext), expected)) {
      throw new KeystoreError(
        KeystoreErrorCode.WRONG_PASSPHRASE,
        "could not decrypt key with given passphrase",
      );
    }
    const key = new Uint8Array(aes128ctr(derived.subarray(0, 16), iv, ciphertext, false));
    let derivedAddress: Address;
    try {
      derivedAddress = privateKeyToAddress(key);
    } catch {
      throw invalid("the key is not a valid secp256k1 key");
    }
    if (!equalBytes(derivedAddress, address)) {
      key.fill(0);
      throw invalid("the key does not match the address");
    }
    return key;
  } finally {
    derived.fill(0);
  }
}

/** geth's key file name: `UTC--<ISO time with - for :>--<address without 0x>`. */
export function keyFileName(address: Address, at: Date): string {
  return `UTC--${at.toISOString().replace(/:/g, "-")}--${bytesToUnprefixedHex(address)}`;
}

/** A key file found in the keystore directory. */
export interface KeyFileEntry {
  readonly address: Address;
  readonly path: string;
}

export interface KeystoreOptions {
  /** `<datadir>/keystore`. */
  readonly dir: string;
  readonly kdf: KeystoreKdf;
}

/**
 * The key files of `<datadir>/keystore`, one per account, in the Web3 Secret Storage v3
 * format. Files are written atomically (temp file, then rename) with mode 0600.
 */
export class Keystore {
  readonly dir: string;
  readonly kdf: KeystoreKdf;
  readonly #log: Logger;

  constructor(opts: KeystoreOptions, deps: { logger: Logger }) {
    this.dir = opts.dir;
    this.kdf = opts.kdf;
    this.#log = deps.logger;
  }

  /**
   * The readable key files, sorted by name (creation time). Files that are not v3 key files
   * are reported in the log and skipped.
   */
  async list(): Promise<KeyFileEntry[]> {
    let names: string[];
    try {
      names = await readdir(this.dir);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return [];
      throw err;
    }
    const entries: KeyFileEntry[] = [];
    for (const name of names.sort()) {
      if (name.startsWith(".")) continue;
      const path = join(this.dir, name);
      try {
        entries.push({ address: keyFileAddress(JSON.parse(await readFile(path, "utf8"))), path });
      } catch (err) {
        const reason = err instanceof SyntaxError ? "not JSON" : (err as Error).message;
        this.#log.warn("Skipping unreadable key file", { file: name, reason });
      }
    }
    return entries;
  }

  /** Encrypts and writes `privateKey`; resolves with the new file. */
  async store(privateKey: Uint8Array, passphrase: string): Promise<KeyFileEntry> {
    const json = await encryptKey(privateKey, passphrase, this.kdf);
    const address = hexToBytes(json.address) as Address;
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
    const path = join(this.dir, keyFileName(address, new Date()));
    const temp = join(this.dir, `.${randomUUID()}.tmp`);
    try {
      const file = await open(temp, "wx", 0o600);
      try {
        await file.writeFile(JSON.stringify(json));
        await file.sync();
      } finally {
        await file.close();
      }
      await rename(temp, path);
    } catch (err) {
      await rm(temp, { force: true });
      throw err;
    }
    return { address, path };
  }

  /** Reads and decrypts one key file. */
  async load(path: string, passphrase: string): Promise<Uint8Array> {
    let json: unknown;
    try {
      json = JSON.parse(await readFile(path, "utf8"));
    } catch (err) {
      if (err instanceof SyntaxError) throw invalid("not JSON");
      throw err;
    }
    return decryptKey(json, passphrase);
  }
}
