import { bytesToUnprefixedHex } from "@nodex/types";

/**
 * The parts of `@ethereumjs/evm`'s `Journal` (not exported; found as an EVM's
 * `journal.constructor`) that the methods below read and write, as the library's own do.
 */
interface JournalLike {
  journal: Map<string, Set<string>>;
  alwaysWarmJournal: Map<string, Set<string>>;
  journalDiff: [number, [Set<string>, Map<string, Set<string>>, Set<string>]][];
  accessList?: Map<string, Set<string>>;
  preimages?: Map<string, Uint8Array>;
  touched: Set<string>;
  touchAccount(address: string): void;
}

/** The methods replaced, under the names the library gives them. */
export const FAST_JOURNAL_METHODS = [
  "isWarmedAddress",
  "addWarmedAddress",
  "isWarmedStorage",
  "addWarmedStorage",
  "addAlwaysWarmAddress",
  "touchAddress",
] as const;

const installed = new WeakSet<object>();

/**
 * Puts in the journal's prototype the EIP-2929 warm-set methods and `touchAddress` with the
 * library's keys and effects, computing the keys (unprefixed lowercase hex of an address or a
 * slot) with Node's encoder. The library's encoder builds each key of two-character pieces,
 * a string that every map lookup then copies flat before hashing it; with about ten lookups
 * a message, that was a tenth of a simple `eth_call`. `addAlwaysWarmAddress` strips a `0x`
 * prefix without the library's regular-expression test when there is none.
 *
 * The journal test runs random sequences of these methods, checkpoints, commits and reverts
 * on a journal with the library's methods and one with these, and compares them.
 */
export function installFastJournal(Journal: { readonly prototype: object }): void {
  const proto = Journal.prototype as Record<string, unknown>;
  if (installed.has(proto)) return;
  if (!FAST_JOURNAL_METHODS.every((name) => typeof proto[name] === "function")) return;
  installed.add(proto);
  const libraryAddAlwaysWarmAddress = proto.addAlwaysWarmAddress as (
    this: JournalLike,
    address: string,
    addToAccessList?: boolean,
  ) => void;
  Object.assign(proto, {
    isWarmedAddress(this: JournalLike, address: Uint8Array): boolean {
      const key = bytesToUnprefixedHex(address);
      return this.journal.has(key) || this.alwaysWarmJournal.has(key);
    },

    addWarmedAddress(this: JournalLike, address: Uint8Array): void {
      warmAddress(this, bytesToUnprefixedHex(address));
    },

    isWarmedStorage(this: JournalLike, address: Uint8Array, slot: Uint8Array): boolean {
      const key = bytesToUnprefixedHex(address);
      const slots = this.journal.get(key);
      const always = this.alwaysWarmJournal.get(key);
      if (slots === undefined && always === undefined) return false;
      const slotKey = bytesToUnprefixedHex(slot);
      return slots?.has(slotKey) === true || always?.has(slotKey) === true;
    },

    addWarmedStorage(this: JournalLike, address: Uint8Array, slot: Uint8Array): void {
      const key = bytesToUnprefixedHex(address);
      let slots = this.journal.get(key);
      if (slots === undefined) {
        warmAddress(this, key);
        slots = this.journal.get(key)!;
      }
      const slotKey = bytesToUnprefixedHex(slot);
      if (!slots.has(slotKey)) {
        slots.add(slotKey);
        const changed = this.journalDiff[this.journalDiff.length - 1]![1][1];
        let changedSlots = changed.get(key);
        if (changedSlots === undefined) {
          changedSlots = new Set();
          changed.set(key, changedSlots);
        }
        changedSlots.add(slotKey);
      }
      // As the library's: `warmAddress` gave the address its entry in the access list.
      if (this.accessList !== undefined) this.accessList.get(key)!.add(slotKey);
    },

    addAlwaysWarmAddress(this: JournalLike, address: string, addToAccessList = false): void {
      // The library strips a `0x` followed by hex digits only; without `0x` it takes the text
      // as it is, which the node's keys (precompiles, senders, targets, coinbase) are.
      if (address.charCodeAt(0) === 48 && address.charCodeAt(1) === 120) {
        libraryAddAlwaysWarmAddress.call(this, address, addToAccessList);
        return;
      }
      if (!this.alwaysWarmJournal.has(address)) this.alwaysWarmJournal.set(address, new Set());
      if (addToAccessList && this.accessList !== undefined && !this.accessList.has(address))
        this.accessList.set(address, new Set());
    },

    touchAddress(this: JournalLike, address: { readonly bytes: Uint8Array }): void {
      this.touchAccount(bytesToUnprefixedHex(address.bytes));
    },
  });
}

/** The library's `addWarmedAddress` on a key. */
function warmAddress(journal: JournalLike, key: string): void {
  if (!journal.journal.has(key)) {
    journal.journal.set(key, new Set());
    journal.journalDiff[journal.journalDiff.length - 1]![1][0].add(key);
  }
  if (journal.accessList !== undefined && !journal.accessList.has(key))
    journal.accessList.set(key, new Set());
}
