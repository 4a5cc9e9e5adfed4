import { type Common, createCustomCommon, Hardfork, Mainnet } from "@ethereumjs/common";
import { createEVM, type EVM, type EVMOpts, type EVMResult } from "@ethereumjs/evm";
import { Account, Address as EJSAddress } from "@ethereumjs/util";
import type { WorldState } from "@nodex/state";
import {
  type Address,
  bigintToBytes,
  bytesToHex,
  bytesToUnprefixedHex,
  contractAddress,
  type Hash32,
  hexToBytes,
  keccak256,
  type Log,
  type NetworkPreset,
  type Receipt,
  type SignedTransaction,
  type TransactionType,
} from "@nodex/types";
import { logsBloom } from "./bloom.js";
import { CallStateManager, CodeByHash } from "./callState.js";
import { commonForEVM } from "./common.js";
import { CONSOLE_ADDRESS_KEY, type ConsoleLine, decodeConsoleLog } from "./consoleLog.js";
import { ecrecover } from "./ecrecover.js";
import { ExecutionError, ExecutionErrorCode } from "./errors.js";
import { installFastJournal } from "./fastJournal.js";
import { installFastOpcodes } from "./fastOpcodes.js";
import { type FastPathStatus, fastPathStatus } from "./fastPaths.js";
import { installExecuteCall, installFastSteps, installRunInterpreter, stop } from "./fastSteps.js";
import { effectiveGasPrice, FeeRules } from "./feeRules.js";
import {
  CallInterpreter,
  type CallRules,
  libraryAddress,
  MAX_CALL_GAS,
  StateReads,
} from "./interpreter/index.js";
import { findInterpreter, installJumpAnalysisCache } from "./jumpAnalysis.js";
import { decodeRevertReason } from "./revert.js";
import { attachTracer, type ExecutionTracer, installStepHook, stateReader } from "./tracing.js";
import { wordBytes } from "./words.js";

/** The Ethereum fork whose opcodes and precompiles the chain runs (PUSH0, MCOPY, transient storage). */
export const EVM_HARDFORK = Hardfork.Cancun;

type EVMStateManager = NonNullable<EVMOpts["stateManager"]>;

/** EIP-3860: the largest init code a creation may carry. */
export const MAX_INITCODE_SIZE = 49_152;

const KZG_POINT_EVALUATION = `0x${"00".repeat(19)}0a` as const;

/** EIP-2681: a nonce is below 2⁶⁴ - 1, so an account at that nonce sends nothing more. */
const MAX_NONCE = 2n ** 64n - 1n;

const TX_GAS = 21_000n;
const TX_CREATE_GAS = 32_000n;
const TX_DATA_ZERO_GAS = 4n;
const TX_DATA_NONZERO_GAS = 16n;
const INITCODE_WORD_GAS = 2n;
/** EIP-3529: refunds are capped at a fifth of the gas used. */
const MAX_REFUND_QUOTIENT = 5n;

/** An EVM for calls on one state, with the overlay that holds the call's writes. */
interface CallContext {
  readonly evm: EVM;
  readonly overlay: CallStateManager;
}

/** The block a transaction or call runs in. */
export interface BlockContext {
  readonly number: bigint;
  readonly timestamp: bigint;
  readonly coinbase: Address;
  readonly gasLimit: bigint;
  readonly difficulty: bigint;
  readonly minimumGasPrice: bigint;
  /**
   * The base fee, under Ethereum's fee rules only (`FeeRules.ETHEREUM`): answered by `BASEFEE`
   * and burnt. The chain has none; its executors ignore this.
   */
  readonly baseFeePerGas?: bigint;
  /**
   * The blob base fee (EIP-4844's price of blob gas), under Ethereum's fee rules only: answered
   * by `BLOBBASEFEE`. The chain has no blobs: 0 there.
   */
  readonly blobBaseFee?: bigint;
  /**
   * The hash of block `number` of this block's chain, asked by `BLOCKHASH` for one of the 256
   * blocks before it (`undefined`, or no function: 0 is answered).
   */
  readonly blockHash?: (number: bigint) => Promise<Uint8Array | undefined>;
}

/** What `BLOCKHASH` reads through: the library asks its `blockchain` for a block by number. */
type BlockSource = NonNullable<EVMOpts["blockchain"]>;

const NO_BLOCK_HASH = new Uint8Array(32);

/** The `blockchain` the EVM asks `BLOCKHASH`'s hashes of, for runs in `block`. */
function blockSource(block: BlockContext): BlockSource {
  const lookup = block.blockHash;
  const source = {
    getBlock: async (number: number | bigint | Uint8Array) => {
      const hash =
        lookup === undefined || typeof number === "object"
          ? undefined
          : await lookup(BigInt(number));
      return { hash: () => hash ?? NO_BLOCK_HASH };
    },
    putBlock: async () => {},
    shallowCopy: (): BlockSource => source,
  } as unknown as BlockSource;
  return source;
}

