import type { AccountFields, StateManagerInterface } from "@ethereumjs/common";
import { Account, type Address as EJSAddress, KECCAK256_RLP } from "@ethereumjs/util";
import { bytesToHex, keccak256, trimLeadingZeros } from "@nodex/types";

/** An account as the overlay keeps it: `null` once deleted. */
interface AccountEntry {
  readonly nonce: bigint;
  readonly balance: bigint;
  readonly storageRoot: Uint8Array;
  readonly codeHash: Uint8Array;
}

/** An account's storage in the overlay. `cleared`: the base's slots no longer count. */
interface StorageEntry {
  readonly cleared: boolean;
  readonly slots: Map<string, Uint8Array>;
}

const EMPTY = new Uint8Array(0);

/**
 * Contract code by code hash, shared by the call states of an executor: content-addressed, so
 * an entry never goes stale; handing out the same array for the same code lets the
 * interpreter's jump analysis be reused (see `jumpAnalysis.ts`).
 */
export class CodeByHash {
  readonly #entries = new Map<string, Uint8Array>();
  readonly #max: number;

  constructor(maxEntries = 1_000) {
    this.#max = maxEntries;
  }

  get(hash: string): Uint8Array | undefined {
    return this.#entries.get(hash);
  }

  set(hash: string, code: Uint8Array): Uint8Array {
    if (this.#entries.size >= this.#max)
      this.#entries.delete(this.#entries.keys().next().value as string);
    this.#entries.set(hash, code);
    return code;
  }
}

/**
 * The state a call runs on: reads go to `base` (which is never checkpointed, written or reverted
 * by a call, so its caches and storage tries stay warm from one call to the next); writes stay
 * in an in-memory overlay with its own checkpoints, dropped by `reset()` after the call.
 *
 * Semantics follow `MerkleStateManager` with caches, as the EVM sees it: accounts are copied in
 * and out, storage values are kept without leading zeros, `deleteAccount` drops code and
 * storage, `clearStorage` empties the storage and (re)creates the account.
 */
export class CallStateManager implements StateManagerInterface {
  readonly #base: StateManagerInterface;
  readonly #code: CodeByHash;
  /** address hex -> account, or null when deleted. */
  #accounts = new Map<string, AccountEntry | null>();
  /** address hex -> code written (or EMPTY once deleted). */
  #codes = new Map<string, Uint8Array>();
  #storage = new Map<string, StorageEntry>();
  /** Undo actions of each open checkpoint, innermost last. */
  #frames: (() => void)[][] = [];
  #original = new Map<string, Uint8Array>();

  readonly originalStorageCache = {
    /** The slot's value when the transaction first looked at it (EIP-2200 gas). */
    get: async (address: EJSAddress, key: Uint8Array): Promise<Uint8Array> => {
      const id = `${bytesToHex(address.bytes)}${bytesToHex(key)}`;
      let value = this.#original.get(id);
      if (value === undefined) {
        value = await this.getStorage(address, key);
        this.#original.set(id, value);
      }
      return value;
    },
    clear: (): void => this.#original.clear(),
  };

  constructor(base: StateManagerInterface, code: CodeByHash) {
    this.#base = base;
    this.#code = code;
  }

