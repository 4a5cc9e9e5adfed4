import { randomBytes } from "node:crypto";
import { type TypedData, WalletError, WalletErrorCode, type WalletService } from "@nodex/rpc";
import {
  type Address,
  bytesToHex,
  type DevAccount,
  isPrivateKey,
  keccak256,
  type Logger,
  privateKeyToAddress,
  type SignedTransaction,
  signMessage,
  signTransaction,
  type UnsignedTransaction,
} from "@nodex/types";
import { type Keystore, KeystoreError, KeystoreErrorCode } from "./keystore.js";
import { signDigest, typedDataDigest } from "./typedData.js";

export interface WalletDeps {
  readonly keystore: Keystore;
  /** Always unlocked and never written to disk (regtest and devnet). */
  readonly devAccounts: readonly DevAccount[];
  readonly logger: Logger;
  /** Milliseconds since the epoch; tests inject a clock. */
  readonly now?: () => number;
}

interface Unlocked {
  readonly key: Uint8Array;
  /** When the unlock ends (ms); `undefined` until the node stops. */
  readonly until: number | undefined;
}

const idOf = (address: Uint8Array) => bytesToHex(address);

function unknownAccount(address: Address): WalletError {
  return new WalletError(WalletErrorCode.UNKNOWN_ACCOUNT, `unknown account ${idOf(address)}`, {
    address: idOf(address),
  });
}

/**
 * The node's accounts: the development accounts (always unlocked, in memory), accounts made
 * from a seed (unlocked, in memory until the node stops) and the keystore's (locked until
 * unlocked for a while). Lists them in that order.
 */
export class Wallet implements WalletService {
  readonly #keystore: Keystore;
  readonly #log: Logger;
  readonly #now: () => number;
  /** Keys held in memory and always usable: development and seed accounts. */
  readonly #held = new Map<string, { address: Address; key: Uint8Array }>();
  readonly #files = new Map<string, { address: Address; path: string }>();
  readonly #unlocked = new Map<string, Unlocked>();

  private constructor(deps: WalletDeps) {
    this.#keystore = deps.keystore;
    this.#log = deps.logger;
    this.#now = deps.now ?? Date.now;
    for (const account of deps.devAccounts) {
      this.#held.set(idOf(account.address), { address: account.address, key: account.privateKey });
    }
  }

