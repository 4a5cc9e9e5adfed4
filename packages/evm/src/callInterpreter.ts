import type { StateManagerInterface } from "@ethereumjs/common";
import { Address as EJSAddress } from "@ethereumjs/util";
import { type Address, bytesToUnprefixedHex, type Hash32, keccak256, type Log } from "@nodex/types";
import type { CodeByHash } from "./callState.js";
import { VERIFIED_HARDFORK } from "./fastPaths.js";
import { bytesValue, SMALL, wordBytes, wordOf, writeWord } from "./words.js";

/**
 * An interpreter for calls that change nothing (`eth_call`): the message calls of a read, run
 * with number gas, plain arrays of BigInt words and the state read straight from the world
 * state, without `@ethereumjs/evm`'s message, interpreter, journal and state-manager objects
 * around each frame.
 *
 * It covers what reads do: every opcode of the chain's rules but the ones below, calls of all
 * four kinds between contracts and to precompiles (run on the library's own functions), value
 * moved by them and by the call itself (with the library's top-up of a sender short of it),
 * storage and transient storage written and reverted per message, EIP-2929 access costs,
 * EIP-2200 storage costs, logs (charged, dropped).
 * Anything else makes `call` answer `undefined`, and the caller runs the whole call again on
 * the library, from the start: nothing a call does outlives it, so a second run sees what the
 * first one saw. Left to the library:
 * - creations (`CREATE`, `CREATE2`, calls without `to`), `SELFDESTRUCT`, `BLOCKHASH`;
 * - code that starts with the EOF magic, read by `EXTCODE*`;
 * - a recursion deep enough to run out of JavaScript stack;
 * - a call that ends in an exceptional halt (out of gas, invalid opcode, …): the library gives
 *   the error its own words (unless the caller asks for no more than the failure: `halts`);
 * - opcodes of the rules this file does not know (an upgrade adds them to the library's table
 *   first, so they are noticed rather than misrun).
 *
 * The gas of each opcode is the library's: its static fees are read from the EVM's opcode table
 * and its parameters from the `Common`; the dynamic parts follow its gas handlers, in the same
 * order. `callInterpreter.test.ts` runs random programs and calls between contracts on both and
 * compares return data, status and gas used.
 */

const MASK = (1n << 256n) - 1n;
const SIGN_BIT = 1n << 255n;
const TWO_256 = 1n << 256n;
const ADDRESS_MASK = (1n << 160n) - 1n;
const EMPTY = new Uint8Array(0);
/** The largest frame gas the number arithmetic here takes: 2³², far above any block's limit. */
export const MAX_CALL_GAS = 2 ** 32;
/** Memory beyond this many words costs more than `MAX_CALL_GAS` (3w + w²/512 > 2³²). */
const MAX_WORDS = 2 ** 21;
const STACK_LIMIT = 1024;
const CALL_DEPTH_LIMIT = 1024;

/** Thrown inside a run when the call needs the library; `call` answers `undefined`. */
class Unsupported {
  constructor(readonly why: string) {}
}

/** An exceptional halt of a frame: all its gas is gone, its changes undone. */
class Halt {
  constructor(readonly error: string) {}
}

const OUT_OF_GAS = new Halt("out of gas");
const STACK_UNDERFLOW = new Halt("stack underflow");
const STACK_OVERFLOW = new Halt("stack overflow");
const INVALID_JUMP = new Halt("invalid JUMP");
const INVALID_OPCODE = new Halt("invalid opcode");
const STATIC_STATE_CHANGE = new Halt("static state change");

/** Jump destinations and push values of a code array, made once per array. */
interface CodeInfo {
  /** 1 where a JUMPDEST is an opcode (not push data). */
  readonly jumps: Uint8Array;
  /** The value each PUSH3…PUSH32 at that offset pushes (right-padded at the code's end). */
  readonly pushes: (bigint | undefined)[];
}

const codeInfos = new WeakMap<Uint8Array, CodeInfo>();

function analyse(code: Uint8Array): CodeInfo {
  let info = codeInfos.get(code);
  if (info !== undefined) return info;
  const jumps = new Uint8Array(code.length);
  const pushes: (bigint | undefined)[] = [];
  for (let pc = 0; pc < code.length; pc++) {
    const op = code[pc]!;
    if (op === 0x5b) jumps[pc] = 1;
    else if (op >= 0x60 && op <= 0x7f) {
      const n = op - 0x5f;
      if (n >= 3) {
        // Past the code's end a push reads zeros: its bytes are shifted up as if they were there.
        const have = Math.min(n, code.length - pc - 1);
        pushes[pc] = wordOf(code, pc + 1, have) << BigInt(8 * (n - have));
      }
      pc += n;
    }
  }
  info = { jumps, pushes };
  codeInfos.set(code, info);
  return info;
}

