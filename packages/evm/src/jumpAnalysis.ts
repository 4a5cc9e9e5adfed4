import type { EVM } from "@ethereumjs/evm";

/** What `Interpreter._getValidJumpDestinations` returns: read, never written, by the interpreter. */
interface Analysis {
  readonly jumps: Uint8Array;
  readonly pushes: Record<number, bigint>;
  readonly opcodesCached: unknown[];
}

interface InterpreterLike {
  readonly _evm: { readonly _opcodeMap: object };
  _getValidJumpDestinations(code: Uint8Array): Analysis;
}

const installed = new WeakSet<object>();

/**
 * The `Interpreter` class of `@ethereumjs/evm`, which the package does not export: found through
 * the `runState` of one tiny run of `evm` (with the library's own `runInterpreter`).
 */
export async function findInterpreter(
  evm: EVM,
): Promise<(abstract new (...args: never[]) => object) | undefined> {
  const result = await evm.runCode({ code: Uint8Array.of(0x00), gasLimit: 100n });
  const interpreter = (result.runState as { interpreter?: object } | undefined)?.interpreter;
  return interpreter?.constructor as (abstract new (...args: never[]) => object) | undefined;
}

/**
 * Makes `@ethereumjs/evm` reuse its jump-destination analysis (valid JUMPDESTs, PUSH values,
 * opcode table per byte) instead of redoing it on every message: results are kept per opcode
 * table (one per EVM) and per code array, so the same code array run again by the same EVM is
 * not analysed twice. The call states hand out one array per code hash (`CodeByHash`), which is
 * what makes calls hit. The analysis is a pure function of those two, and the interpreter
 * only reads it.
 *
 * `Interpreter` is the class `findInterpreter` returns. Installing twice is harmless.
 */
export function installJumpAnalysisCache(Interpreter: { readonly prototype: object }): void {
  const proto = Interpreter.prototype;
  if (installed.has(proto)) return;
  const analyse = (proto as InterpreterLike)._getValidJumpDestinations;
  if (typeof analyse !== "function") return;
  installed.add(proto);
  const byTable = new WeakMap<object, WeakMap<Uint8Array, Analysis>>();
  (proto as InterpreterLike)._getValidJumpDestinations = function (
    this: InterpreterLike,
    code: Uint8Array,
  ): Analysis {
    const table = this._evm._opcodeMap;
    let byCode = byTable.get(table);
    if (byCode === undefined) {
      byCode = new WeakMap();
      byTable.set(table, byCode);
    }
    let analysis = byCode.get(code);
    if (analysis === undefined) {
      analysis = analyse.call(this, code);
      byCode.set(code, analysis);
    }
    return analysis;
  };
}
