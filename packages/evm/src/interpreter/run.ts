import type { StateManagerInterface } from "@ethereumjs/common";
import { type Address, bytesToUnprefixedHex, type Hash32, keccak256, type Log } from "@nodex/types";
import type { CodeByHash } from "../callState.js";
import { CONSOLE_ADDRESS_KEY } from "../consoleLog.js";
import { TraceAbort } from "../tracing.js";
import { bytesValue, SMALL, wordBytes, wordOf, writeWord } from "../words.js";
import {
  type AccountView,
  ADDRESS_MASK,
  accountView,
  addressKey,
  type BaseAccount,
  KECCAK_EMPTY,
  KECCAK_EMPTY_KEY,
  libraryAddress,
  NO_ACCOUNT,
  type StateReads,
} from "./accounts.js";
import { exp, exponentBytes, MASK, signed } from "./arithmetic.js";
import type { CallEnvironment, CallRules, TransactionResult } from "./callRules.js";
import { analyse } from "./code.js";
import type { Gas } from "./gas.js";
import {
  HALTED,
  Halt,
  INVALID_JUMP,
  INVALID_OPCODE,
  OUT_OF_GAS,
  STACK_OVERFLOW,
  STACK_UNDERFLOW,
  STATIC_STATE_CHANGE,
  Unsupported,
} from "./halts.js";
import { copyPadded, EMPTY, Memory, small, words } from "./memory.js";
import { Op } from "./opcodes.js";
import { sloadGas, sstoreGas, sstoreRefund } from "./storage.js";

/**
 * A call's run: its frames, and the dispatch of their opcodes (`#exec`, one `switch` with a
 * case per opcode of `Op`, in the order of the opcodes). Each case is written as its byte, typed
 * as its name (`case 0x54 satisfies typeof Op.SLOAD:`, which tsc checks and erases to
 * `case 0x54:`): V8 makes a jump table only of a `switch` whose cases are number literals, and
 * compares one case after the other when they are `Op.SLOAD`, which made an ERC-20's
 * `balanceOf` call some 40 % slower. The rules that are more than a few
 * lines live beside it, by family: arithmetic (`arithmetic.ts`), memory (`memory.ts`), storage
 * (`storage.ts`: SLOAD's and SSTORE's costs and refunds), accounts (`accounts.ts`), code
 * analysis (`code.ts`); calls (`#call`) and logs (`#keepLog`) are methods of the run, which
 * holds the state they change.
 */

const STACK_LIMIT = 1024;
const CALL_DEPTH_LIMIT = 1024;

/** What a frame ended with. */
export interface FrameEnd {
  readonly success: boolean;
  readonly gasLeft: number;
  readonly output: Uint8Array;
}

interface Frame {
  readonly address: bigint;
  readonly key: string;
  readonly caller: bigint;
  readonly value: bigint;
  readonly data: Uint8Array;
  readonly code: Uint8Array;
  readonly gas: number;
  readonly isStatic: boolean;
  readonly depth: number;
}

/** One call: its warm sets, its writes and their undo log, the accounts it read. */
export class CallRun {
  readonly #base: StateManagerInterface;
  readonly #codes: CodeByHash;
  readonly #rules: CallRules;
  readonly #g: Gas;
  readonly #env: CallEnvironment;
  /** `env.deadline`, and the jumps taken since it was last checked. */
  readonly #deadline: number;
  #jumps = 0;
  readonly #fees: Int32Array;
  readonly #origin: bigint;
  readonly #originKey: string;
  readonly #warmAddresses = new Set<string>();
  readonly #warmSlots = new Map<string, Set<bigint>>();
  readonly #reads: StateReads;
  /** Values read from the base state (the slots' values before the call), shared. */
  readonly #original: Map<string, Map<bigint, bigint>>;
  /** Accounts read from the base state, shared. */
  readonly #accounts: Map<string, BaseAccount | null>;
  /** The sender as this call sees it (one more nonce). */
  #originView: AccountView | null | undefined;
  /** Balances as value moved them in this call. */
  readonly #balances = new Map<string, bigint>();
  readonly #written = new Map<string, Map<bigint, bigint>>();
  readonly #transient = new Map<string, Map<bigint, bigint>>();
  /** Undo actions of writes and warm-ups, undone back to a frame's mark when it fails. */
  readonly #undo: (() => void)[] = [];
  /** A transaction's run (`transact`): it keeps logs and refunds, and pays no top-up. */
  readonly #tx: boolean;
  /** The sender's balance once it has paid for its gas (a transaction's run). */
  readonly #senderBalance: bigint;
  #refund = 0;
  /**
   * With `env.console`: the input of each call to `console.sol`'s address, kept also when the
   * frame that made it fails (as Hardhat prints them).
   */
  readonly consoleCalls: Uint8Array[] | undefined;
  /** Made with its first log: an array made empty holds small integers first (V8's elements kinds). */
  #logs: Log[] | undefined;

  constructor(
    base: StateManagerInterface,
    codes: CodeByHash,
    rules: CallRules,
    g: Gas,
    env: CallEnvironment,
    reads: StateReads,
    senderBalance: bigint | undefined,
  ) {
    this.#base = base;
    this.#tx = senderBalance !== undefined;
    this.#senderBalance = senderBalance ?? 0n;
    this.#reads = reads;
    this.#original = reads.storage;
    this.#accounts = reads.accounts;
    this.#codes = codes;
    this.#rules = rules;
    this.#g = g;
    this.#env = env;
    this.#deadline = env.deadline ?? 0;
    // A call made straight to the console address is one of its calls too.
    this.consoleCalls =
      env.console !== true
        ? undefined
        : bytesToUnprefixedHex(env.to) === CONSOLE_ADDRESS_KEY
          ? [env.data]
          : [];
    this.#fees = rules.fees;
    this.#origin = bytesValue(env.from);
    this.#originKey = bytesToUnprefixedHex(env.from);
    // Warm from the start, for good (EIP-2929, EIP-3651): sender, target, coinbase (and the
    // precompiles, see #touch).
    this.#warmAddresses.add(this.#originKey);
    this.#warmAddresses.add(bytesToUnprefixedHex(env.to));
    this.#warmAddresses.add(bytesToUnprefixedHex(env.coinbase));
  }

