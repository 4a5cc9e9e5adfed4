import { createEVM } from "@ethereumjs/evm";
import { describe, expect, it } from "vitest";
import { findInterpreter } from "../../src/jumpAnalysis.js";
import { installLeanRunInterpreter, runInterpreterMatches } from "../../src/leanInterpreter.js";

/** SSTORE(0, 1); LOG0(0, 0); MSTORE(0, 42); RETURN(0, 32) */
const OK = new Uint8Array([
  0x60, 0x01, 0x60, 0x00, 0x55, 0x60, 0x00, 0x60, 0x00, 0xa0, 0x60, 0x2a, 0x60, 0x00, 0x52, 0x60,
  0x20, 0x60, 0x00, 0xf3,
]);
/** MSTORE(0, 7); REVERT(0, 32) */
const REVERTS = new Uint8Array([0x60, 0x07, 0x60, 0x00, 0x52, 0x60, 0x20, 0x60, 0x00, 0xfd]);
const INVALID = new Uint8Array([0x60, 0x01, 0xfe]);

describe("installLeanRunInterpreter", () => {
  it("copies the installed @ethereumjs/evm's runInterpreter (update it with the library)", () => {
    expect(runInterpreterMatches()).toBe(true);
  });

  it("gives the results the library's own method gives", async () => {
    const plain = await createEVM();
    const lean = await createEVM();
    expect(installLeanRunInterpreter(lean, await findInterpreter(lean))).toBe(true);
    for (const code of [OK, REVERTS, INVALID]) {
      const opts = { code, gasLimit: 100_000n, block: undefined };
      // runCall sets the block; runCode with a block goes through the lean method
      const [a, b] = await Promise.all([
        plain.runCall({ ...opts, to: undefined, data: code }),
        lean.runCall({ ...opts, to: undefined, data: code }),
      ]);
      expect(b.execResult.exceptionError?.error).toBe(a.execResult.exceptionError?.error);
      expect(b.execResult.executionGasUsed).toBe(a.execResult.executionGasUsed);
      expect(b.execResult.returnValue).toEqual(a.execResult.returnValue);
      expect(b.execResult.logs).toEqual(a.execResult.logs);
      expect(b.execResult.gasRefund).toBe(a.execResult.gasRefund);
    }
  });
});
