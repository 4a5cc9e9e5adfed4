import { Common, Mainnet } from "@ethereumjs/common";
import { RLP } from "@ethereumjs/rlp";
import { Caches, getMerkleStateProof, MerkleStateManager } from "@ethereumjs/statemanager";
import {
  Account,
  createAccountFromRLP,
  Address as EJSAddress,
  EthereumJSErrorWithoutCode,
  ValueEncoding,
} from "@ethereumjs/util";
import { type Address, bytesToUnprefixedHex, keccak256, trimLeadingZeros } from "@nodex/types";
import { EMPTY_TRIE_ROOT } from "./emptyTrie.js";
import { StateError, StateErrorCode } from "./errors.js";
import { FastTrie } from "./fastTrie.js";
import type { NodeStore } from "./nodeStore.js";

export { EMPTY_TRIE_ROOT };

/**
 * The chain settings every state manager gets: without one, each makes its own (a tenth of a
 * millisecond per state opened, and a state is opened for every new head). A state manager only
 * reads it; execution has its own per network (`@nodex/evm`).
 */
const STATE_COMMON = new Common({ chain: Mainnet, customCrypto: { keccak256 } });

export interface AccountState {
  readonly nonce: bigint;
  readonly balance: bigint;
  readonly storageRoot: Uint8Array;
  readonly codeHash: Uint8Array;
}

/** `eth_getProof`'s content, as plain values. */
export interface StateProof {
  readonly address: Uint8Array;
  readonly balance: bigint;
  readonly codeHash: Uint8Array;
  readonly nonce: bigint;
  readonly storageHash: Uint8Array;
  readonly accountProof: readonly Uint8Array[];
  readonly storageProof: readonly {
    key: Uint8Array;
    value: bigint;
    proof: readonly Uint8Array[];
  }[];
}

/**
 * Reads of a state that is only read after which the library's caches start over: at most that
 * many entries (accounts, storage slots, codes, opened storage tries), some 15 MB per state.
 */
export const READ_CACHE_ENTRIES = 50_000;

/**
 * A `MerkleStateManager` that counts the changes made through it, so that a reader that keeps
 * values it read (the interpreter of calls, `@nodex/evm`) knows when they may have changed: a
 * change counts when it starts and again when it ends, so a read made while it ran is never
 * taken as of the count after it.
 */
class CountingStateManager extends MerkleStateManager {
  changes = 0;
  /** Reads since the caches last started over (`#bound`). */
  #reads = 0;

  override getAccount(address: EJSAddress) {
    this.#bound();
    return super.getAccount(address);
  }

  override getStorage(address: EJSAddress, key: Uint8Array) {
    this.#bound();
    return super.getStorage(address, key);
  }

  override getCode(address: EJSAddress) {
    this.#bound();
    if (this.forkStore !== undefined) return this.#forkCode(address);
    return super.getCode(address);
  }

  /**
   * The store whose fork source (`NodeStore.fork`) fetches what this state lacks; set by
   * `WorldState.open` when the store has one, and then only code needs a hand here (a missing
   * node is the tries' to fetch, a missing code the library reads as no code).
   */
  forkStore: NodeStore | undefined;