  /** Reads the keystore directory (unreadable files are logged and skipped). */
  static async open(deps: WalletDeps): Promise<Wallet> {
    const wallet = new Wallet(deps);
    for (const entry of await deps.keystore.list()) {
      const id = idOf(entry.address);
      if (wallet.#held.has(id) || wallet.#files.has(id)) {
        wallet.#log.warn("Skipping a second key file of an account", {
          address: id,
          file: entry.path,
        });
        continue;
      }
      wallet.#files.set(id, entry);
    }
    if (wallet.#files.size > 0)
      wallet.#log.info("Keystore accounts", { count: wallet.#files.size, dir: deps.keystore.dir });
    return wallet;
  }

  list(): readonly Address[] {
    return [
      ...[...this.#held.values()].map((a) => a.address),
      ...[...this.#files.values()].map((a) => a.address),
    ];
  }

  /** Whether `address` can sign now without a passphrase. */
  isUnlocked(address: Address): boolean {
    return this.#usableKey(address) !== undefined;
  }

  async newAccount(passphrase: string): Promise<Address> {
    let key: Uint8Array;
    do key = new Uint8Array(randomBytes(32));
    while (!isPrivateKey(key));
    try {
      return await this.#store(key, passphrase);
    } finally {
      key.fill(0);
    }
  }

  async importRawKey(privateKey: Uint8Array, passphrase: string): Promise<Address> {
    if (!isPrivateKey(privateKey)) {
      throw new WalletError(WalletErrorCode.INVALID_KEY, "invalid private key");
    }
    const address = privateKeyToAddress(privateKey);
    if (this.#held.has(idOf(address)) || this.#files.has(idOf(address))) {
      throw new WalletError(WalletErrorCode.KEYSTORE, "account already exists", {
        address: idOf(address),
      });
    }
    return this.#store(privateKey, passphrase);
  }

  /**
   * The account of key keccak256(UTF-8 `seed`), as the reference node makes it. The key is held
   * in memory, unlocked, until the node stops: it is not written to the keystore (there is no
   * passphrase to encrypt it with, and the seed recreates it).
   */
  newAccountWithSeed(seed: string): Address {
    const key = keccak256(new TextEncoder().encode(seed));
    const address = privateKeyToAddress(key);
    const id = idOf(address);
    if (!this.#held.has(id)) this.#held.set(id, { address, key });
    return address;
  }

  async unlock(address: Address, passphrase: string, seconds: number): Promise<boolean> {
    const id = idOf(address);
    if (this.#held.has(id)) return true;
    const file = this.#files.get(id);
    if (file === undefined) throw unknownAccount(address);
    let key: Uint8Array;
    try {
      key = await this.#keystore.load(file.path, passphrase);
    } catch (err) {
      if (err instanceof KeystoreError && err.code === KeystoreErrorCode.WRONG_PASSPHRASE)
        return false;
      throw this.#fileError(err, id);
    }
    this.#drop(id);
    this.#unlocked.set(id, {
      key,
      until: seconds === 0 ? undefined : this.#now() + seconds * 1000,
    });
    this.#log.info("Unlocked account", { address: id, seconds });
    return true;
  }

  lock(address: Address): boolean {
    const id = idOf(address);
    if (this.#files.has(id)) {
      this.#drop(id);
      return true;
    }
    if (this.#held.has(id)) return false;
    throw unknownAccount(address);
  }

  dumpRawKey(address: Address): Uint8Array {
    return Uint8Array.from(this.#requireKey(address));
  }

  signMessage(address: Address, message: Uint8Array): Uint8Array {
    return signMessage(message, this.#requireKey(address));
  }

  signMessageWith(address: Address, message: Uint8Array, passphrase?: string): Promise<Uint8Array> {
    return this.#withKey(address, passphrase, (key) => signMessage(message, key));
  }

  async signTypedData(address: Address, data: TypedData): Promise<Uint8Array> {
    const key = this.#requireKey(address);
    return signDigest(await typedDataDigest(data), key);
  }

  /**
   * Runs `use` with the account's unlocked key, or, when `passphrase` is given for a keystore
   * account, with the key it decrypts, wiped afterwards.
   */
  async #withKey<T>(
    address: Address,
    passphrase: string | undefined,
    use: (key: Uint8Array) => T,
  ): Promise<T> {
    const id = idOf(address);
    const file = this.#files.get(id);
    // Development and seed accounts take any passphrase: they have none.
    if (passphrase === undefined || file === undefined) return use(this.#requireKey(address));
    let key: Uint8Array;
    try {
      key = await this.#keystore.load(file.path, passphrase);
    } catch (err) {
      throw this.#fileError(err, id);
    }
    try {
      return use(key);
    } finally {
      key.fill(0);
    }
  }

  async signTransaction(
    address: Address,
    tx: UnsignedTransaction,
    chainId: number,
    passphrase?: string,
  ): Promise<SignedTransaction> {
    // The account's address is known: deriving it from the key again costs as much as signing.
    return this.#withKey(address, passphrase, (key) => signTransaction(tx, key, chainId, address));
  }

  async #store(key: Uint8Array, passphrase: string): Promise<Address> {
    const entry = await this.#keystore.store(key, passphrase);
    this.#files.set(idOf(entry.address), entry);
    this.#log.info("New keystore account", { address: idOf(entry.address) });
    return entry.address;
  }

  #usableKey(address: Address): Uint8Array | undefined {
    const id = idOf(address);
    const held = this.#held.get(id);
    if (held !== undefined) return held.key;
    const unlocked = this.#unlocked.get(id);
    if (unlocked === undefined) return undefined;
    if (unlocked.until !== undefined && this.#now() >= unlocked.until) {
      this.#drop(id);
      return undefined;
    }
    return unlocked.key;
  }

  #requireKey(address: Address): Uint8Array {
    const key = this.#usableKey(address);
    if (key !== undefined) return key;
    if (!this.#files.has(idOf(address))) throw unknownAccount(address);
    throw new WalletError(
      WalletErrorCode.LOCKED,
      `authentication needed: password or unlock (account ${idOf(address)} is locked)`,
      { address: idOf(address) },
    );
  }

  #drop(id: string): void {
    this.#unlocked.get(id)?.key.fill(0);
    this.#unlocked.delete(id);
  }

  #fileError(err: unknown, id: string): WalletError {
    if (err instanceof KeystoreError && err.code === KeystoreErrorCode.WRONG_PASSPHRASE)
      return new WalletError(
        WalletErrorCode.WRONG_PASSPHRASE,
        "could not decrypt key with given passphrase",
        { address: id },
      );
    const reason = err instanceof KeystoreError ? err.message : "cannot read the key file";
    this.#log.warn("Key file unusable", { address: id, reason });
    return new WalletError(WalletErrorCode.KEYSTORE, `key file of ${id}: ${reason}`, {
      address: id,
    });
  }
}