  /** Forgets every write and checkpoint: the next call starts from the base state. */
  reset(): void {
    if (this.#accounts.size > 0) this.#accounts = new Map();
    if (this.#codes.size > 0) this.#codes = new Map();
    if (this.#storage.size > 0) this.#storage = new Map();
    if (this.#original.size > 0) this.#original = new Map();
    this.#frames = [];
  }

  /** Whether anything was written since the last `reset()`. */
  get dirty(): boolean {
    return this.#accounts.size > 0 || this.#codes.size > 0 || this.#storage.size > 0;
  }

  // --- accounts

  async getAccount(address: EJSAddress): Promise<Account | undefined> {
    const entry = this.#accounts.get(bytesToHex(address.bytes));
    if (entry === undefined) return this.#base.getAccount(address);
    if (entry === null) return undefined;
    return new Account(entry.nonce, entry.balance, entry.storageRoot, entry.codeHash);
  }

  async putAccount(address: EJSAddress, account?: Account): Promise<void> {
    this.#setAccount(
      bytesToHex(address.bytes),
      account === undefined
        ? null
        : {
            nonce: account.nonce,
            balance: account.balance,
            storageRoot: account.storageRoot,
            codeHash: account.codeHash,
          },
    );
  }

  async deleteAccount(address: EJSAddress): Promise<void> {
    const key = bytesToHex(address.bytes);
    this.#setAccount(key, null);
    this.#setCode(key, EMPTY);
    this.#setStorage(key, { cleared: true, slots: new Map() });
  }

  async modifyAccountFields(address: EJSAddress, fields: AccountFields): Promise<void> {
    const account = (await this.getAccount(address)) ?? new Account();
    if (fields.nonce !== undefined) account.nonce = fields.nonce;
    if (fields.balance !== undefined) account.balance = fields.balance;
    if (fields.storageRoot !== undefined) account.storageRoot = fields.storageRoot;
    if (fields.codeHash !== undefined) account.codeHash = fields.codeHash;
    await this.putAccount(address, account);
  }

  // --- code

  async putCode(address: EJSAddress, value: Uint8Array): Promise<void> {
    const codeHash = keccak256(value);
    this.#setCode(bytesToHex(address.bytes), value);
    if ((await this.getAccount(address)) === undefined)
      await this.putAccount(address, new Account());
    await this.modifyAccountFields(address, { codeHash });
  }

  async getCode(address: EJSAddress): Promise<Uint8Array> {
    const written = this.#codes.get(bytesToHex(address.bytes));
    if (written !== undefined) return written;
    const account = await this.getAccount(address);
    if (account === undefined || !account.isContract()) return EMPTY;
    const hash = bytesToHex(account.codeHash);
    return this.#code.get(hash) ?? this.#code.set(hash, await this.#base.getCode(address));
  }

  async getCodeSize(address: EJSAddress): Promise<number> {
    return (await this.getCode(address)).length;
  }

  // --- storage

  async getStorage(address: EJSAddress, key: Uint8Array): Promise<Uint8Array> {
    if (key.length !== 32) throw new Error("Storage key must be 32 bytes long");
    const entry = this.#storage.get(bytesToHex(address.bytes));
    if (entry !== undefined) {
      const value = entry.slots.get(bytesToHex(key));
      if (value !== undefined) return value;
      if (entry.cleared) return new Uint8Array(0);
    }
    return this.#base.getStorage(address, key);
  }

  async putStorage(address: EJSAddress, key: Uint8Array, value: Uint8Array): Promise<void> {
    if (key.length !== 32) throw new Error("Storage key must be 32 bytes long");
    if (value.length > 32) throw new Error("Storage value cannot be longer than 32 bytes");
    if ((await this.getAccount(address)) === undefined)
      throw new Error("putStorage() called on non-existing account");
    const addressKey = bytesToHex(address.bytes);
    let entry = this.#storage.get(addressKey);
    if (entry === undefined) {
      entry = { cleared: false, slots: new Map() };
      this.#setStorage(addressKey, entry);
    }
    const slots = entry.slots;
    const slot = bytesToHex(key);
    const before = slots.get(slot);
    slots.set(slot, trimLeadingZeros(value).slice());
    this.#undo(() => {
      if (before === undefined) slots.delete(slot);
      else slots.set(slot, before);
    });
  }

  async clearStorage(address: EJSAddress): Promise<void> {
    const account = (await this.getAccount(address)) ?? new Account();
    this.#setStorage(bytesToHex(address.bytes), { cleared: true, slots: new Map() });
    account.storageRoot = KECCAK256_RLP;
    await this.putAccount(address, account);
  }

  // --- checkpoints

  async checkpoint(): Promise<void> {
    this.#frames.push([]);
  }

  async commit(): Promise<void> {
    const frame = this.#frames.pop();
    const parent = this.#frames[this.#frames.length - 1];
    if (frame !== undefined && parent !== undefined) for (const undo of frame) parent.push(undo);
    if (this.#frames.length === 0) this.#original.clear();
  }

  async revert(): Promise<void> {
    const frame = this.#frames.pop();
    if (frame !== undefined) for (let i = frame.length - 1; i >= 0; i--) frame[i]!();
    if (this.#frames.length === 0) this.#original.clear();
  }

  // --- what a call does not need

  async getStateRoot(): Promise<Uint8Array> {
    throw new Error("a call's state has no root");
  }

  async setStateRoot(): Promise<void> {
    throw new Error("a call's state has no root");
  }

  async hasStateRoot(): Promise<boolean> {
    throw new Error("a call's state has no root");
  }

  clearCaches(): void {}

  shallowCopy(): StateManagerInterface {
    throw new Error("a call's state cannot be copied");
  }

  // --- the overlay and its undo log

  #undo(action: () => void): void {
    this.#frames[this.#frames.length - 1]?.push(action);
  }

  #setAccount(key: string, entry: AccountEntry | null): void {
    this.#remember(this.#accounts, key);
    this.#accounts.set(key, entry);
  }

  #setCode(key: string, code: Uint8Array): void {
    this.#remember(this.#codes, key);
    this.#codes.set(key, code);
  }

  #setStorage(key: string, entry: StorageEntry): void {
    this.#remember(this.#storage, key);
    this.#storage.set(key, entry);
  }

  #remember<V>(map: Map<string, V>, key: string): void {
    if (this.#frames.length === 0) return;
    const had = map.has(key);
    const before = map.get(key);
    this.#undo(() => {
      if (had) map.set(key, before as V);
      else map.delete(key);
    });
  }
}
