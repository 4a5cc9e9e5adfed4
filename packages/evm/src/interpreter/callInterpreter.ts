import type { StateManagerInterface } from "@ethereumjs/common";
import type { CodeByHash } from "../callState.js";
import { VERIFIED_HARDFORK } from "../fastPaths.js";
import { StateReads } from "./accounts.js";
import type { CallEnvironment, CallResult, CallRules, TransactionResult } from "./callRules.js";
import { type Gas, gasTable } from "./gas.js";
import { HALTED, unsupported } from "./halts.js";
import { CallRun } from "./run.js";

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
 * order. `test/unit/callInterpreter.test.ts` runs random programs and calls between contracts on both and
 * compares return data, status and gas used.
 */

/** The largest frame gas the number arithmetic here takes: 2³², far above any block's limit. */
export const MAX_CALL_GAS = 2 ** 32;

/**
 * Runs calls on a world state's `StateManagerInterface` (only read). One interpreter serves any
 * number of calls at once: each call's changes live in its own `CallRun`.
 */
export class CallInterpreter {
  readonly #rules: CallRules;
  readonly #code: CodeByHash;
  readonly #g: Gas;

  constructor(rules: CallRules, code: CodeByHash) {
    // Its opcodes and gas rules are Cancun's: another hardfork's calls are the library's.
    if (rules.hardfork !== VERIFIED_HARDFORK)
      throw new RangeError(
        `the interpreter of calls runs ${VERIFIED_HARDFORK}'s rules, not ${rules.hardfork}'s`,
      );
    this.#rules = rules;
    this.#code = code;
    this.#g = gasTable(rules.param);
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
        ...(run.consoleCalls === undefined ? {} : { console: run.consoleCalls }),
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