/** What running a transaction did. A failed execution (status 0) still uses gas and pays fees. */
export interface TransactionOutcome {
  readonly status: 0 | 1;
  readonly gasUsed: bigint;
  readonly cumulativeGasUsed: bigint;
  /**
   * Paid to the block's miner: gas used × gas price (less the burnt base fee under Ethereum's
   * fee rules).
   */
  readonly fee: bigint;
  readonly logs: readonly Log[];
  readonly contractAddress: Address | null;
  readonly returnValue: Uint8Array;
  /** The EVM's reason for a failure: `revert`, `out of gas`, `invalid opcode`, … */
  readonly error: string | undefined;
  readonly receipt: Receipt;
}

/** A call that creates no transaction (`eth_call`, `eth_estimateGas`). */
export interface CallRequest {
  readonly from?: Address;
  readonly to: Address | null;
  readonly gas?: bigint;
  readonly gasPrice?: bigint;
  readonly value?: bigint;
  readonly data?: Uint8Array;
  /**
   * The length of the RLP of the access list the transaction would carry (RSKIP546: 80 gas a
   * byte, counted in the intrinsic gas); none for a legacy one.
   */
  readonly accessListBytes?: number;
}

/**
 * Hears what contracts print through `console.sol` (`CONSOLE_ADDRESS`): the lines of one run, in
 * order, once it is over (a transaction's, with the transaction; a call's, without).
 */
export type ConsoleLogSink = (
  lines: readonly ConsoleLine[],
  tx: SignedTransaction | undefined,
) => void;

export interface CallOptions {
  /**
   * With the executor's `consoleLog`: whether this call's `console.sol` lines are told to it
   * (true unless false; never for a `probe`).
   */
  readonly consoleLog?: boolean;
  /**
   * Only success and gas used matter (`eth_estimateGas`'s probes): an exceptional halt may be
   * reported with the error `halted`, not in the EVM's words, and without the library's run.
   */
  readonly probe?: boolean;
  /**
   * When the call stops with `TraceAbort` (`deadline`), in `Date.now()` milliseconds: the
   * interpreter looks at the clock every 4096 jumps. Calls it leaves to the library (creations,
   * what it does not run) are bounded by their gas alone.
   */
  readonly deadline?: number;
}

export interface CallOutcome {
  readonly success: boolean;
  readonly returnValue: Uint8Array;
  readonly gasUsed: bigint;
  readonly error: string | undefined;
  /** Decoded `Error(string)` / `Panic(uint256)` of a revert, when there is one. */
  readonly revertReason: string | undefined;
}

/**
 * The hardforks whose intrinsic gas `intrinsicGas` computes: Shanghai's rules (EIP-3860's init
 * code words) hold through Cancun; Prague adds EIP-7623's calldata floor, not written here.
 */
export const INTRINSIC_GAS_HARDFORKS: readonly string[] = [Hardfork.Shanghai, Hardfork.Cancun];

/** RSKIP546: a typed transaction pays this much gas per byte of the RLP of its access list. */
const TX_ACCESS_LIST_BYTE_GAS = 80n;

/**
 * Gas a transaction pays before any code runs (Cancun rules), and for a typed transaction 80
 * gas per byte of its access list's RLP (RSKIP546: the list warms nothing).
 */
export function intrinsicGas(tx: {
  readonly to: Uint8Array | null;
  readonly data: Uint8Array;
  readonly accessListBytes?: number;
}): bigint {
  // Counted as numbers: a bigint sum makes a bigint for every byte of the data.
  let zeros = 0;
  const data = tx.data;
  for (let i = 0; i < data.length; i++) if (data[i] === 0) zeros++;
  let gas =
    TX_GAS + TX_DATA_ZERO_GAS * BigInt(zeros) + TX_DATA_NONZERO_GAS * BigInt(data.length - zeros);
  if (tx.to === null) {
    gas += TX_CREATE_GAS + INITCODE_WORD_GAS * BigInt(Math.ceil(tx.data.length / 32));
  }
  if (tx.accessListBytes) gas += TX_ACCESS_LIST_BYTE_GAS * BigInt(tx.accessListBytes);
  return gas;
}

/**
 * The interpreter's patches, installed by the first EVM made with the fast paths on (see
 * `#createEVM`). They replace members of the library's classes for the whole process, so a
 * process that also runs an executor without them (another hardfork) runs its EVMs on them too:
 * the patches are the library's mechanics (its loop, its journal, its jump analysis), the same
 * for every hardfork; what depends on the hardfork (the opcode handlers, the interpreter of
 * calls) is per executor.
 */
let interpreterFound: Promise<void> | undefined;
/** The tracers' step hook alone, for executors without the fast paths. */
let interpreterWithHook: Promise<void> | undefined;

/**
 * Runs transactions and calls on `@ethereumjs/evm` with the chain's rules: legacy gas pricing,
 * no base fee, fees to the block's miner, the opcodes of `EVM_HARDFORK`.
 */
export class Executor {
  readonly common: Common;
  readonly #evms = new WeakMap<WorldState, Promise<EVM>>();
  /** Idle call contexts of each state: one per call running at once on that state. */
  readonly #callContexts = new WeakMap<WorldState, CallContext[]>();
  readonly #code = new CodeByHash();

