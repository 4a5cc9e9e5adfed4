import { bytesToHex } from "@nodex/types";
import {
  type ExecutionTracer,
  type FrameEnd,
  TraceAbort,
  type TraceStateReader,
  type TraceStep,
  type TxStart,
} from "./tracing.js";

/** One account in geth's `prestateTracer` format: empty members left out. */
export interface PrestateAccount {
  balance?: string;
  nonce?: number;
  code?: string;
  storage?: Record<string, string>;
}

export type PrestateResult =
  | Record<string, PrestateAccount>
  | { pre: Record<string, PrestateAccount>; post: Record<string, PrestateAccount> };

interface Seen {
  readonly address: Uint8Array;
  readonly balance: bigint;
  readonly nonce: bigint;
  readonly code: Uint8Array;
  readonly exists: boolean;
  /** Slot (64 hex, `0x`) → value (64 hex, `0x`) before the transaction. */
  readonly storage: Map<string, string>;
}

const ZERO_WORD = `0x${"0".repeat(64)}`;

/**
 * Geth's `prestateTracer`: the accounts a transaction touched (sender, recipient, the block's
 * beneficiary, accounts read or called, slots read or written) as they were before it. With
 * `diffMode`, `{pre, post}` of the members that changed only.
 */
export class PrestateTracer implements ExecutionTracer {
  readonly #diffMode: boolean;
  readonly #seen = new Map<string, Seen>();
  readonly #created = new Set<string>();
  readonly #deadline: number;
  #post: Record<string, PrestateAccount> | undefined;
  #steps = 0;

  /** `deadline`: a `Date.now()` past which the trace stops with `TraceAbort("deadline")`. */
  constructor(opts: { diffMode?: boolean; deadline?: number } = {}) {
    this.#diffMode = opts.diffMode === true;
    this.#deadline = opts.deadline ?? 0;
  }

  async txStart(tx: TxStart, state: TraceStateReader): Promise<void> {
    await this.#account(tx.from, state);
    if (tx.to !== null) await this.#account(tx.to, state);
    await this.#account(tx.coinbase, state);
  }

  async step(step: TraceStep): Promise<void> {
    if (this.#deadline > 0 && this.#steps++ % 4096 === 0 && Date.now() > this.#deadline)
      throw new TraceAbort("deadline", "the trace ran over the request's time limit");
    const op = step.op;
    const state = step.state;
    const depth = step.stackLength();
    switch (op) {
      case 0x54: // SLOAD
      case 0x55: // SSTORE
        if (depth >= 1) await this.#slot(step.address, step.peek(0), state);
        return;
      case 0x31: // BALANCE
      case 0x3b: // EXTCODESIZE
      case 0x3c: // EXTCODECOPY
      case 0x3f: // EXTCODEHASH
      case 0xff: // SELFDESTRUCT
        if (depth >= 1) await this.#account(addressOf(step.peek(0)), state);
        return;
      case 0xf1: // CALL
      case 0xf2: // CALLCODE
      case 0xf4: // DELEGATECALL
      case 0xfa: // STATICCALL
        if (depth >= 2) await this.#account(addressOf(step.peek(1)), state);
        return;
      default:
    }
  }

  exit(end: FrameEnd): void {
    if (end.createdAddress === undefined || end.error !== undefined) return;
    const key = bytesToHex(end.createdAddress);
    this.#created.add(key);
    if (!this.#seen.has(key))
      this.#seen.set(key, {
        address: end.createdAddress,
        balance: 0n,
        nonce: 0n,
        code: new Uint8Array(),
        exists: false,
        storage: new Map(),
      });
  }

  async txEnd(_end: unknown, state: TraceStateReader): Promise<void> {
    if (!this.#diffMode) return;
    const post: Record<string, PrestateAccount> = {};
    for (const [key, pre] of this.#seen) {
      const now = await state.account(pre.address);
      const code = now === undefined ? new Uint8Array() : await state.code(pre.address);
      const changed: PrestateAccount = {};
      if (now !== undefined) {
        if (now.balance !== pre.balance) changed.balance = quantity(now.balance);
        if (now.nonce !== pre.nonce) changed.nonce = Number(now.nonce);
        if (bytesToHex(code) !== bytesToHex(pre.code) && code.length > 0)
          changed.code = bytesToHex(code);
      }
      const storage: Record<string, string> = {};
      let slotsChanged = false;
      for (const [slot, before] of pre.storage) {
        const after = bytesToHex(await state.storage(pre.address, hexToWord(slot)));
        if (after === before) {
          pre.storage.delete(slot);
          continue;
        }
        slotsChanged = true;
        if (after !== ZERO_WORD) storage[slot] = after;
      }
      if (Object.keys(storage).length > 0) changed.storage = storage;
      const modified =
        now === undefined ||
        slotsChanged ||
        changed.balance !== undefined ||
        changed.nonce !== undefined ||
        changed.code !== undefined;
      if (modified) {
        if (now !== undefined) post[key] = changed;
      } else this.#seen.delete(key);
    }
    this.#post = post;
  }

  result(): PrestateResult {
    const pre: Record<string, PrestateAccount> = {};
    for (const [key, seen] of this.#seen) {
      if (this.#created.has(key) && !seen.exists) continue;
      if (this.#diffMode && !seen.exists) continue;
      const account: PrestateAccount = { balance: quantity(seen.balance) };
      if (seen.nonce > 0n) account.nonce = Number(seen.nonce);
      if (seen.code.length > 0) account.code = bytesToHex(seen.code);
      const storage: Record<string, string> = {};
      for (const [slot, value] of seen.storage) {
        if (this.#diffMode && value === ZERO_WORD) continue;
        storage[slot] = value;
      }
      if (Object.keys(storage).length > 0) account.storage = storage;
      pre[key] = account;
    }
    return this.#diffMode ? { pre, post: this.#post ?? {} } : pre;
  }

  async #account(address: Uint8Array, state: TraceStateReader): Promise<Seen> {
    const key = bytesToHex(address);
    const known = this.#seen.get(key);
    if (known !== undefined) return known;
    const account = await state.account(address);
    const seen: Seen = {
      address,
      balance: account?.balance ?? 0n,
      nonce: account?.nonce ?? 0n,
      code: account === undefined ? new Uint8Array() : await state.code(address),
      exists: account !== undefined,
      storage: new Map(),
    };
    this.#seen.set(key, seen);
    return seen;
  }

  async #slot(address: Uint8Array, slot: bigint, state: TraceStateReader): Promise<void> {
    const seen = await this.#account(address, state);
    const key = `0x${slot.toString(16).padStart(64, "0")}`;
    if (seen.storage.has(key)) return;
    seen.storage.set(key, bytesToHex(await state.storage(address, hexToWord(key))));
  }
}

function quantity(value: bigint): string {
  return `0x${value.toString(16)}`;
}

function hexToWord(hex: string): Uint8Array {
  return Uint8Array.from(Buffer.from(hex.slice(2), "hex"));
}

function addressOf(value: bigint): Uint8Array {
  const out = new Uint8Array(20);
  let v = value;
  for (let i = 19; i >= 0; i--) {
    out[i] = Number(v & 0xffn);
    v >>= 8n;
  }
  return out;
}