  /** `getCode`, after fetching from the fork the code of the account's hash if the store lacks it. */
  async #forkCode(address: EJSAddress): Promise<Uint8Array> {
    if (this._caches?.code?.get(address) === undefined) {
      const account = await this.getAccount(address);
      if (account?.isContract()) await this.forkStore!.ensureCode(address.bytes, account.codeHash);
    }
    return super.getCode(address);
  }

  /**
   * The library's write of one slot into the account's storage trie, without its promise
   * executor (`new Promise(async (resolve) => …)`): there, an error of the trie's write (a
   * missing node, a fork's upstream that fails) escaped as an unhandled rejection and the flush
   * waited forever; here it reaches the caller.
   */
  protected override async _writeContractStorage(
    address: EJSAddress,
    account: Account,
    key: Uint8Array,
    value: Uint8Array,
  ): Promise<void> {
    const trie = this._getStorageTrie(address, account);
    if (value.length > 0) await trie.put(key, RLP.encode(value));
    else await trie.del(key);
    account.storageRoot = trie.root();
    await this.putAccount(address, account);
  }

  /** The library's, with the trie told whose storage it is (what a fork source fetches). */
  protected override _getStorageTrie(
    addressOrHash: EJSAddress | { bytes: Uint8Array } | Uint8Array,
    rootAccount?: Account,
  ) {
    const trie = super._getStorageTrie(addressOrHash, rootAccount);
    if (!(addressOrHash instanceof Uint8Array) && trie instanceof FastTrie)
      trie.forkOwner = addressOrHash.bytes;
    return trie;
  }

  /**
   * Walks the paths of `address` and `slots` in the tries (after a flush), so that a fork
   * source fetches what is missing on them before the library's proof walks them (those walks
   * are the library's and read through no fork).
   */
  async readPaths(address: EJSAddress, slots: readonly Uint8Array[]): Promise<void> {
    await this.flush();
    const stored = await this._trie.get(address.bytes);
    if (stored === null) return;
    const account = createAccountFromRLP(stored);
    const trie = this._getStorageTrie(address, account);
    for (const slot of slots) await trie.get(slot);
  }

  /**
   * Keeps the library's caches of a state that was only read within `READ_CACHE_ENTRIES`: its
   * account, storage and code caches and its opened storage tries have no bound of their own,
   * and a state the node keeps open for reads and calls would otherwise hold everything ever
   * read of it. A read adds at most one entry, so every `READ_CACHE_ENTRIES` reads a state never
   * changed (no write: nothing in the caches that the trie does not hold) starts over empty;
   * the reads after it find the trie nodes in the node cache.
   */
  #bound(): void {
    if (++this.#reads < READ_CACHE_ENTRIES) return;
    this.#reads = 0;
    if (this.changes !== 0 || this._checkpointCount !== 0) return;
    this._caches?.clear();
    this._storageTries = {};
  }

  /** `change` started after a count (in each method below, before it): one more when it ends. */
  async #counted<T>(change: Promise<T>): Promise<T> {
    try {
      return await change;
    } finally {
      this.changes++;
    }
  }

  override putAccount(...args: Parameters<MerkleStateManager["putAccount"]>) {
    this.changes++;
    return this.#counted(super.putAccount(...args));
  }

  override deleteAccount(address: EJSAddress) {
    this.changes++;
    return this.#counted(this.#deleteAccount(address));
  }

  /**
   * The library's `deleteAccount`, which forgets the account's cached storage but keeps its
   * storage trie among the ones it has opened (`_storageTries`, by hashed address): an account
   * created again at the address while this state is open would read and write its slots on
   * the old trie. The trie goes too; the next access opens it from the account's own root.
   */
  async #deleteAccount(address: EJSAddress): Promise<void> {
    await super.deleteAccount(address);
    delete this._storageTries[bytesToUnprefixedHex(keccak256(address.bytes))];
  }

  override modifyAccountFields(...args: Parameters<MerkleStateManager["modifyAccountFields"]>) {
    this.changes++;
    return this.#counted(super.modifyAccountFields(...args));
  }

  override putCode(...args: Parameters<MerkleStateManager["putCode"]>) {
    this.changes++;
    return this.#counted(super.putCode(...args));
  }

  override putStorage(address: EJSAddress, key: Uint8Array, value: Uint8Array) {
    this.changes++;
    return this.#counted(this.#putStorage(address, key, value));
  }

  /**
   * The library's `putStorage`, with its checks and messages, that leaves the value to the
   * storage cache when there is one. The library's writes the value into the account's storage
   * trie as well (its `caches.storage.put(...) ?? write()` writes whenever the cache's `put`,
   * which returns nothing, has run), and then again when the cache is flushed: two trie writes,
   * each re-hashing the path, for every `SSTORE`. Every read of the slot sees the cache until the
   * flush writes the trie; proofs and dumps flush it first.
   */
  async #putStorage(address: EJSAddress, key: Uint8Array, value: Uint8Array): Promise<void> {
    const storage = this._caches?.storage;
    if (storage === undefined) return super.putStorage(address, key, value);
    if (key.length !== 32) throw EthereumJSErrorWithoutCode("Storage key must be 32 bytes long");
    if (value.length > 32)
      throw EthereumJSErrorWithoutCode("Storage value cannot be longer than 32 bytes");
    if ((await this.getAccount(address)) === undefined)
      throw EthereumJSErrorWithoutCode("putStorage() called on non-existing account");
    storage.put(address, key, RLP.encode(trimLeadingZeros(value)));
  }

  override clearStorage(...args: Parameters<MerkleStateManager["clearStorage"]>) {
    this.changes++;
    return this.#counted(super.clearStorage(...args));
  }

  override revert(...args: Parameters<MerkleStateManager["revert"]>) {
    this.changes++;
    return this.#counted(super.revert(...args));
  }

  override setStateRoot(...args: Parameters<MerkleStateManager["setStateRoot"]>) {
    this.changes++;
    return this.#counted(this.#setStateRoot(...args));
  }

  /** The library's, after fetching the fork block's root node when it is the root asked for. */
  async #setStateRoot(...args: Parameters<MerkleStateManager["setStateRoot"]>): Promise<void> {
    if (this.forkStore !== undefined && !(await this._trie.checkRoot(args[0])))
      await this.forkStore.fillForkRoot(args[0]);
    return super.setStateRoot(...args);
  }

  override generateCanonicalGenesis(
    ...args: Parameters<MerkleStateManager["generateCanonicalGenesis"]>
  ) {
    this.changes++;
    return this.#counted(super.generateCanonicalGenesis(...args));
  }

  override consumeBAL(...args: Parameters<MerkleStateManager["consumeBAL"]>) {
    this.changes++;
    return this.#counted(super.consumeBAL(...args));
  }
}

