import {
  type AccessListEntry,
  type Address,
  bytesToHex,
  type Hash32,
  hexToBytes,
} from "@nodex/types";
import {
  type ExecutionTracer,
  type FrameEnd,
  TraceAbort,
  type TraceStep,
  type TxStart,
} from "./tracing.js";
import { wordBytes } from "./words.js";

/** Geth's precompiles of Cancun (0x01–0x0a): never listed, as geth leaves them out. */
const PRECOMPILES: ReadonlySet<string> = new Set(
  Array.from({ length: 10 }, (_, i) => `0x${(i + 1).toString(16).padStart(40, "0")}`),
);

export interface AccessListTracerOptions {
  /** A list to start from (the request's own), kept in the result. */
  readonly initial?: readonly AccessListEntry[];
  /** When to stop (`Date.now()` milliseconds), with `TraceAbort`; 0 for never. */
  readonly deadline?: number;
}

const ADDRESS_MASK = (1n << 160n) - 1n;

/**
 * The access list of a transaction, as geth's `eth_createAccessList` finds it (its
 * `AccessListTracer`): the slots `SLOAD` and `SSTORE` touch, under the account whose storage
 * the code uses, and the accounts `BALANCE`, `EXTCODESIZE`, `EXTCODECOPY`, `EXTCODEHASH`,
 * `SELFDESTRUCT` and the four calls name. Those accounts are left out when they are the sender,
 * the recipient (or the created contract) or a precompile (they are warm anyway), unless slots of
 * theirs were touched. The result is ordered by address, each account's keys in order.
 */
export class AccessListTracer implements ExecutionTracer {
  readonly #deadline: number;
  /** Address (lowercase hex) → its slots (lowercase hex of 32 bytes). */
  readonly #accounts = new Map<string, Set<string>>();
  /** Accounts listed for their slots (never left out). */
  readonly #withSlots = new Set<string>();
  readonly #excluded = new Set<string>(PRECOMPILES);
  #steps = 0;

  constructor(opts: AccessListTracerOptions = {}) {
    this.#deadline = opts.deadline ?? 0;
    for (const entry of opts.initial ?? []) {
      const key = bytesToHex(entry.address);
      const slots = this.#account(key);
      for (const slot of entry.storageKeys) {
        slots.add(bytesToHex(slot));
        this.#withSlots.add(key);
      }
    }
  }

  txStart(tx: TxStart): void {
    this.#excluded.add(bytesToHex(tx.from));
    if (tx.to !== null) this.#excluded.add(bytesToHex(tx.to));
  }

  exit(end: FrameEnd): void {
    // The contract a creation made, when that is the transaction's own frame.
    if (end.depth === 0 && end.createdAddress !== undefined)
      this.#excluded.add(bytesToHex(end.createdAddress));
  }

  step(step: TraceStep): void {
    if (this.#deadline > 0 && this.#steps++ % 4096 === 0 && Date.now() > this.#deadline)
      throw new TraceAbort("deadline", "the trace ran over the request's time limit");
    const depth = step.stackLength();
    switch (step.op) {
      case 0x54: // SLOAD
      case 0x55: // SSTORE
        if (depth >= 1) {
          const key = bytesToHex(step.address);
          this.#account(key).add(bytesToHex(wordBytes(step.peek(0))));
          this.#withSlots.add(key);
        }
        return;
      case 0x31: // BALANCE
      case 0x3b: // EXTCODESIZE
      case 0x3c: // EXTCODECOPY
      case 0x3f: // EXTCODEHASH
      case 0xff: // SELFDESTRUCT
        if (depth >= 1) this.#account(addressKey(step.peek(0)));
        return;
      case 0xf1: // CALL
      case 0xf2: // CALLCODE
      case 0xf4: // DELEGATECALL
      case 0xfa: // STATICCALL
        if (depth >= 5) this.#account(addressKey(step.peek(1)));
        return;
      default:
    }
  }

  #account(key: string): Set<string> {
    let slots = this.#accounts.get(key);
    if (slots === undefined) {
      slots = new Set();
      this.#accounts.set(key, slots);
    }
    return slots;
  }

  /** The list: by address, then by key, each once. */
  result(): AccessListEntry[] {
    const out: AccessListEntry[] = [];
    for (const key of [...this.#accounts.keys()].sort()) {
      if (this.#excluded.has(key) && !this.#withSlots.has(key)) continue;
      out.push({
        address: hexToBytes(key) as Address,
        storageKeys: [...this.#accounts.get(key)!].sort().map((slot) => hexToBytes(slot) as Hash32),
      });
    }
    return out;
  }
}

function addressKey(word: bigint): string {
  return `0x${(word & ADDRESS_MASK).toString(16).padStart(40, "0")}`;
}