  async top(): Promise<FrameEnd> {
    const env = this.#env;
    const key = bytesToUnprefixedHex(env.to);
    // Before the frame's mark: a failed transaction's sender keeps what it paid for gas.
    if (this.#tx) this.#balances.set(this.#originKey, this.#senderBalance);
    else if (env.value > 0n) {
      // The library's run raises the sender's balance to the value when it is short of it.
      const balance = (await this.#account(this.#originKey))?.balance ?? 0n;
      if (balance < env.value) this.#setBalance(this.#originKey, env.value);
    }
    return this.#message(
      {
        address: bytesValue(env.to),
        key,
        caller: this.#origin,
        value: env.value,
        data: env.data,
        code: EMPTY,
        gas: env.gas,
        isStatic: false,
        depth: 0,
      },
      key,
      this.#originKey,
    );
  }

  /**
   * A message: its value moved from `from` (none for a DELEGATECALL, which moves nothing) to
   * the frame's address, then the code at `codeKey` run; a failure undoes both.
   */
  async #message(f: Frame, codeKey: string, from: string | undefined): Promise<FrameEnd> {
    const mark = this.#undo.length;
    if (this.#tx && from !== undefined) {
      // The library touches the target of every message but a DELEGATECALL's, and deletes it at
      // the transaction's end when it is empty (EIP-161): a run that touches an empty account
      // that exists is left to it.
      const target = await this.#baseAccount(f.key);
      if (target?.empty === true) throw new Unsupported("touches an empty account");
    }
    if (from !== undefined && f.value !== 0n) {
      const sender = (await this.#account(from))?.balance ?? 0n;
      this.#setBalance(from, sender - f.value);
      const receiver = (await this.#account(f.key))?.balance ?? 0n;
      this.#setBalance(f.key, receiver + f.value);
    }
    if (this.#rules.running.has(codeKey)) {
      const result = await this.#rules.runPrecompile(codeKey, f.data, f.gas);
      if (result !== undefined)
        return { success: true, gasLeft: f.gas - result.gasUsed, output: result.output };
      // It failed (out of gas, bad input): all its gas is gone, the value goes back.
      this.#undoTo(mark);
      return { success: false, gasLeft: 0, output: HALTED };
    }
    const code = await this.#codeOf(codeKey);
    if (code.length === 0) return { success: true, gasLeft: f.gas, output: EMPTY };
    return this.#frame(
      {
        address: f.address,
        key: f.key,
        caller: f.caller,
        value: f.value,
        data: f.data,
        code,
        gas: f.gas,
        isStatic: f.isStatic,
        depth: f.depth,
      },
      mark,
    );
  }

  /** Undoes the changes made since the undo log had `mark` entries. */
  #undoTo(mark: number): void {
    for (let i = this.#undo.length - 1; i >= mark; i--) this.#undo[i]!();
    this.#undo.length = mark;
  }

  /**
   * A transaction's changes once its top frame has ended (a failure has undone all but the
   * sender's payment for gas); `undefined` when an account it changed would be left empty.
   */
  changes(end: FrameEnd, gas: number): TransactionResult | undefined {
    for (const [key, balance] of this.#balances) {
      if (balance !== 0n || key === this.#originKey) continue;
      const base = this.#accounts.get(key);
      if (base === undefined || base === null || (base.nonceZero && !base.hasCode))
        return undefined;
    }
    const storage = new Map<string, Map<bigint, bigint>>();
    for (const [key, slots] of this.#written) {
      const original = this.#original.get(key);
      let changed: Map<bigint, bigint> | undefined;
      for (const [slot, value] of slots) {
        if (original?.get(slot) === value) continue;
        changed ??= new Map();
        changed.set(slot, value);
      }
      if (changed !== undefined) storage.set(key, changed);
    }
    return {
      success: end.success,
      output: end.output,
      gasUsed: gas - end.gasLeft,
      refund: end.success ? this.#refund : 0,
      logs: end.success ? (this.#logs ?? []) : [],
      balances: this.#balances,
      storage,
      ...(this.consoleCalls === undefined ? {} : { console: this.consoleCalls }),
    };
  }

  /** Sets the refund counter (a transaction's run), undone with the frame that set it. */
  #setRefund(refund: number): void {
    const before = this.#refund;
    this.#refund = refund;
    this.#undo.push(() => {
      this.#refund = before;
    });
  }