/**
 * The world state at one state root: accounts, storage and code on the Ethereum Merkle
 * Patricia trie, read from and written to a `NodeStore`. `manager` is the state interface
 * the EVM runs on.
 */
export class WorldState {
  readonly manager: MerkleStateManager;

  private constructor(manager: MerkleStateManager) {
    this.manager = manager;
  }

  /**
   * A count of the changes made to this state (through `manager` or this class): the same
   * count means the same answers to every read.
   */
  get changes(): number {
    return (this.manager as CountingStateManager).changes;
  }

  /**
   * The state at `root` (the empty state when absent); throws `StateError` `STATE_ROOT_MISSING`
   * when the root's nodes are missing.
   */
  static async open(store: NodeStore, root?: Uint8Array): Promise<WorldState> {
    const trie = new FastTrie({
      db: store,
      useKeyHashing: true,
      // Keys and nodes hashed with the node's keccak256 (WebAssembly), not the trie's own.
      useKeyHashingFunction: keccak256,
      valueEncoding: ValueEncoding.Bytes,
      // No cache of its own: the store's cache (`NodeCache`) is shared by every state the node
      // opens, and a trie's own (an LRU of preallocated arrays) cost ~200 kB per state opened,
      // that is per new head.
      cacheSize: 0,
    });
    if (root !== undefined) {
      if (
        !(await trie.checkRoot(root)) &&
        !((await store.fillForkRoot(root)) && (await trie.checkRoot(root)))
      ) {
        const hex = bytesToUnprefixedHex(root);
        throw new StateError(
          StateErrorCode.ROOT_MISSING,
          `state root ${hex} is not in the database`,
          {
            root: hex,
          },
        );
      }
      trie.root(root);
    }
    const manager = new CountingStateManager({ trie, caches: new Caches(), common: STATE_COMMON });
    if (store.fork !== undefined) manager.forkStore = store;
    return new WorldState(manager);
  }