/** The gas rules of the chain, read from the library's tables once. */
export interface CallRules {
  /** Static fee of each opcode; -1 where the rules have no such opcode. */
  readonly fees: Int32Array;
  /** Addresses warm from the start as the library's precompile table lists them (40 hex digits). */
  readonly precompiles: ReadonlySet<string>;
  /** Those of them that run (a precompile taken out by the chain's rules stays in the table). */
  readonly running: ReadonlySet<string>;
  /** Runs the precompile at `key` as the library does (its own functions). */
  readonly runPrecompile: (
    key: string,
    data: Uint8Array,
    gas: number,
  ) => Promise<{ readonly gasUsed: number; readonly output: Uint8Array } | undefined>;
  readonly chainId: bigint;
  readonly param: (name: string) => bigint;
  /** The hardfork of the rules: the interpreter runs only `VERIFIED_HARDFORK`'s. */
  readonly hardfork: string;
}

/** The transaction and block a call runs in. */
export interface CallEnvironment {
  readonly from: Uint8Array;
  readonly to: Uint8Array;
  readonly data: Uint8Array;
  readonly value: bigint;
  /** Gas for execution: the call's gas less the intrinsic gas. */
  readonly gas: number;
  readonly gasPrice: bigint;
  readonly coinbase: Uint8Array;
  readonly number: bigint;
  readonly timestamp: bigint;
  readonly gasLimit: bigint;
  readonly difficulty: bigint;
  /** BASEFEE: 0 on the chain (Ethereum's fee rules give the block's). */
  readonly baseFee: bigint;
  /** BLOBBASEFEE: 0 on the chain, which has no blobs (Ethereum's fee rules give the block's). */
  readonly blobBaseFee: bigint;
}

/**
 * What a transaction's run did (`CallInterpreter.transact`), for the executor to write into the
 * state: nothing is written while it runs.
 */
export interface TransactionResult {
  readonly success: boolean;
  /** The return data, or the revert data. */
  readonly output: Uint8Array;
  /** Execution gas used (without the intrinsic gas), before refunds. */
  readonly gasUsed: number;
  /** The refund counter at the end (EIP-2200 with EIP-3529's values), before its cap. */
  readonly refund: number;
  /** The logs, in order (none when it failed). */
  readonly logs: readonly Log[];
  /** Every balance it changed, by address key (40 hex digits), the sender's included. */
  readonly balances: ReadonlyMap<string, bigint>;
  /** The slots whose value it changed, by address key, with their new values. */
  readonly storage: ReadonlyMap<string, ReadonlyMap<bigint, bigint>>;
}

export interface CallResult {
  readonly success: boolean;
  /** It ended in an exceptional halt (only with `halts`): all its gas is used. */
  readonly halted: boolean;
  /** The return data, or the revert data. */
  readonly output: Uint8Array;
  /** Execution gas used (without the intrinsic gas). */
  readonly gasUsed: number;
}

/** What a frame ended with. */
interface FrameEnd {
  readonly success: boolean;
  readonly gasLeft: number;
  readonly output: Uint8Array;
}

/** An account as a call sees it. */
type AccountView = BaseAccount;

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

function addressKey(word: bigint): string {
  return (word & ADDRESS_MASK).toString(16).padStart(40, "0");
}

function signed(x: bigint): bigint {
  return x >= SIGN_BIT ? x - TWO_256 : x;
}

function exp(base: bigint, exponent: bigint): bigint {
  let result = 1n;
  let b = base & MASK;
  let e = exponent;
  while (e > 0n) {
    if ((e & 1n) === 1n) result = (result * b) & MASK;
    e >>= 1n;
    if (e > 0n) b = (b * b) & MASK;
  }
  return result;
}

/** A small non-negative number from a word, or Infinity when it is beyond any memory. */
function small(word: bigint): number {
  return word > 0xffffffffn ? Number.POSITIVE_INFINITY : Number(word);
}

function words(size: number): number {
  return Math.ceil(size / 32);
}

/** Memory buffers of finished frames, zeroed, for the next frames (of any call). */
const POOLED_BYTES = 4096;
const pool: Uint8Array[] = [];

/** A frame's memory and what it has cost so far. */
class Memory {
  buf: Uint8Array = EMPTY;
  words = 0;
  cost = 0;

  /** Gives the buffer back to the pool once the frame is over (nothing may keep views of it). */
  release(): void {
    const buf = this.buf;
    if (buf.length === POOLED_BYTES && pool.length < 64) {
      buf.fill(0, 0, this.words * 32);
      pool.push(buf);
    }
    this.buf = EMPTY;
  }

