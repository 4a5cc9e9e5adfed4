import type { Log } from "@nodex/types";

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
  /**
   * Keep the input of every call made to `console.sol`'s address (`CONSOLE_ADDRESS`), in the
   * result's `console`. The calls themselves run as calls to an empty account.
   */
  readonly console?: boolean;
  /**
   * When the run stops (`Date.now()` milliseconds; 0 or absent: never): checked every 4096
   * jumps taken, a call past it throws `TraceAbort` (`deadline`).
   */
  readonly deadline?: number;
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
  /** With `console`: the input of each call to the console address, in order (failed frames too). */
  readonly console?: readonly Uint8Array[];
}

export interface CallResult {
  readonly success: boolean;
  /** It ended in an exceptional halt (only with `halts`): all its gas is used. */
  readonly halted: boolean;
  /** The return data, or the revert data. */
  readonly output: Uint8Array;
  /** Execution gas used (without the intrinsic gas). */
  readonly gasUsed: number;
  /** With `console`: the input of each call to the console address, in order (failed frames too). */
  readonly console?: readonly Uint8Array[];
}