  readonly #libraryOpcodes: boolean;
  readonly #libraryCalls: boolean;
  readonly #libraryTransactions: boolean;
  readonly #ethereumFees: boolean;
  readonly #consoleLog: ConsoleLogSink | undefined;
  /** The interpreter of calls (`interpreter/`), made with the first EVM's tables. */
  #interpreter: Promise<CallInterpreter> | undefined;
  /** What calls read of each state, while it does not change (`StateReads`). */
  readonly #reads = new WeakMap<WorldState, StateReads>();

  /**
   * `libraryOpcodes`: run `@ethereumjs/evm`'s own opcode and gas handlers, not the faster ones
   * of `fastOpcodes.ts`; `libraryCalls`, `libraryTransactions`: run every call, every
   * transaction on the library, not on `interpreter/` first (same results; for tests that
   * compare the two). `feeRules`: the chain's (the default) or Ethereum's (`FeeRules`).
   * `consoleLog`: told the lines contracts print through `console.sol` in transactions run
   * without a tracer and in calls (not in `eth_estimateGas`'s probes); the calls to its address
   * cost and answer what calls to an empty account do, told or not.
   */
  constructor(
    network: NetworkPreset,
    opts: {
      readonly libraryOpcodes?: boolean;
      readonly libraryCalls?: boolean;
      readonly libraryTransactions?: boolean;
      readonly feeRules?: FeeRules;
      /** `EVM_HARDFORK` unless given; one of `INTRINSIC_GAS_HARDFORKS`. */
      readonly hardfork?: string;
      readonly consoleLog?: ConsoleLogSink;
    } = {},
  ) {
    const hardfork = opts.hardfork ?? EVM_HARDFORK;
    if (!INTRINSIC_GAS_HARDFORKS.includes(hardfork)) {
      throw new RangeError(
        `intrinsicGas has the rules of ${INTRINSIC_GAS_HARDFORKS.join(" and ")}, not of ${hardfork}: write them before running it`,
      );
    }
    this.fastPaths = fastPathStatus(hardfork);
    const library = !this.fastPaths.on;
    this.#ethereumFees = opts.feeRules === FeeRules.ETHEREUM;
    this.#consoleLog = opts.consoleLog;
    this.#libraryOpcodes = library || opts.libraryOpcodes === true;
    this.#libraryCalls = library || opts.libraryCalls === true;
    this.#libraryTransactions = library || opts.libraryTransactions === true;
    this.common = createCustomCommon(
      { chainId: network.chainId, name: `nodex-${network.name}` },
      Mainnet,
      // ECRECOVER recovers on the backend of transaction senders (libsecp256k1 or noble).
      { hardfork, customCrypto: { ecrecover, keccak256 } },
    );
  }

  /**
   * Whether this executor runs the fast paths (the interpreter of calls, the patches to the
   * library): only on the library version and the hardfork they were verified on
   * (`fastPaths.ts`); otherwise `reason` says why, and everything runs on `@ethereumjs/evm`.
   */
  readonly fastPaths: FastPathStatus;