  /**
   * The gas to grow memory over `[offset, offset + size)` (nothing when `size` is 0), growing it.
   * Infinity when it cannot be paid with any gas a call has.
   */
  expand(offset: number, size: number, memoryGas: number, quadDiv: number): number {
    if (size === 0) return 0;
    const end = offset + size;
    if (end > MAX_WORDS * 32) return Number.POSITIVE_INFINITY;
    const w = Math.ceil(end / 32);
    if (w <= this.words) return 0;
    const cost = w * memoryGas + Math.floor((w * w) / quadDiv);
    const extra = cost - this.cost;
    this.cost = cost;
    this.words = w;
    if (this.buf.length < w * 32) {
      if (this.buf.length === 0 && w * 32 <= POOLED_BYTES) {
        this.buf = pool.pop() ?? new Uint8Array(POOLED_BYTES);
      } else {
        const buf = new Uint8Array(Math.max(w * 32, this.buf.length * 2));
        buf.set(this.buf);
        this.buf = buf;
      }
    }
    return extra;
  }
}

/** Copies `size` bytes of `source` from `from` (zeros past its end) into `target` at `to`. */
function copyPadded(
  target: Uint8Array,
  to: number,
  source: Uint8Array,
  from: bigint,
  size: number,
): void {
  if (size === 0) return;
  const start = from > BigInt(source.length) ? source.length : Number(from);
  const available = Math.min(size, source.length - start);
  if (available > 0) target.set(source.subarray(start, start + available), to);
  if (available < size) target.fill(0, to + Math.max(available, 0), to + size);
}

