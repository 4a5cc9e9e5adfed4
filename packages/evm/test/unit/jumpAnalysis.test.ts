import { createEVM } from "@ethereumjs/evm";
import { describe, expect, it } from "vitest";
import { findInterpreter, installJumpAnalysisCache } from "../../src/jumpAnalysis.js";

/** PUSH1 4 JUMP INVALID JUMPDEST PUSH1 42 PUSH1 0 MSTORE PUSH1 32 PUSH1 0 RETURN */
const CODE = new Uint8Array([
  0x60, 0x04, 0x56, 0xfe, 0x5b, 0x60, 0x2a, 0x60, 0x00, 0x52, 0x60, 0x20, 0x60, 0x00, 0xf3,
]);

describe("installJumpAnalysisCache", () => {
  it("analyses a code array once per EVM, and runs it as before", async () => {
    const evm = await createEVM();
    const Interpreter = (await findInterpreter(evm))!;
    installJumpAnalysisCache(Interpreter);
    installJumpAnalysisCache(Interpreter);
    const probe = await evm.runCode({ code: Uint8Array.of(0x00) });
    const interpreter = (probe.runState as unknown as { interpreter: object }).interpreter;
    const analyse = (
      Object.getPrototypeOf(interpreter) as {
        _getValidJumpDestinations(this: object, code: Uint8Array): { jumps: Uint8Array };
      }
    )._getValidJumpDestinations;
    const first = analyse.call(interpreter, CODE);
    expect(analyse.call(interpreter, CODE)).toBe(first);
    expect(analyse.call(interpreter, Uint8Array.from(CODE))).not.toBe(first);
    expect([...first.jumps]).toEqual([0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);

    for (let i = 0; i < 2; i++) {
      const run = await evm.runCode({ code: CODE, gasLimit: 100_000n });
      expect(run.exceptionError).toBeUndefined();
      expect(run.returnValue[31]).toBe(42);
      expect(run.executionGasUsed).toBe(3n + 8n + 1n + 3n + 3n + 3n + 3n + 3n + 3n);
    }
    // a bad jump is still one
    const bad = await evm.runCode({ code: new Uint8Array([0x60, 0x03, 0x56, 0xfe]) });
    expect(bad.exceptionError?.error).toMatch(/^invalid JUMP/);
  });
});