  #evmFor(state: WorldState): Promise<EVM> {
    let evm = this.#evms.get(state);
    if (evm === undefined) {
      evm = this.#createEVM(state.manager);
      this.#evms.set(state, evm);
    }
    return evm;
  }

  async #createEVM(stateManager: EVMStateManager): Promise<EVM> {
    const evm = await createEVM({
      // Each EVM its own copy of the Common (see `commonForEVM`; with the fast paths, one that
      // answers `isActivatedEIP` from a set).
      common: this.fastPaths.on ? commonForEVM(this.common) : this.common.copy(),
      stateManager,
      // The chain has Ethereum's precompiles 0x01–0x09; Cancun's KZG point evaluation (0x0a) is left out.
      customPrecompiles: [{ address: KZG_POINT_EVALUATION }],
    });
    if (!this.fastPaths.on) {
      // The library's own classes, but for the hook that tracers hear steps through (it checks
      // that the member it wraps is there).
      interpreterWithHook ??= findInterpreter(evm).then((Interpreter) => {
        if (Interpreter !== undefined) installStepHook(Interpreter);
      });
      await interpreterWithHook;
      return evm;
    }
    if (!this.#libraryOpcodes) installFastOpcodes(evm, stop);
    installFastJournal(evm.journal.constructor);
    // Found once, with a tiny run: every EVM shares the class.
    interpreterFound ??= findInterpreter(evm).then((Interpreter) => {
      if (Interpreter !== undefined) {
        installJumpAnalysisCache(Interpreter);
        installStepHook(Interpreter);
        installFastSteps(Interpreter);
        installRunInterpreter(Interpreter);
        installExecuteCall();
      }
    });
    await interpreterFound;
    return evm;
  }

  /** An idle call context of `state`, made when every one is busy. Give it back with `#release`. */
  async #acquire(state: WorldState): Promise<CallContext> {
    let idle = this.#callContexts.get(state);
    if (idle === undefined) {
      idle = [];
      this.#callContexts.set(state, idle);
    }
    const context = idle.pop();
    if (context !== undefined) return context;
    const overlay = new CallStateManager(state.manager, this.#code);
    return { evm: await this.#createEVM(overlay), overlay };
  }

  #release(state: WorldState, context: CallContext): void {
    context.evm.journal.cleanJournal();
    context.overlay.reset();
    this.#callContexts.get(state)?.push(context);
  }

  /**
   * Runs a signed transaction on `state` in `block`, after `gasUsedBefore` gas of earlier
   * transactions. Throws `ExecutionError` when the transaction cannot be included at all.
   * A `tracer` hears the transaction's frames and steps (`tracing.ts`).
   */
  async executeTransaction(
    state: WorldState,
    tx: SignedTransaction,
    block: BlockContext,
    gasUsedBefore: bigint,
    tracer?: ExecutionTracer,
  ): Promise<TransactionOutcome> {
    const caller = new EJSAddress(tx.from);
    const from = bytesToHex(tx.from);
    if (tx.gasPrice < block.minimumGasPrice) {
      throw new ExecutionError(
        ExecutionErrorCode.GAS_PRICE_TOO_LOW,
        `transaction's gas price lower than block's minimum: have ${tx.gasPrice}, want ${block.minimumGasPrice}`,
      );
    }
    const baseFee = this.#baseFee(block);
    if (tx.gasPrice < baseFee) {
      throw new ExecutionError(
        ExecutionErrorCode.FEE_CAP_TOO_LOW,
        `max fee per gas less than block base fee: address ${bytesToHex(tx.from)}, maxFeePerGas: ${tx.gasPrice}, baseFee: ${baseFee}`,
      );
    }
    // A legacy transaction's gas price is its fee cap and its priority fee.
    const gasPrice = effectiveGasPrice(tx.gasPrice, tx.gasPrice, baseFee);
    if (gasUsedBefore + tx.gasLimit > block.gasLimit) {
      throw new ExecutionError(
        ExecutionErrorCode.BLOCK_GAS_LIMIT,
        `transaction gas ${tx.gasLimit} exceeds the block's remaining gas ${block.gasLimit - gasUsedBefore}`,
      );
    }
    const intrinsic = intrinsicGas(tx);
    if (tx.gasLimit < intrinsic) {
      throw new ExecutionError(
        ExecutionErrorCode.INTRINSIC_GAS,
        `intrinsic gas too low: have ${tx.gasLimit}, want ${intrinsic}`,
      );
    }
    if (tx.to === null && tx.data.length > MAX_INITCODE_SIZE) {
      throw new ExecutionError(
        ExecutionErrorCode.INITCODE_TOO_LARGE,
        `max initcode size exceeded: code size ${tx.data.length}, limit ${MAX_INITCODE_SIZE}`,
      );
    }
    const account = (await state.manager.getAccount(caller)) ?? new Account();
    if (account.nonce > tx.nonce) {
      throw new ExecutionError(
        ExecutionErrorCode.NONCE_TOO_LOW,
        `nonce too low: address ${from}, tx: ${tx.nonce} state: ${account.nonce}`,
      );
    }
    if (account.nonce < tx.nonce) {
      throw new ExecutionError(
        ExecutionErrorCode.NONCE_TOO_HIGH,
        `nonce too high: address ${from}, tx: ${tx.nonce} state: ${account.nonce}`,
      );
    }
    if (account.nonce >= MAX_NONCE) {
      throw new ExecutionError(
        ExecutionErrorCode.NONCE_MAX,
        `nonce has max value: address ${from}, nonce: ${account.nonce}`,
      );
    }
    // EIP-3607: an address with code sends no transaction (its key would have to collide).
    if (account.isContract()) {
      throw new ExecutionError(
        ExecutionErrorCode.SENDER_NOT_EOA,
        `sender not an eoa: address ${from}, codehash: ${bytesToHex(account.codeHash)}`,
      );
    }
    const upfront = tx.gasLimit * tx.gasPrice;
    if (account.balance < upfront + tx.value) {
      throw new ExecutionError(
        ExecutionErrorCode.INSUFFICIENT_FUNDS,
        `insufficient funds for gas * price + value: address ${from} have ${account.balance} want ${upfront + tx.value}`,
      );
    }
    // Replays under a tracer print nothing: the transaction printed when it ran.
    const consoleOn = this.#consoleLog !== undefined && tracer === undefined;
    if (
      tracer === undefined &&
      !this.#libraryTransactions &&
      tx.to !== null &&
      tx.gasLimit - intrinsic <= MAX_CALL_GAS
    ) {
      const outcome = await this.#transact(
        state,
        tx,
        block,
        gasUsedBefore,
        intrinsic,
        account,
        baseFee,
        consoleOn,
      );
      if (outcome !== undefined) return outcome;
    }

    const evm = await this.#evmFor(state);
    evm.blockchain = blockSource(block);
    await evm.journal.cleanup();
    // EIP-2200's original values are the slots' values when this transaction starts, also when
    // the block holds the state manager's checkpoint open across its transactions.
    state.manager.originalStorageCache.clear();
    this.#warm(evm, tx.from, tx.to, block.coinbase);
    const reader = tracer === undefined ? undefined : stateReader(evm);
    if (tracer !== undefined && reader !== undefined)
      await tracer.txStart?.(
        {
          from: tx.from,
          to: tx.to,
          value: tx.value,
          gasLimit: tx.gasLimit,
          gasPrice: tx.gasPrice,
          input: tx.data,
          intrinsicGas: intrinsic,
          coinbase: block.coinbase,
        },
        reader,
      );
    account.balance -= upfront;
    account.nonce += 1n;
    await evm.journal.putAccount(caller, account);

    const attached =
      tracer === undefined || reader === undefined ? undefined : attachTracer(evm, tracer, reader);
    const consoleCalls = consoleOn ? listenForConsole(evm) : undefined;
    let result: EVMResult;
    try {
      result = await evm.runCall({
        block: evmBlock(block, baseFee, this.#blobBaseFee(block)),
        gasPrice,
        caller,
        origin: caller,
        gasLimit: tx.gasLimit - intrinsic,
        ...(tx.to === null ? {} : { to: new EJSAddress(tx.to) }),
        value: tx.value,
        data: tx.data,
        skipNonceIncrement: true,
      });
    } finally {
      consoleCalls?.detach();
      attached?.detach();
    }

    const gasUsed = afterRefund(
      intrinsic + result.execResult.executionGasUsed,
      result.execResult.gasRefund ?? 0n,
    );
    const sender = (await state.manager.getAccount(caller)) ?? new Account();
    sender.balance += (tx.gasLimit - gasUsed) * gasPrice;
    await evm.journal.putAccount(caller, sender);
    const fee = gasUsed * (gasPrice - baseFee);
    await payMiner(state.manager, block.coinbase, fee, (a, account) =>
      evm.journal.putAccount(a, account),
    );
    await this.#destroy(evm, result);
    await evm.journal.cleanup();

    const failed = result.execResult.exceptionError !== undefined;
    const logs: Log[] = failed
      ? []
      : (result.execResult.logs ?? []).map(([address, topics, data]) => ({
          address: address as Address,
          topics: topics as Hash32[],
          data,
        }));
    const cumulativeGasUsed = gasUsedBefore + gasUsed;
    const created = tx.to === null && !failed ? contractAddress(tx.from, tx.nonce) : null;
    if (consoleCalls !== undefined) this.#tellConsole(consoleCalls.calls, tx);
    if (tracer !== undefined && reader !== undefined)
      await tracer.txEnd?.(
        {
          gasUsed,
          executionGasUsed: result.execResult.executionGasUsed,
          returnValue: result.execResult.returnValue,
          error: result.execResult.exceptionError?.error,
          contractAddress: created,
        },
        reader,
      );
    return outcome(
      tx.type,
      !failed,
      gasUsed,
      cumulativeGasUsed,
      fee,
      logs,
      created,
      result.execResult.returnValue,
      result.execResult.exceptionError?.error,
    );
  }

  /**
   * Runs a transaction's message call on the interpreter (`CallInterpreter.transact`) and
   * writes what it changed into `state`: the outcome, or `undefined`, having written nothing,
   * when the library must run it. `account` is the sender's, checked and not yet charged;
   * `baseFee` is burnt (Ethereum's fee rules; 0 on the chain).
   */
  async #transact(
    state: WorldState,
    tx: SignedTransaction,
    block: BlockContext,
    gasUsedBefore: bigint,
    intrinsic: bigint,
    account: Account,
    baseFee: bigint,
    consoleOn: boolean,
  ): Promise<TransactionOutcome | undefined> {
    const result = await (await this.#interpreterFor(state)).transact(
      state.manager,
      {
        from: tx.from,
        to: tx.to!,
        data: tx.data,
        value: tx.value,
        gas: Number(tx.gasLimit - intrinsic),
        gasPrice: tx.gasPrice,
        coinbase: block.coinbase,
        number: block.number,
        timestamp: block.timestamp,
        gasLimit: block.gasLimit,
        difficulty: block.difficulty,
        baseFee,
        blobBaseFee: this.#blobBaseFee(block),
        console: consoleOn,
      },
      account.balance - tx.gasLimit * tx.gasPrice,
      this.#readsOf(state),
    );
    if (result === undefined) return undefined;
    if (result.console !== undefined) this.#tellConsole(result.console, tx);

    const gasUsed = afterRefund(intrinsic + BigInt(result.gasUsed), BigInt(result.refund));

    const manager = state.manager;
    const senderKey = bytesToUnprefixedHex(tx.from);
    await writeStorage(manager, result.storage);
    await writeBalances(manager, result.balances, senderKey);
    // The sender's account as read before the run, which wrote nothing.
    account.nonce += 1n;
    account.balance = result.balances.get(senderKey)! + (tx.gasLimit - gasUsed) * tx.gasPrice;
    await manager.putAccount(libraryAddress(senderKey), account);
    const fee = gasUsed * (tx.gasPrice - baseFee);
    await payMiner(manager, block.coinbase, fee, (a, miner) => manager.putAccount(a, miner));
    return outcome(
      tx.type,
      result.success,
      gasUsed,
      gasUsedBefore + gasUsed,
      fee,
      result.logs,
      null,
      result.output,
      result.success ? undefined : "revert",
    );
  }

  /** The interpreter of calls and transactions, made with the tables of the first EVM. */
  #interpreterFor(state: WorldState): Promise<CallInterpreter> {
    this.#interpreter ??= this.#evmFor(state).then(
      (evm) => new CallInterpreter(callRules(evm), this.#code),
    );
    return this.#interpreter;
  }

  /** What calls and transactions have read of `state` while it has not changed. */
  #readsOf(state: WorldState): StateReads {
    let reads = this.#reads.get(state);
    if (reads === undefined) {
      reads = new StateReads();
      this.#reads.set(state, reads);
    }
    return reads.at(state.changes);
  }

  /**
   * Runs a call on `state` and throws its changes away. Balance is not checked (the call pays
   * nothing); the nonce is the sender's own.
   *
   * The call runs on an overlay of `state` (`CallStateManager`): its writes never reach `state`,
   * which is only read, so `state`'s caches stay warm for the next call. Calls may run
   * concurrently on one state, each on a context of its own.
   */
  async call(
    state: WorldState,
    req: CallRequest,
    block: BlockContext,
    opts: CallOptions = {},
  ): Promise<CallOutcome> {
    const fromBytes = req.from ?? (new Uint8Array(20) as Address);
    const data = req.data ?? new Uint8Array();
    const intrinsic = intrinsicGas({ to: req.to, data, accessListBytes: req.accessListBytes ?? 0 });
    const gas = req.gas ?? block.gasLimit;
    if (gas < intrinsic) {
      return {
        success: false,
        returnValue: new Uint8Array(),
        gasUsed: gas,
        error: "out of gas",
        revertReason: undefined,
      };
    }
    const value = req.value ?? 0n;
    const consoleOn =
      this.#consoleLog !== undefined && opts.probe !== true && opts.consoleLog !== false;
    if (!this.#libraryCalls && req.to !== null && gas - intrinsic <= MAX_CALL_GAS) {
      const result = await (await this.#interpreterFor(state)).call(
        state.manager,
        {
          from: fromBytes,
          to: req.to,
          data,
          value,
          gas: Number(gas - intrinsic),
          gasPrice: req.gasPrice ?? 0n,
          coinbase: block.coinbase,
          number: block.number,
          timestamp: block.timestamp,
          gasLimit: block.gasLimit,
          difficulty: block.difficulty,
          baseFee: this.#baseFee(block),
          blobBaseFee: this.#blobBaseFee(block),
          console: consoleOn,
          ...(opts.deadline === undefined ? {} : { deadline: opts.deadline }),
        },
        opts.probe === true,
        this.#readsOf(state),
      );
      // undefined: a call the interpreter leaves to the library, which runs it from the start
      if (result !== undefined) {
        if (result.console !== undefined) this.#tellConsole(result.console, undefined);
        return {
          success: result.success,
          returnValue: result.output,
          gasUsed: intrinsic + BigInt(result.gasUsed),
          error: result.success ? undefined : result.halted ? "halted" : "revert",
          revertReason:
            result.success || result.halted ? undefined : decodeRevertReason(result.output),
        };
      }
    }
    const context = await this.#acquire(state);
    const evm = context.evm;
    evm.blockchain = blockSource(block);
    const consoleCalls = consoleOn ? listenForConsole(evm) : undefined;
    try {
      evm.journal.cleanJournal();
      context.overlay.reset();
      this.#warm(evm, fromBytes, req.to, block.coinbase);
      const result = await this.#runCallRequest(
        evm,
        block,
        req,
        fromBytes,
        gas - intrinsic,
        value,
        data,
      );
      if (consoleCalls !== undefined) this.#tellConsole(consoleCalls.calls, undefined);
      const error = result.execResult.exceptionError?.error;
      return {
        success: error === undefined,
        returnValue: result.execResult.returnValue,
        gasUsed: intrinsic + result.execResult.executionGasUsed,
        error,
        revertReason:
          error === "revert" ? decodeRevertReason(result.execResult.returnValue) : undefined,
      };
    } finally {
      consoleCalls?.detach();
      this.#release(state, context);
    }
  }

  /** Decodes the inputs of a run's calls to the console address and tells `consoleLog`. */
  #tellConsole(calls: readonly Uint8Array[], tx: SignedTransaction | undefined): void {
    const sink = this.#consoleLog;
    if (sink === undefined || calls.length === 0) return;
    try {
      sink(calls.map(decodeConsoleLog), tx);
    } catch {
      // What hears the lines cannot change the run.
    }
  }

  /**
   * Runs a call as `call` does, on an overlay of `state` that is then thrown away, with a
   * tracer hearing it as it would hear the transaction (`txStart`, frames and steps, `txEnd`):
   * `debug_traceCall`. Always on the library (the tracers' hooks are its). As for `call`, the
   * sender is not checked (code, nonce, balance) and pays nothing: its balance is topped up to
   * the value when short, and its nonce is raised as the transaction's would be. The outcome's
   * `gasUsed` is a transaction's (refund applied). Gas under the intrinsic gas is a failure
   * without a run, as in `call`; the caller may refuse it first.
   */
  async traceCall(
    state: WorldState,
    req: CallRequest,
    block: BlockContext,
    tracer: ExecutionTracer,
  ): Promise<CallOutcome> {
    const from = req.from ?? (new Uint8Array(20) as Address);
    const data = req.data ?? new Uint8Array();
    const intrinsic = intrinsicGas({ to: req.to, data, accessListBytes: req.accessListBytes ?? 0 });
    const gas = req.gas ?? block.gasLimit;
    if (gas < intrinsic)
      return {
        success: false,
        returnValue: new Uint8Array(),
        gasUsed: gas,
        error: "out of gas",
        revertReason: undefined,
      };
    const value = req.value ?? 0n;
    const context = await this.#acquire(state);
    const evm = context.evm;
    evm.blockchain = blockSource(block);
    try {
      evm.journal.cleanJournal();
      context.overlay.reset();
      this.#warm(evm, from, req.to, block.coinbase);
      const reader = stateReader(evm);
      await tracer.txStart?.(
        {
          from,
          to: req.to,
          value,
          gasLimit: gas,
          gasPrice: req.gasPrice ?? 0n,
          input: data,
          intrinsicGas: intrinsic,
          coinbase: block.coinbase,
        },
        reader,
      );
      const attached = attachTracer(evm, tracer, reader);
      let result: EVMResult;
      try {
        result = await this.#runCallRequest(evm, block, req, from, gas - intrinsic, value, data);
      } finally {
        attached.detach();
      }
      const exec = result.execResult;
      const error = exec.exceptionError?.error;
      const gasUsed = afterRefund(intrinsic + exec.executionGasUsed, exec.gasRefund ?? 0n);
      await tracer.txEnd?.(
        {
          gasUsed,
          executionGasUsed: exec.executionGasUsed,
          returnValue: exec.returnValue,
          error,
          contractAddress:
            req.to === null && error === undefined ? (result.createdAddress?.bytes ?? null) : null,
        },
        reader,
      );
      return {
        success: error === undefined,
        returnValue: exec.returnValue,
        gasUsed,
        error,
        revertReason: error === "revert" ? decodeRevertReason(exec.returnValue) : undefined,
      };
    } finally {
      this.#release(state, context);
    }
  }

  /** The block's base fee under Ethereum's fee rules; none (0) under the chain's. */
  /** A call's message on the library, the sender's balance not checked (as `eth_call` runs). */
  #runCallRequest(
    evm: EVM,
    block: BlockContext,
    req: CallRequest,
    from: Uint8Array,
    gasLimit: bigint,
    value: bigint,
    data: Uint8Array,
  ): Promise<EVMResult> {
    const caller = new EJSAddress(from);
    return evm.runCall({
      block: evmBlock(block, this.#baseFee(block), this.#blobBaseFee(block)),
      gasPrice: req.gasPrice ?? 0n,
      caller,
      origin: caller,
      gasLimit,
      ...(req.to === null ? {} : { to: new EJSAddress(req.to) }),
      value,
      data,
      skipBalance: true,
    });
  }

  #baseFee(block: BlockContext): bigint {
    return this.#ethereumFees ? (block.baseFeePerGas ?? 0n) : 0n;
  }

  /** The block's blob base fee under Ethereum's fee rules; none (0) under the chain's. */
  #blobBaseFee(block: BlockContext): bigint {
    return this.#ethereumFees ? (block.blobBaseFee ?? 0n) : 0n;
  }

  #warm(evm: EVM, from: Uint8Array, to: Uint8Array | null, coinbase: Uint8Array): void {
    for (const address of evm.precompiles.keys()) evm.journal.addAlwaysWarmAddress(address);
    evm.journal.addAlwaysWarmAddress(bytesToUnprefixedHex(from));
    if (to !== null) evm.journal.addAlwaysWarmAddress(bytesToUnprefixedHex(to));
    evm.journal.addAlwaysWarmAddress(bytesToUnprefixedHex(coinbase)); // EIP-3651
  }

  /** EIP-6780: SELFDESTRUCT deletes only contracts created in the same transaction. */
  async #destroy(evm: EVM, result: EVMResult): Promise<void> {
    const destroyed = result.execResult.selfdestruct;
    if (destroyed === undefined) return;
    for (const [address] of destroyed) {
      if (result.execResult.createdAddresses?.has(address)) {
        await evm.journal.deleteAccount(new EJSAddress(hexToBytes(address)));
      }
    }
  }
}

