import { Address as EJSAddress } from "@ethereumjs/util";
import { bytesToUnprefixedHex, keccak256 } from "@nodex/types";

export const ADDRESS_MASK = (1n << 160n) - 1n;

/** The address key (40 hex digits) of a word's low 20 bytes. */
export function addressKey(word: bigint): string {
  return (word & ADDRESS_MASK).toString(16).padStart(40, "0");
}

/** An account as the state holds it (a call's sender is seen with one more nonce: `#account`). */
export interface BaseAccount {
  readonly balance: bigint;
  readonly codeHash: Uint8Array;
  /** The code hash as the key of `CodeByHash`. */
  readonly codeKey: string;
  readonly nonceZero: boolean;
  /** EIP-161: no nonce, no balance, no code. */
  readonly empty: boolean;
  readonly hasCode: boolean;
}

/**
 * `account` with another balance, nonce and emptiness, field by field: on V8 11 (Node 20) a
 * spread followed by more fields gets a hidden class of its own each time.
 */
export function accountView(
  account: BaseAccount,
  balance: bigint,
  nonceZero: boolean,
  empty: boolean,
): BaseAccount {
  return {
    balance,
    codeHash: account.codeHash,
    codeKey: account.codeKey,
    nonceZero,
    empty,
    hasCode: account.hasCode,
  };
}

/** Entries (accounts and slots) `StateReads` keeps of one state before it starts over. */
const READS_LIMIT = 8_192;

/**
 * What calls read of one state (accounts, storage values), kept from one call to the next while
 * the state's change count (`WorldState.changes`) stays the same, up to `READS_LIMIT` entries:
 * the state manager's own caches answer in 1–3 µs a read (hex keys, an ordered map, RLP
 * decoded again each time), these in a map lookup. A call takes the maps as they are when it
 * starts: a change starts new ones, and reads that were under way go to the old ones.
 */
export class StateReads {
  #changes = Number.NaN;
  accounts = new Map<string, BaseAccount | null>();
  storage = new Map<string, Map<bigint, bigint>>();
  size = 0;

  /** These reads, for a call on the state at change count `changes`. */
  at(changes: number): this {
    if (changes !== this.#changes || this.size > READS_LIMIT) {
      this.#changes = changes;
      this.accounts = new Map();
      this.storage = new Map();
      this.size = 0;
    }
    return this;
  }
}

/** An account as a call sees it. */
export type AccountView = BaseAccount;

/** The library's address objects by hex key, shared by calls (they are never changed). */
const addresses = new Map<string, EJSAddress>();

/** The library's address object of an address key (40 hex digits), shared: never change it. */
export function libraryAddress(key: string): EJSAddress {
  let address = addresses.get(key);
  if (address === undefined) {
    const bytes = new Uint8Array(20);
    for (let i = 0; i < 20; i++) bytes[i] = Number.parseInt(key.slice(2 * i, 2 * i + 2), 16);
    address = new EJSAddress(bytes);
    if (addresses.size >= 10_000) addresses.clear();
    addresses.set(key, address);
  }
  return address;
}

/** Keccak-256 of no bytes: the code hash of an account without code. */
export const KECCAK_EMPTY = keccak256(new Uint8Array(0));
export const KECCAK_EMPTY_KEY = `0x${bytesToUnprefixedHex(KECCAK_EMPTY)}`;
/** An account that is not there, as a base for one that value creates. */
export const NO_ACCOUNT: BaseAccount = {
  balance: 0n,
  codeHash: KECCAK_EMPTY,
  codeKey: KECCAK_EMPTY_KEY,
  nonceZero: true,
  empty: true,
  hasCode: false,
};