  async getAccount(address: Address): Promise<AccountState | undefined> {
    const account = await this.manager.getAccount(new EJSAddress(address));
    if (account === undefined) return undefined;
    return {
      nonce: account.nonce,
      balance: account.balance,
      storageRoot: account.storageRoot,
      codeHash: account.codeHash,
    };
  }

  async getBalance(address: Address): Promise<bigint> {
    return (await this.getAccount(address))?.balance ?? 0n;
  }

  async getNonce(address: Address): Promise<bigint> {
    return (await this.getAccount(address))?.nonce ?? 0n;
  }

  async getCode(address: Address): Promise<Uint8Array> {
    return this.manager.getCode(new EJSAddress(address));
  }

  /** The 32-byte value at `slot` (zeros when unset). */
  async getStorage(address: Address, slot: Uint8Array): Promise<Uint8Array> {
    const value = await this.manager.getStorage(new EJSAddress(address), slot);
    const out = new Uint8Array(32);
    out.set(value, 32 - value.length);
    return out;
  }

  async setBalance(address: Address, balance: bigint): Promise<void> {
    const a = new EJSAddress(address);
    const account = (await this.manager.getAccount(a)) ?? new Account();
    account.balance = balance;
    await this.manager.putAccount(a, account);
  }

  async setNonce(address: Address, nonce: bigint): Promise<void> {
    const a = new EJSAddress(address);
    const account = (await this.manager.getAccount(a)) ?? new Account();
    account.nonce = nonce;
    await this.manager.putAccount(a, account);
  }

  async setCode(address: Address, code: Uint8Array): Promise<void> {
    await this.manager.putCode(new EJSAddress(address), code);
  }

  async setStorage(address: Address, slot: Uint8Array, value: Uint8Array): Promise<void> {
    const a = new EJSAddress(address);
    if ((await this.manager.getAccount(a)) === undefined)
      await this.manager.putAccount(a, new Account());
    await this.manager.putStorage(a, slot, value);
  }

  /** Writes the changes into the trie (and so into the store's pending writes); returns the new root. */
  async commit(): Promise<Uint8Array> {
    await this.manager.checkpoint();
    await this.manager.commit();
    await this.manager.flush();
    return this.manager.getStateRoot();
  }

  async root(): Promise<Uint8Array> {
    return this.manager.getStateRoot();
  }

  /**
   * The account's proof and one storage proof per slot, in order (EIP-1186). An absent account
   * has an exclusion proof, the empty account's fields and, for each slot, value 0 with no
   * nodes (its storage trie is empty: there is nothing to prove from), as geth answers.
   */
  async getProof(address: Address, slots: readonly Uint8Array[]): Promise<StateProof> {
    const manager = this.manager as CountingStateManager;
    if (manager.forkStore !== undefined) await manager.readPaths(new EJSAddress(address), slots);
    const proof = await getMerkleStateProof(this.manager, new EJSAddress(address), [...slots]);
    const bytes = (hex: string) => Uint8Array.from(Buffer.from(hex.slice(2), "hex"));
    // The library lists no storage proofs for an absent account.
    if (proof.storageProof.length !== slots.length) {
      proof.storageProof = slots.map((slot) => ({
        key: `0x${Buffer.from(slot).toString("hex")}`,
        value: "0x0",
        proof: [],
      }));
    }
    return {
      address,
      balance: BigInt(proof.balance),
      codeHash: bytes(proof.codeHash),
      nonce: BigInt(proof.nonce),
      storageHash: bytes(proof.storageHash),
      accountProof: proof.accountProof.map(bytes),
      storageProof: proof.storageProof.map((s) => ({
        key: bytes(s.key),
        value: BigInt(s.value),
        proof: s.proof.map(bytes),
      })),
    };
  }
}