/**
 * Keeps the input of every message to the console address an EVM runs until `detach`: the
 * library's `beforeMessage` event, heard without waiting (a listener of one argument).
 */
function listenForConsole(evm: EVM): { readonly calls: Uint8Array[]; detach(): void } {
  const calls: Uint8Array[] = [];
  const before = (message: {
    readonly to?: EJSAddress;
    readonly codeAddress: EJSAddress;
    readonly data: Uint8Array;
  }): void => {
    // A creation has no `to`, and its `codeAddress` getter throws.
    if (message.to === undefined) return;
    const target = message.codeAddress;
    if (bytesToUnprefixedHex(target.bytes) === CONSOLE_ADDRESS_KEY)
      calls.push(message.data.slice());
  };
  evm.events.on("beforeMessage", before as never);
  return {
    calls,
    detach: () => {
      evm.events.off("beforeMessage", before as never);
    },
  };
}

/** Gas used less EIP-3529's refund, which is at most a fifth of it. */
function afterRefund(gasUsed: bigint, refund: bigint): bigint {
  const cap = gasUsed / MAX_REFUND_QUOTIENT;
  return gasUsed - (refund < cap ? refund : cap);
}

/** Pays `fee` to the block's miner through `put` (the EVM's journal, or the state manager). */
async function payMiner(
  manager: EVMStateManager,
  coinbase: Uint8Array,
  fee: bigint,
  put: (address: EJSAddress, account: Account) => Promise<void>,
): Promise<void> {
  if (fee === 0n) return;
  const miner = new EJSAddress(coinbase);
  const account = (await manager.getAccount(miner)) ?? new Account();
  account.balance += fee;
  await put(miner, account);
}