/** An account as the state holds it (a call's sender is seen with one more nonce: `#account`). */
interface BaseAccount {
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
function accountView(
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

/**
 * Runs calls on a world state's `StateManagerInterface` (only read). One interpreter serves any
 * number of calls at once: each call's changes live in its own `CallRun`.
 */
export class CallInterpreter {
  readonly #rules: CallRules;
  readonly #code: CodeByHash;
  readonly #g: Record<string, number>;

  constructor(rules: CallRules, code: CodeByHash) {
    // Its opcodes and gas rules are Cancun's: another hardfork's calls are the library's.
    if (rules.hardfork !== VERIFIED_HARDFORK)
      throw new RangeError(
        `the interpreter of calls runs ${VERIFIED_HARDFORK}'s rules, not ${rules.hardfork}'s`,
      );
    this.#rules = rules;
    this.#code = code;
    const p = (name: string) => Number(rules.param(name));
    this.#g = {
      memory: p("memoryGas"),
      quadDiv: p("quadCoefficientDivGas"),
      copy: p("copyGas"),
      keccakWord: p("keccak256WordGas"),
      expByte: p("expByteGas"),
      logTopic: p("logTopicGas"),
      logData: p("logDataGas"),
      warmRead: p("warmstoragereadGas"),
      coldSload: p("coldsloadGas"),
      coldAccount: p("coldaccountaccessGas"),
      sentry: p("sstoreSentryEIP2200Gas"),
      sstoreNoop: p("sstoreNoopEIP2200Gas"),
      sstoreDirty: p("sstoreDirtyEIP2200Gas"),
      sstoreInit: p("sstoreInitEIP2200Gas"),
      sstoreClean: p("sstoreCleanEIP2200Gas"),
      valueTransfer: p("callValueTransferGas"),
      newAccount: p("callNewAccountGas"),
      stipend: p("callStipendGas"),
      sstoreReset: p("sstoreResetGas"),
      sstoreInitRefund: p("sstoreInitRefundEIP2200Gas"),
      sstoreCleanRefund: p("sstoreCleanRefundEIP2200Gas"),
      sstoreClearRefund: p("sstoreClearRefundEIP2200Gas"),
    };
  }

  /**
   * The call's result, or `undefined` when the library must run it (see the file's comment).
   * With `halts`, a call that ends in an exceptional halt is answered too, as a failure that
   * used all its gas (for callers that need no more than that, as `eth_estimateGas`'s probes).
   */
  async call(
    base: StateManagerInterface,
    env: CallEnvironment,
    halts = false,
    reads: StateReads = new StateReads().at(0),
  ): Promise<CallResult | undefined> {
    if (!(env.gas >= 0 && env.gas <= MAX_CALL_GAS)) return undefined;
    const run = new CallRun(base, this.#code, this.#rules, this.#g, env, reads, undefined);
    try {
      const end = await run.top();
      if (end.output === HALTED && !halts) return undefined;
      return {
        success: end.success,
        halted: end.output === HALTED,
        output: end.output,
        gasUsed: env.gas - end.gasLeft,
      };
    } catch (error) {
      return unsupported(error);
    }
  }

  /**
   * Runs a transaction's message call (not a creation) on `base`, which it only reads: the
   * sender has paid the gas up front (`senderBalance` is what it holds after that) and its
   * nonce is raised. The changes come back in the result, for the caller to write. `undefined`
   * when the library must run it: what `call` leaves to it, a transaction that ends in an
   * exceptional halt (the library gives the error its words), and one that would leave an
   * account empty (EIP-161's deletion of touched empty accounts is the library's).
   */
  async transact(
    base: StateManagerInterface,
    env: CallEnvironment,
    senderBalance: bigint,
    reads: StateReads = new StateReads().at(0),
  ): Promise<TransactionResult | undefined> {
    if (!(env.gas >= 0 && env.gas <= MAX_CALL_GAS)) return undefined;
    const run = new CallRun(base, this.#code, this.#rules, this.#g, env, reads, senderBalance);
    try {
      const end = await run.top();
      if (end.output === HALTED) return undefined;
      return run.changes(end, env.gas);
    } catch (error) {
      return unsupported(error);
    }
  }
}

/** `undefined` for a run that needs the library; rethrows anything else. */
function unsupported(error: unknown): undefined {
  if (error instanceof Unsupported) return undefined;
  // Out of JavaScript stack in a deep recursion of frames: the library's run decides.
  if (error instanceof RangeError) return undefined;
  throw error;
}

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

/** One call: its warm sets, its writes and their undo log, the accounts it read. */
class CallRun {
  readonly #base: StateManagerInterface;
  readonly #codes: CodeByHash;
  readonly #rules: CallRules;
  readonly #g: Record<string, number>;
  readonly #env: CallEnvironment;
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
  /** Made with its first log: an array made empty holds small integers first (V8's elements kinds). */
  #logs: Log[] | undefined;

  constructor(
    base: StateManagerInterface,
    codes: CodeByHash,
    rules: CallRules,
    g: Record<string, number>,
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
    if (this.#warmAddresses.has(key) || this.#rules.precompiles.has(key)) return this.#g.warmRead!;
    this.#warmAddresses.add(key);
    this.#undo.push(() => this.#warmAddresses.delete(key));
    return this.#g.coldAccount!;
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

  /**
   * The refund counter's change for an SSTORE that changes the slot, as the library's EIP-2200
   * handler makes it (its reductions stop at zero), with EIP-2929's refunds for a warm slot.
   */
  #sstoreRefund(key: string, slot: bigint, original: bigint, current: bigint, value: bigint): void {
    const g = this.#g;
    let refund = this.#refund;
    if (original === current) {
      if (original !== 0n && value === 0n) refund += g.sstoreClearRefund!;
    } else {
      if (original !== 0n) {
        if (current === 0n) refund = Math.max(0, refund - g.sstoreClearRefund!);
        else if (value === 0n) refund += g.sstoreClearRefund!;
      }
      if (original === value) {
        const warm = this.#isWarmSlot(key, slot);
        if (original === 0n) refund += warm ? g.sstoreInit! - g.warmRead! : g.sstoreInitRefund!;
        else refund += warm ? g.sstoreReset! - g.coldSload! - g.warmRead! : g.sstoreCleanRefund!;
      }
    }
    if (refund !== this.#refund) this.#setRefund(refund);
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
    const memGas = g.memory!;
    const quadDiv = g.quadDiv!;
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
        case 0x00: // STOP
          return { success: true, gasLeft: gas, output: EMPTY };
        case 0x01: {
          if (sp < 2) throw STACK_UNDERFLOW;
          const a = stack.pop()!;
          stack[sp - 2] = (a + stack[sp - 2]!) & MASK;
          break;
        }
        case 0x02: {
          if (sp < 2) throw STACK_UNDERFLOW;
          const a = stack.pop()!;
          stack[sp - 2] = (a * stack[sp - 2]!) & MASK;
          break;
        }
        case 0x03: {
          if (sp < 2) throw STACK_UNDERFLOW;
          const a = stack.pop()!;
          stack[sp - 2] = (a - stack[sp - 2]!) & MASK;
          break;
        }
        case 0x04: {
          if (sp < 2) throw STACK_UNDERFLOW;
          const a = stack.pop()!;
          const b = stack[sp - 2]!;
          stack[sp - 2] = b === 0n ? 0n : a / b;
          break;
        }
        case 0x05: {
          if (sp < 2) throw STACK_UNDERFLOW;
          const a = stack.pop()!;
          const b = stack[sp - 2]!;
          stack[sp - 2] = b === 0n ? 0n : (signed(a) / signed(b)) & MASK;
          break;
        }
        case 0x06: {
          if (sp < 2) throw STACK_UNDERFLOW;
          const a = stack.pop()!;
          const b = stack[sp - 2]!;
          stack[sp - 2] = b === 0n ? 0n : a % b;
          break;
        }
        case 0x07: {
          if (sp < 2) throw STACK_UNDERFLOW;
          const a = stack.pop()!;
          const b = stack[sp - 2]!;
          stack[sp - 2] = b === 0n ? 0n : (signed(a) % signed(b)) & MASK;
          break;
        }
        case 0x08: {
          if (sp < 3) throw STACK_UNDERFLOW;
          const a = stack.pop()!;
          const b = stack.pop()!;
          const n = stack[sp - 3]!;
          stack[sp - 3] = n === 0n ? 0n : (a + b) % n;
          break;
        }
        case 0x09: {
          if (sp < 3) throw STACK_UNDERFLOW;
          const a = stack.pop()!;
          const b = stack.pop()!;
          const n = stack[sp - 3]!;
          stack[sp - 3] = n === 0n ? 0n : (a * b) % n;
          break;
        }
        case 0x0a: {
          // EXP: 50 gas per byte of the exponent
          if (sp < 2) throw STACK_UNDERFLOW;
          const e = stack[sp - 2]!;
          if (e !== 0n) {
            gas -= g.expByte! * Math.ceil(e.toString(2).length / 8);
            if (gas < 0) throw OUT_OF_GAS;
          }
          const a = stack.pop()!;
          stack[sp - 2] = exp(a, e);
          break;
        }
        case 0x0b: {
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
        case 0x10: {
          if (sp < 2) throw STACK_UNDERFLOW;
          const a = stack.pop()!;
          stack[sp - 2] = a < stack[sp - 2]! ? 1n : 0n;
          break;
        }
        case 0x11: {
          if (sp < 2) throw STACK_UNDERFLOW;
          const a = stack.pop()!;
          stack[sp - 2] = a > stack[sp - 2]! ? 1n : 0n;
          break;
        }
        case 0x12: {
          if (sp < 2) throw STACK_UNDERFLOW;
          const a = stack.pop()!;
          stack[sp - 2] = signed(a) < signed(stack[sp - 2]!) ? 1n : 0n;
          break;
        }
        case 0x13: {
          if (sp < 2) throw STACK_UNDERFLOW;
          const a = stack.pop()!;
          stack[sp - 2] = signed(a) > signed(stack[sp - 2]!) ? 1n : 0n;
          break;
        }
        case 0x14: {
          if (sp < 2) throw STACK_UNDERFLOW;
          const a = stack.pop()!;
          stack[sp - 2] = a === stack[sp - 2]! ? 1n : 0n;
          break;
        }
        case 0x15:
          if (sp < 1) throw STACK_UNDERFLOW;
          stack[sp - 1] = stack[sp - 1] === 0n ? 1n : 0n;
          break;
        case 0x16: {
          if (sp < 2) throw STACK_UNDERFLOW;
          const a = stack.pop()!;
          stack[sp - 2] = a & stack[sp - 2]!;
          break;
        }
        case 0x17: {
          if (sp < 2) throw STACK_UNDERFLOW;
          const a = stack.pop()!;
          stack[sp - 2] = a | stack[sp - 2]!;
          break;
        }
        case 0x18: {
          if (sp < 2) throw STACK_UNDERFLOW;
          const a = stack.pop()!;
          stack[sp - 2] = a ^ stack[sp - 2]!;
          break;
        }
        case 0x19:
          if (sp < 1) throw STACK_UNDERFLOW;
          stack[sp - 1] = MASK ^ stack[sp - 1]!;
          break;
        case 0x1a: {
          if (sp < 2) throw STACK_UNDERFLOW;
          const i = stack.pop()!;
          const x = stack[sp - 2]!;
          stack[sp - 2] = i < 32n ? (x >> BigInt(248 - Number(i) * 8)) & 0xffn : 0n;
          break;
        }
        case 0x1b: {
          if (sp < 2) throw STACK_UNDERFLOW;
          const s = stack.pop()!;
          stack[sp - 2] = s < 256n ? (stack[sp - 2]! << s) & MASK : 0n;
          break;
        }
        case 0x1c: {
          if (sp < 2) throw STACK_UNDERFLOW;
          const s = stack.pop()!;
          stack[sp - 2] = s < 256n ? stack[sp - 2]! >> s : 0n;
          break;
        }
        case 0x1d: {
          if (sp < 2) throw STACK_UNDERFLOW;
          const s = stack.pop()!;
          const x = signed(stack[sp - 2]!);
          stack[sp - 2] = s < 256n ? (x >> s) & MASK : x < 0n ? MASK : 0n;
          break;
        }
        case 0x20: {
          // KECCAK256
          if (sp < 2) throw STACK_UNDERFLOW;
          const offset = stack[sp - 1]!;
          const size = small(stack[sp - 2]!);
          const o = size === 0 ? 0 : small(offset);
          gas -= mem.expand(o, size, memGas, quadDiv) + g.keccakWord! * words(size);
          if (!(gas >= 0)) throw OUT_OF_GAS;
          stack.pop();
          stack[sp - 2] = bytesValue(keccak256(mem.buf.subarray(o, o + size)));
          break;
        }
        case 0x30:
          stack.push(f.address);
          break;
        case 0x31: {
          // BALANCE
          if (sp < 1) throw STACK_UNDERFLOW;
          const key = addressKey(stack[sp - 1]!);
          gas -= this.#touch(key);
          if (gas < 0) throw OUT_OF_GAS;
          stack[sp - 1] = (await this.#account(key))?.balance ?? 0n;
          break;
        }
        case 0x32:
          stack.push(this.#origin);
          break;
        case 0x33:
          stack.push(f.caller);
          break;
        case 0x34:
          stack.push(f.value);
          break;
        case 0x35: {
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
        case 0x36:
          stack.push(BigInt(f.data.length));
          break;
        case 0x37: // CALLDATACOPY
        case 0x39: // CODECOPY
        case 0x3e: {
          // RETURNDATACOPY
          if (sp < 3) throw STACK_UNDERFLOW;
          const to = stack[sp - 1]!;
          const from = stack[sp - 2]!;
          const size = stack[sp - 3]!;
          if (op === 0x3e && from + size > BigInt(returnData.length)) throw OUT_OF_GAS;
          const n = small(size);
          const t = n === 0 ? 0 : small(to);
          gas -= mem.expand(t, n, memGas, quadDiv) + (n === 0 ? 0 : g.copy! * words(n));
          if (!(gas >= 0)) throw OUT_OF_GAS;
          stack.length = sp - 3;
          const source = op === 0x37 ? f.data : op === 0x39 ? code : returnData;
          copyPadded(mem.buf, t, source, from, n);
          break;
        }
        case 0x38:
          stack.push(BigInt(length));
          break;
        case 0x3a:
          stack.push(env.gasPrice);
          break;
        case 0x3b: {
          // EXTCODESIZE
          if (sp < 1) throw STACK_UNDERFLOW;
          const key = addressKey(stack[sp - 1]!);
          gas -= this.#touch(key);
          if (gas < 0) throw OUT_OF_GAS;
          stack[sp - 1] = BigInt((await this.#extCode(key)).length);
          break;
        }
        case 0x3c: {
          // EXTCODECOPY
          if (sp < 4) throw STACK_UNDERFLOW;
          const key = addressKey(stack[sp - 1]!);
          const to = stack[sp - 2]!;
          const from = stack[sp - 3]!;
          const n = small(stack[sp - 4]!);
          const t = n === 0 ? 0 : small(to);
          gas -= mem.expand(t, n, memGas, quadDiv);
          gas -= this.#touch(key);
          gas -= n === 0 ? 0 : g.copy! * words(n);
          if (!(gas >= 0)) throw OUT_OF_GAS;
          stack.length = sp - 4;
          copyPadded(mem.buf, t, await this.#extCode(key), from, n);
          break;
        }
        case 0x3d:
          stack.push(BigInt(returnData.length));
          break;
        case 0x3f: {
          // EXTCODEHASH
          if (sp < 1) throw STACK_UNDERFLOW;
          const key = addressKey(stack[sp - 1]!);
          gas -= this.#touch(key);
          if (gas < 0) throw OUT_OF_GAS;
          await this.#extCode(key);
          const account = await this.#account(key);
          stack[sp - 1] = account === null || account.empty ? 0n : bytesValue(account.codeHash);
          break;
        }
        case 0x40:
          throw new Unsupported("BLOCKHASH");
        case 0x41:
          stack.push(bytesValue(env.coinbase));
          break;
        case 0x42:
          stack.push(env.timestamp);
          break;
        case 0x43:
          stack.push(env.number);
          break;
        case 0x44: // PREVRANDAO: the block's difficulty on this chain
          stack.push(env.difficulty);
          break;
        case 0x45:
          stack.push(env.gasLimit);
          break;
        case 0x46:
          stack.push(this.#rules.chainId);
          break;
        case 0x47:
          stack.push((await this.#account(f.key))?.balance ?? 0n);
          break;
        case 0x48: // BASEFEE: none on this chain (0), the block's under Ethereum's fee rules
          stack.push(env.baseFee);
          break;
        case 0x49: // BLOBHASH: a call carries no blobs
          if (sp < 1) throw STACK_UNDERFLOW;
          stack[sp - 1] = 0n;
          break;
        case 0x4a: // BLOBBASEFEE: 0 on this chain, the block's under Ethereum's fee rules
          stack.push(env.blobBaseFee);
          break;
        case 0x50:
          if (sp < 1) throw STACK_UNDERFLOW;
          stack.pop();
          break;
        case 0x51: {
          // MLOAD
          if (sp < 1) throw STACK_UNDERFLOW;
          const o = small(stack[sp - 1]!);
          gas -= mem.expand(o, 32, memGas, quadDiv);
          if (!(gas >= 0)) throw OUT_OF_GAS;
          stack[sp - 1] = wordOf(mem.buf, o, 32);
          break;
        }
        case 0x52: {
          // MSTORE
          if (sp < 2) throw STACK_UNDERFLOW;
          const o = small(stack[sp - 1]!);
          gas -= mem.expand(o, 32, memGas, quadDiv);
          if (!(gas >= 0)) throw OUT_OF_GAS;
          stack.pop();
          writeWord(mem.buf, o, stack.pop()!);
          break;
        }
        case 0x53: {
          // MSTORE8
          if (sp < 2) throw STACK_UNDERFLOW;
          const o = small(stack[sp - 1]!);
          gas -= mem.expand(o, 1, memGas, quadDiv);
          if (!(gas >= 0)) throw OUT_OF_GAS;
          stack.pop();
          mem.buf[o] = Number(stack.pop()! & 0xffn);
          break;
        }
        case 0x54: {
          // SLOAD
          if (sp < 1) throw STACK_UNDERFLOW;
          const slot = stack[sp - 1]!;
          gas -= this.#warmSlot(f.key, slot) ? g.coldSload! : g.warmRead!;
          if (gas < 0) throw OUT_OF_GAS;
          stack[sp - 1] = await this.#load(f.key, slot);
          break;
        }
        case 0x55: {
          // SSTORE (EIP-2200 with EIP-2929's costs; refunds count only in a transaction's run)
          if (f.isStatic) throw STATIC_STATE_CHANGE;
          if (sp < 2) throw STACK_UNDERFLOW;
          if (gas <= g.sentry!) throw OUT_OF_GAS;
          const slot = stack[sp - 1]!;
          const value = stack[sp - 2]!;
          const current = await this.#load(f.key, slot);
          const original = await this.#originalValue(f.key, slot);
          let cost: number;
          if (current === value) cost = g.sstoreNoop!;
          else if (original === current) cost = original === 0n ? g.sstoreInit! : g.sstoreClean!;
          else cost = g.sstoreDirty!;
          if (this.#tx && current !== value)
            this.#sstoreRefund(f.key, slot, original, current, value);
          if (this.#warmSlot(f.key, slot)) cost += g.coldSload!;
          gas -= cost;
          if (gas < 0) throw OUT_OF_GAS;
          this.#setSlot(this.#written, f.key, slot, value);
          stack.pop();
          stack.pop();
          break;
        }
        case 0x56: {
          if (sp < 1) throw STACK_UNDERFLOW;
          const dest = stack.pop()!;
          if (dest >= lengthWord || jumps[Number(dest)] !== 1) throw INVALID_JUMP;
          pc = Number(dest);
          break;
        }
        case 0x57: {
          if (sp < 2) throw STACK_UNDERFLOW;
          const dest = stack.pop()!;
          const cond = stack.pop()!;
          if (cond !== 0n) {
            if (dest >= lengthWord || jumps[Number(dest)] !== 1) throw INVALID_JUMP;
            pc = Number(dest);
          }
          break;
        }
        case 0x58:
          stack.push(BigInt(pc - 1));
          break;
        case 0x59:
          stack.push(BigInt(mem.words * 32));
          break;
        case 0x5a:
          stack.push(BigInt(gas));
          break;
        case 0x5b:
          break;
        case 0x5c: {
          // TLOAD
          if (sp < 1) throw STACK_UNDERFLOW;
          stack[sp - 1] = this.#transient.get(f.key)?.get(stack[sp - 1]!) ?? 0n;
          break;
        }
        case 0x5d: {
          // TSTORE
          if (f.isStatic) throw STATIC_STATE_CHANGE;
          if (sp < 2) throw STACK_UNDERFLOW;
          this.#setSlot(this.#transient, f.key, stack[sp - 1]!, stack[sp - 2]!);
          stack.length = sp - 2;
          break;
        }
        case 0x5e: {
          // MCOPY
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
        case 0x5f:
          stack.push(0n);
          break;
        case 0x60:
          stack.push(SMALL[code[pc] ?? 0]!);
          pc++;
          break;
        case 0x61:
          stack.push(BigInt(((code[pc] ?? 0) << 8) | (code[pc + 1] ?? 0)));
          pc += 2;
          break;
        case 0xa0:
        case 0xa1:
        case 0xa2:
        case 0xa3:
        case 0xa4: {
          // LOG0…LOG4: charged; a call's logs go nowhere, a transaction's are kept
          if (f.isStatic) throw STATIC_STATE_CHANGE;
          const topics = op - 0xa0;
          if (sp < 2 + topics) throw STACK_UNDERFLOW;
          const n = small(stack[sp - 2]!);
          const o = n === 0 ? 0 : small(stack[sp - 1]!);
          gas -= mem.expand(o, n, memGas, quadDiv) + g.logTopic! * topics + g.logData! * n;
          if (!(gas >= 0)) throw OUT_OF_GAS;
          if (this.#tx) {
            const words: Hash32[] = [];
            for (let t = 0; t < topics; t++) words.push(wordBytes(stack[sp - 3 - t]!) as Hash32);
            const log: Log = {
              address: wordBytes(f.address).subarray(12) as Address,
              topics: words,
              data: n === 0 ? new Uint8Array(0) : mem.buf.slice(o, o + n),
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
          stack.length = sp - 2 - topics;
          break;
        }
        case 0xf0:
        case 0xf5:
          throw new Unsupported("creation");
        case 0xf1:
        case 0xf2:
        case 0xf4:
        case 0xfa: {
          const hasValue = op === 0xf1 || op === 0xf2;
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
          if (op === 0xf1 && f.isStatic && value !== 0n) throw STATIC_STATE_CHANGE;
          gas -= mem.expand(inOffset, inSize, memGas, quadDiv);
          gas -= mem.expand(outOffset, outSize, memGas, quadDiv);
          if (!(gas >= 0)) throw OUT_OF_GAS;
          gas -= this.#touch(key);
          if (value !== 0n) {
            gas -= g.valueTransfer!;
            // CALL with value to an account that does not exist or is empty (EIP-161)
            if (op === 0xf1) {
              const account = await this.#account(key);
              if (account === null || account.empty) gas -= g.newAccount!;
            }
          }
          if (gas < 0) throw OUT_OF_GAS;
          // All but a 64th of what is left, at most what was asked (EIP-150).
          const allowed = gas - Math.floor(gas / 64);
          let given = requested < BigInt(allowed) ? Number(requested) : allowed;
          if (value !== 0n) {
            // The stipend: the callee gets it on top, and what it leaves comes back.
            gas += g.stipend!;
            given += g.stipend!;
          }
          stack.length = at;
          returnData = EMPTY;
          let success = false;
          if (
            f.depth + 1 <= CALL_DEPTH_LIMIT &&
            (value === 0n || ((await this.#account(f.key))?.balance ?? 0n) >= value)
          ) {
            gas -= given;
            const end = await this.#message(
              {
                address: op === 0xf1 || op === 0xfa ? target : f.address,
                key: op === 0xf1 || op === 0xfa ? key : f.key,
                caller: op === 0xf4 ? f.caller : f.address,
                value: op === 0xf4 ? f.value : value,
                data: inSize === 0 ? EMPTY : mem.buf.slice(inOffset, inOffset + inSize),
                code: EMPTY,
                gas: given,
                isStatic: f.isStatic || op === 0xfa,
                depth: f.depth + 1,
              },
              key,
              op === 0xf4 ? undefined : f.key,
            );
            gas += end.gasLeft;
            success = end.success;
            returnData = end.output; // empty when it halted
          }
          if (returnData.length > 0 && outSize > 0)
            mem.buf.set(returnData.subarray(0, Math.min(outSize, returnData.length)), outOffset);
          stack.push(success ? 1n : 0n);
          break;
        }
        case 0xf3:
        case 0xfd: {
          // RETURN, REVERT
          if (sp < 2) throw STACK_UNDERFLOW;
          const n = small(stack[sp - 2]!);
          const o = n === 0 ? 0 : small(stack[sp - 1]!);
          gas -= mem.expand(o, n, memGas, quadDiv);
          if (!(gas >= 0)) throw OUT_OF_GAS;
          const output = n === 0 ? EMPTY : mem.buf.slice(o, o + n);
          return { success: op === 0xf3, gasLeft: gas, output };
        }
        case 0xfe:
          throw INVALID_OPCODE;
        case 0xff:
          throw new Unsupported("SELFDESTRUCT");
        default:
          if (op >= 0x62 && op <= 0x7f) {
            stack.push(pushes[pc - 1]!);
            pc += op - 0x5f;
          } else if (op >= 0x80 && op <= 0x8f) {
            const n = op - 0x7f;
            if (sp < n) throw STACK_UNDERFLOW;
            stack.push(stack[sp - n]!);
          } else if (op >= 0x90 && op <= 0x9f) {
            const n = op - 0x8f;
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

  /** Code read by `EXTCODE*`: EOF code is left to the library, which reads it its own way. */
  async #extCode(key: string): Promise<Uint8Array> {
    const code = await this.#codeOf(key);
    if (code[0] === 0xef && code[1] === 0x00) throw new Unsupported("EOF code");
    return code;
  }
}

/** The output of a frame that halted exceptionally (its return data is empty). */
const HALTED = new Uint8Array(0);

/** Keccak-256 of no bytes: the code hash of an account without code. */
const KECCAK_EMPTY = keccak256(new Uint8Array(0));
const KECCAK_EMPTY_KEY = `0x${bytesToUnprefixedHex(KECCAK_EMPTY)}`;
/** An account that is not there, as a base for one that value creates. */
const NO_ACCOUNT: BaseAccount = {
  balance: 0n,
  codeHash: KECCAK_EMPTY,
  codeKey: KECCAK_EMPTY_KEY,
  nonceZero: true,
  empty: true,
  hasCode: false,
};