  /** Sets an account's balance in this call (undone with the frame that set it). */
  #setBalance(key: string, balance: bigint): void {
    const balances = this.#balances;
    const before = balances.get(key);
    balances.set(key, balance);
    this.#undo.push(() => {
      if (before === undefined) balances.delete(key);
      else balances.set(key, before);
    });
  }

  async #account(key: string): Promise<AccountView | null> {
    let view: AccountView | null;
    if (key === this.#originKey) {
      if (this.#originView === undefined) {
        // The library's run of a call raises the sender's nonce first: the sender exists.
        const account = await this.#baseAccount(key);
        this.#originView =
          account === null
            ? {
                balance: 0n,
                codeHash: KECCAK_EMPTY,
                codeKey: KECCAK_EMPTY_KEY,
                nonceZero: false,
                empty: false,
                hasCode: false,
              }
            : accountView(account, account.balance, false, false);
      }
      view = this.#originView;
    } else view = await this.#baseAccount(key);
    const balance = this.#balances.get(key);
    if (balance === undefined) return view;
    // A balance this call changed: an account that had none exists from then on.
    const base = view ?? NO_ACCOUNT;
    return accountView(
      base,
      balance,
      base.nonceZero,
      base.nonceZero && !base.hasCode && balance === 0n,
    );
  }

  async #baseAccount(key: string): Promise<BaseAccount | null> {
    let view = this.#accounts.get(key);
    if (view !== undefined) return view;
    const account = await this.#base.getAccount(libraryAddress(key));
    view =
      account === undefined
        ? null
        : {
            balance: account.balance,
            codeHash: account.codeHash,
            codeKey: `0x${bytesToUnprefixedHex(account.codeHash)}`,
            nonceZero: account.nonce === 0n,
            empty: account.isEmpty(),
            hasCode: account.isContract(),
          };
    this.#accounts.set(key, view);
    this.#reads.size++;
    return view;
  }

  async #codeOf(key: string): Promise<Uint8Array> {
    const account = await this.#account(key);
    if (account === null || !account.hasCode) return EMPTY;
    return (
      this.#codes.get(account.codeKey) ??
      this.#codes.set(account.codeKey, await this.#base.getCode(libraryAddress(key)))
    );
  }

  /** The slot's value before the call. */
  async #originalValue(key: string, slot: bigint): Promise<bigint> {
    let slots = this.#original.get(key);
    if (slots === undefined) {
      slots = new Map();
      this.#original.set(key, slots);
    }
    let value = slots.get(slot);
    if (value === undefined) {
      value = bytesValue(await this.#base.getStorage(libraryAddress(key), wordBytes(slot)));
      slots.set(slot, value);
      this.#reads.size++;
    }
    return value;
  }

  async #load(key: string, slot: bigint): Promise<bigint> {
    const written = this.#written.get(key)?.get(slot);
    return written ?? this.#originalValue(key, slot);
  }

  /** Writes a slot of `key` in `slots` (storage or transient storage), undone with its frame. */
  #setSlot(
    slots: Map<string, Map<bigint, bigint>>,
    key: string,
    slot: bigint,
    value: bigint,
  ): void {
    let map = slots.get(key);
    if (map === undefined) {
      map = new Map();
      slots.set(key, map);
    }
    const values = map;
    const before = values.get(slot);
    values.set(slot, value);
    this.#undo.push(() => {
      if (before === undefined) values.delete(slot);
      else values.set(slot, before);
    });
  }

  /** EIP-2929: the cost of touching an address, which is warm afterwards. */
  #touch(key: string): number {
    if (this.#warmAddresses.has(key) || this.#rules.precompiles.has(key)) return this.#g.warmRead;
    this.#warmAddresses.add(key);
    this.#undo.push(() => this.#warmAddresses.delete(key));
    return this.#g.coldAccount;
  }

  /** Whether the slot is warm (without warming it). */
  #isWarmSlot(key: string, slot: bigint): boolean {
    return this.#warmSlots.get(key)?.has(slot) === true;
  }

  /** Whether the slot was cold, warming it. */
  #warmSlot(key: string, slot: bigint): boolean {
    let slots = this.#warmSlots.get(key);
    if (slots === undefined) {
      slots = new Set();
      this.#warmSlots.set(key, slots);
    }
    if (slots.has(slot)) return false;
    slots.add(slot);
    const set = slots;
    this.#undo.push(() => set.delete(slot));
    return true;
  }

  #checkDeadline(): void {
    if ((++this.#jumps & 4095) === 0 && Date.now() > this.#deadline)
      throw new TraceAbort("deadline", "the call ran over its time budget");
  }

  /** Runs a frame; undoes its changes when it fails. */
  async #frame(f: Frame, mark: number): Promise<FrameEnd> {
    const mem = new Memory();
    let end: FrameEnd;
    try {
      end = await this.#exec(f, mem);
    } catch (error) {
      if (!(error instanceof Halt)) throw error;
      end = { success: false, gasLeft: 0, output: HALTED };
    } finally {
      mem.release();
    }
    if (!end.success) this.#undoTo(mark);
    return end;
  }

  async #exec(f: Frame, mem: Memory): Promise<FrameEnd> {
    const g = this.#g;
    const fees = this.#fees;
    const env = this.#env;
    const code = f.code;
    const length = code.length;
    const lengthWord = BigInt(length);
    const { jumps, pushes } = analyse(code);
    const stack: bigint[] = [];
    const memGas = g.memory;
    const quadDiv = g.quadDiv;
    let returnData: Uint8Array = EMPTY;
    let gas = f.gas;
    let pc = 0;

    while (pc < length) {
      const op = code[pc]!;
      const fee = fees[op]!;
      if (fee < 0) throw INVALID_OPCODE;
      gas -= fee;
      if (gas < 0) throw OUT_OF_GAS;
      const sp = stack.length;
      pc++;
      switch (op) {
        case 0x00 satisfies typeof Op.STOP:
          return { success: true, gasLeft: gas, output: EMPTY };
        case 0x01 satisfies typeof Op.ADD: {
          if (sp < 2) throw STACK_UNDERFLOW;
          const a = stack.pop()!;
          stack[sp - 2] = (a + stack[sp - 2]!) & MASK;
          break;
        }
        case 0x02 satisfies typeof Op.MUL: {
          if (sp < 2) throw STACK_UNDERFLOW;
          const a = stack.pop()!;
          stack[sp - 2] = (a * stack[sp - 2]!) & MASK;
          break;
        }
        case 0x03 satisfies typeof Op.SUB: {
          if (sp < 2) throw STACK_UNDERFLOW;
          const a = stack.pop()!;
          stack[sp - 2] = (a - stack[sp - 2]!) & MASK;
          break;
        }
        case 0x04 satisfies typeof Op.DIV: {
          if (sp < 2) throw STACK_UNDERFLOW;
          const a = stack.pop()!;
          const b = stack[sp - 2]!;
          stack[sp - 2] = b === 0n ? 0n : a / b;
          break;
        }
        case 0x05 satisfies typeof Op.SDIV: {
          if (sp < 2) throw STACK_UNDERFLOW;
          const a = stack.pop()!;
          const b = stack[sp - 2]!;
          stack[sp - 2] = b === 0n ? 0n : (signed(a) / signed(b)) & MASK;
          break;
        }
        case 0x06 satisfies typeof Op.MOD: {
          if (sp < 2) throw STACK_UNDERFLOW;
          const a = stack.pop()!;
          const b = stack[sp - 2]!;
          stack[sp - 2] = b === 0n ? 0n : a % b;
          break;
        }
        case 0x07 satisfies typeof Op.SMOD: {
          if (sp < 2) throw STACK_UNDERFLOW;
          const a = stack.pop()!;
          const b = stack[sp - 2]!;
          stack[sp - 2] = b === 0n ? 0n : (signed(a) % signed(b)) & MASK;
          break;
        }
        case 0x08 satisfies typeof Op.ADDMOD: {
          if (sp < 3) throw STACK_UNDERFLOW;
          const a = stack.pop()!;
          const b = stack.pop()!;
          const n = stack[sp - 3]!;
          stack[sp - 3] = n === 0n ? 0n : (a + b) % n;
          break;
        }
        case 0x09 satisfies typeof Op.MULMOD: {
          if (sp < 3) throw STACK_UNDERFLOW;
          const a = stack.pop()!;
          const b = stack.pop()!;
          const n = stack[sp - 3]!;
          stack[sp - 3] = n === 0n ? 0n : (a * b) % n;
          break;
        }
        case 0x0a satisfies typeof Op.EXP: {
          // EXP: 50 gas per byte of the exponent
          if (sp < 2) throw STACK_UNDERFLOW;
          const e = stack[sp - 2]!;
          if (e !== 0n) {
            gas -= g.expByte * exponentBytes(e);
            if (gas < 0) throw OUT_OF_GAS;
          }
          const a = stack.pop()!;
          stack[sp - 2] = exp(a, e);
          break;
        }
        case 0x0b satisfies typeof Op.SIGNEXTEND: {
          if (sp < 2) throw STACK_UNDERFLOW;
          const k = stack.pop()!;
          const x = stack[sp - 2]!;
          if (k < 31n) {
            const bit = Number(k) * 8 + 7;
            const low = (1n << BigInt(bit + 1)) - 1n;
            stack[sp - 2] = (x >> BigInt(bit)) & 1n ? x | (MASK ^ low) : x & low;
          }
          break;
        }
        case 0x10 satisfies typeof Op.LT: {
          if (sp < 2) throw STACK_UNDERFLOW;
          const a = stack.pop()!;
          stack[sp - 2] = a < stack[sp - 2]! ? 1n : 0n;
          break;
        }
        case 0x11 satisfies typeof Op.GT: {
          if (sp < 2) throw STACK_UNDERFLOW;
          const a = stack.pop()!;
          stack[sp - 2] = a > stack[sp - 2]! ? 1n : 0n;
          break;
        }
        case 0x12 satisfies typeof Op.SLT: {
          if (sp < 2) throw STACK_UNDERFLOW;
          const a = stack.pop()!;
          stack[sp - 2] = signed(a) < signed(stack[sp - 2]!) ? 1n : 0n;
          break;
        }
        case 0x13 satisfies typeof Op.SGT: {
          if (sp < 2) throw STACK_UNDERFLOW;
          const a = stack.pop()!;
          stack[sp - 2] = signed(a) > signed(stack[sp - 2]!) ? 1n : 0n;
          break;
        }
        case 0x14 satisfies typeof Op.EQ: {
          if (sp < 2) throw STACK_UNDERFLOW;
          const a = stack.pop()!;
          stack[sp - 2] = a === stack[sp - 2]! ? 1n : 0n;
          break;
        }
        case 0x15 satisfies typeof Op.ISZERO:
          if (sp < 1) throw STACK_UNDERFLOW;
          stack[sp - 1] = stack[sp - 1] === 0n ? 1n : 0n;
          break;
        case 0x16 satisfies typeof Op.AND: {
          if (sp < 2) throw STACK_UNDERFLOW;
          const a = stack.pop()!;
          stack[sp - 2] = a & stack[sp - 2]!;
          break;
        }
        case 0x17 satisfies typeof Op.OR: {
          if (sp < 2) throw STACK_UNDERFLOW;
          const a = stack.pop()!;
          stack[sp - 2] = a | stack[sp - 2]!;
          break;
        }
        case 0x18 satisfies typeof Op.XOR: {
          if (sp < 2) throw STACK_UNDERFLOW;
          const a = stack.pop()!;
          stack[sp - 2] = a ^ stack[sp - 2]!;
          break;
        }
        case 0x19 satisfies typeof Op.NOT:
          if (sp < 1) throw STACK_UNDERFLOW;
          stack[sp - 1] = MASK ^ stack[sp - 1]!;
          break;
        case 0x1a satisfies typeof Op.BYTE: {
          if (sp < 2) throw STACK_UNDERFLOW;
          const i = stack.pop()!;
          const x = stack[sp - 2]!;
          stack[sp - 2] = i < 32n ? (x >> BigInt(248 - Number(i) * 8)) & 0xffn : 0n;
          break;
        }
        case 0x1b satisfies typeof Op.SHL: {
          if (sp < 2) throw STACK_UNDERFLOW;
          const s = stack.pop()!;
          stack[sp - 2] = s < 256n ? (stack[sp - 2]! << s) & MASK : 0n;
          break;
        }
        case 0x1c satisfies typeof Op.SHR: {
          if (sp < 2) throw STACK_UNDERFLOW;
          const s = stack.pop()!;
          stack[sp - 2] = s < 256n ? stack[sp - 2]! >> s : 0n;
          break;
        }
        case 0x1d satisfies typeof Op.SAR: {
          if (sp < 2) throw STACK_UNDERFLOW;
          const s = stack.pop()!;
          const x = signed(stack[sp - 2]!);
          stack[sp - 2] = s < 256n ? (x >> s) & MASK : x < 0n ? MASK : 0n;
          break;
        }
        case 0x20 satisfies typeof Op.KECCAK256: {
          if (sp < 2) throw STACK_UNDERFLOW;
          const offset = stack[sp - 1]!;
          const size = small(stack[sp - 2]!);
          const o = size === 0 ? 0 : small(offset);
          gas -= mem.expand(o, size, memGas, quadDiv) + g.keccakWord * words(size);
          if (!(gas >= 0)) throw OUT_OF_GAS;
          stack.pop();
          stack[sp - 2] = bytesValue(keccak256(mem.buf.subarray(o, o + size)));
          break;
        }
        case 0x30 satisfies typeof Op.ADDRESS:
          stack.push(f.address);
          break;
        case 0x31 satisfies typeof Op.BALANCE: {
          if (sp < 1) throw STACK_UNDERFLOW;
          const key = addressKey(stack[sp - 1]!);
          gas -= this.#touch(key);
          if (gas < 0) throw OUT_OF_GAS;
          stack[sp - 1] = (await this.#account(key))?.balance ?? 0n;
          break;
        }
        case 0x32 satisfies typeof Op.ORIGIN:
          stack.push(this.#origin);
          break;
        case 0x33 satisfies typeof Op.CALLER:
          stack.push(f.caller);
          break;
        case 0x34 satisfies typeof Op.CALLVALUE:
          stack.push(f.value);
          break;
        case 0x35 satisfies typeof Op.CALLDATALOAD: {
          if (sp < 1) throw STACK_UNDERFLOW;
          const at = stack[sp - 1]!;
          const data = f.data;
          if (at >= BigInt(data.length)) stack[sp - 1] = 0n;
          else {
            const i = Number(at);
            if (i + 32 <= data.length) stack[sp - 1] = wordOf(data, i, 32);
            else {
              // past the end of the data: zeros
              stack[sp - 1] =
                wordOf(data, i, data.length - i) << BigInt(8 * (32 - data.length + i));
            }
          }
          break;
        }
        case 0x36 satisfies typeof Op.CALLDATASIZE:
          stack.push(BigInt(f.data.length));
          break;
        case 0x37 satisfies typeof Op.CALLDATACOPY:
        case 0x39 satisfies typeof Op.CODECOPY:
        case 0x3e satisfies typeof Op.RETURNDATACOPY: {
          if (sp < 3) throw STACK_UNDERFLOW;
          const to = stack[sp - 1]!;
          const from = stack[sp - 2]!;
          const size = stack[sp - 3]!;
          if (op === Op.RETURNDATACOPY && from + size > BigInt(returnData.length)) throw OUT_OF_GAS;
          const n = small(size);
          const t = n === 0 ? 0 : small(to);
          gas -= mem.expand(t, n, memGas, quadDiv) + (n === 0 ? 0 : g.copy * words(n));
          if (!(gas >= 0)) throw OUT_OF_GAS;
          stack.length = sp - 3;
          const source = op === Op.CALLDATACOPY ? f.data : op === Op.CODECOPY ? code : returnData;
          copyPadded(mem.buf, t, source, from, n);
          break;
        }
        case 0x38 satisfies typeof Op.CODESIZE:
          stack.push(BigInt(length));
          break;
        case 0x3a satisfies typeof Op.GASPRICE:
          stack.push(env.gasPrice);
          break;
        case 0x3b satisfies typeof Op.EXTCODESIZE: {
          if (sp < 1) throw STACK_UNDERFLOW;
          const key = addressKey(stack[sp - 1]!);
          gas -= this.#touch(key);
          if (gas < 0) throw OUT_OF_GAS;
          stack[sp - 1] = BigInt((await this.#extCode(key)).length);
          break;
        }
        case 0x3c satisfies typeof Op.EXTCODECOPY: {
          if (sp < 4) throw STACK_UNDERFLOW;
          const key = addressKey(stack[sp - 1]!);
          const to = stack[sp - 2]!;
          const from = stack[sp - 3]!;
          const n = small(stack[sp - 4]!);
          const t = n === 0 ? 0 : small(to);
          gas -= mem.expand(t, n, memGas, quadDiv);
          gas -= this.#touch(key);
          gas -= n === 0 ? 0 : g.copy * words(n);
          if (!(gas >= 0)) throw OUT_OF_GAS;
          stack.length = sp - 4;
          copyPadded(mem.buf, t, await this.#extCode(key), from, n);
          break;
        }
        case 0x3d satisfies typeof Op.RETURNDATASIZE:
          stack.push(BigInt(returnData.length));
          break;
        case 0x3f satisfies typeof Op.EXTCODEHASH: {
          if (sp < 1) throw STACK_UNDERFLOW;
          const key = addressKey(stack[sp - 1]!);
          gas -= this.#touch(key);
          if (gas < 0) throw OUT_OF_GAS;
          await this.#extCode(key);
          const account = await this.#account(key);
          stack[sp - 1] = account === null || account.empty ? 0n : bytesValue(account.codeHash);
          break;
        }
        case 0x40 satisfies typeof Op.BLOCKHASH:
          throw new Unsupported("BLOCKHASH");
        case 0x41 satisfies typeof Op.COINBASE:
          stack.push(bytesValue(env.coinbase));
          break;
        case 0x42 satisfies typeof Op.TIMESTAMP:
          stack.push(env.timestamp);
          break;
        case 0x43 satisfies typeof Op.NUMBER:
          stack.push(env.number);
          break;
        case 0x44 satisfies typeof Op.PREVRANDAO: // the block's difficulty on this chain
          stack.push(env.difficulty);
          break;
        case 0x45 satisfies typeof Op.GASLIMIT:
          stack.push(env.gasLimit);
          break;
        case 0x46 satisfies typeof Op.CHAINID:
          stack.push(this.#rules.chainId);
          break;
        case 0x47 satisfies typeof Op.SELFBALANCE:
          stack.push((await this.#account(f.key))?.balance ?? 0n);
          break;
        case 0x48 satisfies typeof Op.BASEFEE: // none on this chain (0), the block's under Ethereum's fee rules
          stack.push(env.baseFee);
          break;
        case 0x49 satisfies typeof Op.BLOBHASH: // a call carries no blobs
          if (sp < 1) throw STACK_UNDERFLOW;
          stack[sp - 1] = 0n;
          break;
        case 0x4a satisfies typeof Op.BLOBBASEFEE: // 0 on this chain, the block's under Ethereum's fee rules
          stack.push(env.blobBaseFee);
          break;
        case 0x50 satisfies typeof Op.POP:
          if (sp < 1) throw STACK_UNDERFLOW;
          stack.pop();
          break;
        case 0x51 satisfies typeof Op.MLOAD: {
          if (sp < 1) throw STACK_UNDERFLOW;
          const o = small(stack[sp - 1]!);
          gas -= mem.expand(o, 32, memGas, quadDiv);
          if (!(gas >= 0)) throw OUT_OF_GAS;
          stack[sp - 1] = wordOf(mem.buf, o, 32);
          break;
        }
        case 0x52 satisfies typeof Op.MSTORE: {
          if (sp < 2) throw STACK_UNDERFLOW;
          const o = small(stack[sp - 1]!);
          gas -= mem.expand(o, 32, memGas, quadDiv);
          if (!(gas >= 0)) throw OUT_OF_GAS;
          stack.pop();
          writeWord(mem.buf, o, stack.pop()!);
          break;
        }
        case 0x53 satisfies typeof Op.MSTORE8: {
          if (sp < 2) throw STACK_UNDERFLOW;
          const o = small(stack[sp - 1]!);
          gas -= mem.expand(o, 1, memGas, quadDiv);
          if (!(gas >= 0)) throw OUT_OF_GAS;
          stack.pop();
          mem.buf[o] = Number(stack.pop()! & 0xffn);
          break;
        }
        case 0x54 satisfies typeof Op.SLOAD: {
          if (sp < 1) throw STACK_UNDERFLOW;
          const slot = stack[sp - 1]!;
          gas -= sloadGas(this.#warmSlot(f.key, slot), g);
          if (gas < 0) throw OUT_OF_GAS;
          stack[sp - 1] = await this.#load(f.key, slot);
          break;
        }
        case 0x55 satisfies typeof Op.SSTORE: {
          // SSTORE (EIP-2200 with EIP-2929's costs; refunds count only in a transaction's run)
          if (f.isStatic) throw STATIC_STATE_CHANGE;
          if (sp < 2) throw STACK_UNDERFLOW;
          if (gas <= g.sentry) throw OUT_OF_GAS;
          const slot = stack[sp - 1]!;
          const value = stack[sp - 2]!;
          const current = await this.#load(f.key, slot);
          const original = await this.#originalValue(f.key, slot);
          let cost = sstoreGas(original, current, value, g);
          if (this.#tx && current !== value) {
            const warm = this.#isWarmSlot(f.key, slot);
            const refund = sstoreRefund(this.#refund, original, current, value, warm, g);
            if (refund !== this.#refund) this.#setRefund(refund);
          }
          if (this.#warmSlot(f.key, slot)) cost += g.coldSload;
          gas -= cost;
          if (gas < 0) throw OUT_OF_GAS;
          this.#setSlot(this.#written, f.key, slot, value);
          stack.pop();
          stack.pop();
          break;
        }
        case 0x56 satisfies typeof Op.JUMP: {
          if (sp < 1) throw STACK_UNDERFLOW;
          const dest = stack.pop()!;
          if (dest >= lengthWord || jumps[Number(dest)] !== 1) throw INVALID_JUMP;
          pc = Number(dest);
          // Loops jump: where a run can spend its time, and so where it looks at the clock.
          if (this.#deadline !== 0) this.#checkDeadline();
          break;
        }
        case 0x57 satisfies typeof Op.JUMPI: {
          if (sp < 2) throw STACK_UNDERFLOW;
          const dest = stack.pop()!;
          const cond = stack.pop()!;
          if (cond !== 0n) {
            if (dest >= lengthWord || jumps[Number(dest)] !== 1) throw INVALID_JUMP;
            pc = Number(dest);
            if (this.#deadline !== 0) this.#checkDeadline();
          }
          break;
        }
        case 0x58 satisfies typeof Op.PC:
          stack.push(BigInt(pc - 1));
          break;
        case 0x59 satisfies typeof Op.MSIZE:
          stack.push(BigInt(mem.words * 32));
          break;
        case 0x5a satisfies typeof Op.GAS:
          stack.push(BigInt(gas));
          break;
        case 0x5b satisfies typeof Op.JUMPDEST:
          break;
        case 0x5c satisfies typeof Op.TLOAD: {
          if (sp < 1) throw STACK_UNDERFLOW;
          stack[sp - 1] = this.#transient.get(f.key)?.get(stack[sp - 1]!) ?? 0n;
          break;
        }
        case 0x5d satisfies typeof Op.TSTORE: {
          if (f.isStatic) throw STATIC_STATE_CHANGE;
          if (sp < 2) throw STACK_UNDERFLOW;
          this.#setSlot(this.#transient, f.key, stack[sp - 1]!, stack[sp - 2]!);
          stack.length = sp - 2;
          break;
        }
        case 0x5e satisfies typeof Op.MCOPY: {
          if (sp < 3) throw STACK_UNDERFLOW;
          const dst = stack[sp - 1]!;
          const src = stack[sp - 2]!;
          const n = small(stack[sp - 3]!);
          const s = n === 0 ? 0 : small(src);
          const d = n === 0 ? 0 : small(dst);
          gas -= 3 * words(n);
          gas -= mem.expand(s, n, memGas, quadDiv);
          gas -= mem.expand(d, n, memGas, quadDiv);
          if (!(gas >= 0)) throw OUT_OF_GAS;
          if (n > 0) mem.buf.copyWithin(d, s, s + n);
          stack.length = sp - 3;
          break;
        }
        case 0x5f satisfies typeof Op.PUSH0:
          stack.push(0n);
          break;
        case 0x60 satisfies typeof Op.PUSH1:
          stack.push(SMALL[code[pc] ?? 0]!);
          pc++;
          break;
        case 0x61 satisfies typeof Op.PUSH2:
          stack.push(BigInt(((code[pc] ?? 0) << 8) | (code[pc + 1] ?? 0)));
          pc += 2;
          break;
        case 0xa0 satisfies typeof Op.LOG0:
        case 0xa1 satisfies typeof Op.LOG1:
        case 0xa2 satisfies typeof Op.LOG2:
        case 0xa3 satisfies typeof Op.LOG3:
        case 0xa4 satisfies typeof Op.LOG4: {
          // LOG0…LOG4: charged; a call's logs go nowhere, a transaction's are kept
          if (f.isStatic) throw STATIC_STATE_CHANGE;
          const topics = op - Op.LOG0;
          if (sp < 2 + topics) throw STACK_UNDERFLOW;
          const n = small(stack[sp - 2]!);
          const o = n === 0 ? 0 : small(stack[sp - 1]!);
          gas -= mem.expand(o, n, memGas, quadDiv) + g.logTopic * topics + g.logData * n;
          if (!(gas >= 0)) throw OUT_OF_GAS;
          if (this.#tx)
            this.#keepLog(
              f,
              stack,
              sp,
              topics,
              n === 0 ? new Uint8Array(0) : mem.buf.slice(o, o + n),
            );
          stack.length = sp - 2 - topics;
          break;
        }
        case 0xf0 satisfies typeof Op.CREATE:
        case 0xf5 satisfies typeof Op.CREATE2:
          throw new Unsupported("creation");
        case 0xf1 satisfies typeof Op.CALL:
        case 0xf2 satisfies typeof Op.CALLCODE:
        case 0xf4 satisfies typeof Op.DELEGATECALL:
        case 0xfa satisfies typeof Op.STATICCALL: {
          const end = await this.#call(op, f, mem, stack, sp, gas);
          gas = end.gasLeft;
          returnData = end.output;
          stack.push(end.success ? 1n : 0n);
          break;
        }
        case 0xf3 satisfies typeof Op.RETURN:
        case 0xfd satisfies typeof Op.REVERT: {
          // RETURN, REVERT
          if (sp < 2) throw STACK_UNDERFLOW;
          const n = small(stack[sp - 2]!);
          const o = n === 0 ? 0 : small(stack[sp - 1]!);
          gas -= mem.expand(o, n, memGas, quadDiv);
          if (!(gas >= 0)) throw OUT_OF_GAS;
          const output = n === 0 ? EMPTY : mem.buf.slice(o, o + n);
          return { success: op === Op.RETURN, gasLeft: gas, output };
        }
        case 0xfe satisfies typeof Op.INVALID:
          throw INVALID_OPCODE;
        case 0xff satisfies typeof Op.SELFDESTRUCT:
          throw new Unsupported("SELFDESTRUCT");
        default:
          if (op >= Op.PUSH3 && op <= Op.PUSH32) {
            stack.push(pushes[pc - 1]!);
            pc += op - Op.PUSH0;
          } else if (op >= Op.DUP1 && op <= Op.DUP16) {
            const n = op - Op.DUP1 + 1;
            if (sp < n) throw STACK_UNDERFLOW;
            stack.push(stack[sp - n]!);
          } else if (op >= Op.SWAP1 && op <= Op.SWAP16) {
            const n = op - Op.SWAP1 + 1;
            if (sp <= n) throw STACK_UNDERFLOW;
            const top = stack[sp - 1]!;
            stack[sp - 1] = stack[sp - 1 - n]!;
            stack[sp - 1 - n] = top;
          } else throw new Unsupported(`opcode 0x${op.toString(16)}`);
      }
      if (stack.length > STACK_LIMIT) throw STACK_OVERFLOW;
    }
    return { success: true, gasLeft: gas, output: EMPTY };
  }

  /**
   * 0xf1 CALL, 0xf2 CALLCODE, 0xf4 DELEGATECALL, 0xfa STATICCALL, after their static fee: the
   * memory of input and output, the target's access (EIP-2929), the value's costs and stipend,
   * EIP-150's 63/64, then the message; its output is copied to memory. Answers the frame's gas
   * after the call (`gasLeft`), whether it succeeded and its return data (`output`). The caller
   * pops the arguments (`sp` of them are on `stack`).
   */
  async #call(
    op: number,
    f: Frame,
    mem: Memory,
    stack: bigint[],
    sp: number,
    gas: number,
  ): Promise<FrameEnd> {
    const g = this.#g;
    const memGas = g.memory;
    const quadDiv = g.quadDiv;
    const hasValue = op === Op.CALL || op === Op.CALLCODE;
    const pops = hasValue ? 7 : 6;
    if (sp < pops) throw STACK_UNDERFLOW;
    const requested = stack[sp - 1]!;
    const target = stack[sp - 2]! & ADDRESS_MASK;
    const key = addressKey(target);
    const value = hasValue ? stack[sp - 3]! : 0n;
    const at = sp - pops;
    const inSize = small(stack[at + 2]!);
    const inOffset = inSize === 0 ? 0 : small(stack[at + 3]!);
    const outSize = small(stack[at]!);
    const outOffset = outSize === 0 ? 0 : small(stack[at + 1]!);
    if (op === Op.CALL && f.isStatic && value !== 0n) throw STATIC_STATE_CHANGE;
    gas -= mem.expand(inOffset, inSize, memGas, quadDiv);
    gas -= mem.expand(outOffset, outSize, memGas, quadDiv);
    if (!(gas >= 0)) throw OUT_OF_GAS;
    gas -= this.#touch(key);
    if (value !== 0n) {
      gas -= g.valueTransfer;
      // CALL with value to an account that does not exist or is empty (EIP-161)
      if (op === Op.CALL) {
        const account = await this.#account(key);
        if (account === null || account.empty) gas -= g.newAccount;
      }
    }
    if (gas < 0) throw OUT_OF_GAS;
    // All but a 64th of what is left, at most what was asked (EIP-150).
    const allowed = gas - Math.floor(gas / 64);
    let given = requested < BigInt(allowed) ? Number(requested) : allowed;
    if (value !== 0n) {
      // The stipend: the callee gets it on top, and what it leaves comes back.
      gas += g.stipend;
      given += g.stipend;
    }
    stack.length = at;
    let returnData: Uint8Array = EMPTY;
    let success = false;
    if (
      f.depth + 1 <= CALL_DEPTH_LIMIT &&
      (value === 0n || ((await this.#account(f.key))?.balance ?? 0n) >= value)
    ) {
      gas -= given;
      if (this.consoleCalls !== undefined && key === CONSOLE_ADDRESS_KEY)
        this.consoleCalls.push(inSize === 0 ? EMPTY : mem.buf.slice(inOffset, inOffset + inSize));
      const end = await this.#message(
        {
          address: op === Op.CALL || op === Op.STATICCALL ? target : f.address,
          key: op === Op.CALL || op === Op.STATICCALL ? key : f.key,
          caller: op === Op.DELEGATECALL ? f.caller : f.address,
          value: op === Op.DELEGATECALL ? f.value : value,
          data: inSize === 0 ? EMPTY : mem.buf.slice(inOffset, inOffset + inSize),
          code: EMPTY,
          gas: given,
          isStatic: f.isStatic || op === Op.STATICCALL,
          depth: f.depth + 1,
        },
        key,
        op === Op.DELEGATECALL ? undefined : f.key,
      );
      gas += end.gasLeft;
      success = end.success;
      returnData = end.output; // empty when it halted
    }
    if (returnData.length > 0 && outSize > 0)
      mem.buf.set(returnData.subarray(0, Math.min(outSize, returnData.length)), outOffset);
    return { success, gasLeft: gas, output: returnData };
  }

  /** Keeps a transaction's log (a call's go nowhere), dropped with its frame when it fails. */
  #keepLog(f: Frame, stack: bigint[], sp: number, topics: number, data: Uint8Array): void {
    const words: Hash32[] = [];
    for (let t = 0; t < topics; t++) words.push(wordBytes(stack[sp - 3 - t]!) as Hash32);
    const log: Log = {
      address: wordBytes(f.address).subarray(12) as Address,
      topics: words,
      data,
    };
    const logs = this.#logs;
    if (logs === undefined) {
      this.#logs = [log];
      this.#undo.push(() => {
        this.#logs = undefined;
      });
    } else {
      logs.push(log);
      this.#undo.push(() => logs.pop());
    }
  }

  /** Code read by `EXTCODE*`: EOF code is left to the library, which reads it its own way. */
  async #extCode(key: string): Promise<Uint8Array> {
    const code = await this.#codeOf(key);
    if (code[0] === 0xef && code[1] === 0x00) throw new Unsupported("EOF code");
    return code;
  }
}