/** A transaction's outcome and its receipt, written out field by field (one hidden class). */
function outcome(
  type: TransactionType,
  success: boolean,
  gasUsed: bigint,
  cumulativeGasUsed: bigint,
  fee: bigint,
  logs: readonly Log[],
  contractAddress: Address | null,
  returnValue: Uint8Array,
  error: string | undefined,
): TransactionOutcome {
  const status = success ? 1 : 0;
  return {
    status,
    gasUsed,
    cumulativeGasUsed,
    fee,
    logs,
    contractAddress,
    returnValue,
    error,
    receipt:
      type === 0
        ? { status, cumulativeGasUsed, logsBloom: logsBloom(logs), logs }
        : { status, cumulativeGasUsed, logsBloom: logsBloom(logs), logs, type },
  };
}

/**
 * Writes the slots a transaction changed (`CallInterpreter.transact`). Apart from `#transact`,
 * as the balances' writes: code first run by a later kind of transaction (a plain transfer
 * writes no slot) then recompiles these, not the whole of `#transact`.
 */
async function writeStorage(
  manager: EVMStateManager,
  storage: ReadonlyMap<string, ReadonlyMap<bigint, bigint>>,
): Promise<void> {
  for (const [key, slots] of storage) {
    const address = libraryAddress(key);
    for (const [slot, value] of slots)
      await manager.putStorage(address, wordBytes(slot), wordBytes(value));
  }
}

/** Writes the balances a transaction moved, but the sender's (`#transact` writes it). */
async function writeBalances(
  manager: EVMStateManager,
  balances: ReadonlyMap<string, bigint>,
  senderKey: string,
): Promise<void> {
  for (const [key, balance] of balances) {
    if (key === senderKey) continue;
    const address = libraryAddress(key);
    const other = (await manager.getAccount(address)) ?? new Account();
    other.balance = balance;
    await manager.putAccount(address, other);
  }
}

/** The gas rules of calls, from an EVM's opcode table, precompiles and parameters. */
function callRules(evm: EVM): CallRules {
  const fees = new Int32Array(256).fill(-1);
  for (const [code, opcode] of evm.opcodes) if (!opcode.isInvalid) fees[code] = opcode.fee;
  return {
    fees,
    precompiles: new Set(evm.precompiles.keys()),
    running: new Set(
      [...evm.precompiles].filter(([, run]) => typeof run === "function").map(([key]) => key),
    ),
    runPrecompile: async (key, data, gas) => {
      const run = evm.precompiles.get(key)!;
      // As the library's runPrecompile gives them (none of the chain's precompiles reads state).
      const result = await run({ data, gasLimit: BigInt(gas), common: evm.common, _EVM: evm });
      if (result.exceptionError !== undefined) return undefined;
      return { gasUsed: Number(result.executionGasUsed), output: result.returnValue };
    },
    chainId: evm.common.chainId(),
    param: (name) => evm.common.param(name),
    hardfork: evm.common.hardfork(),
  };
}

function evmBlock(block: BlockContext, baseFee: bigint, blobBaseFee: bigint) {
  return {
    header: {
      number: block.number,
      coinbase: new EJSAddress(block.coinbase),
      timestamp: block.timestamp,
      difficulty: block.difficulty,
      // DIFFICULTY (PREVRANDAO since the merge) answers the block's difficulty on this chain.
      prevRandao: padTo32(bigintToBytes(block.difficulty)),
      gasLimit: block.gasLimit,
      baseFeePerGas: baseFee,
      getBlobGasPrice: () => blobBaseFee,
    },
  };
}

function padTo32(bytes: Uint8Array): Uint8Array {
  const out = new Uint8Array(32);
  out.set(bytes.subarray(Math.max(0, bytes.length - 32)), 32 - Math.min(32, bytes.length));
  return out;
}
