import { createEVM } from "@ethereumjs/evm";
import { NETWORKS } from "@nodex/types";
import { describe, expect, it } from "vitest";
import { Executor } from "../../../src/index.js";
import { Op } from "../../../src/interpreter/index.js";

describe("Op", () => {
  it("names every opcode of the library's Cancun EVM, as the library names it", async () => {
    // The library's opcodes of the executor's hardfork (Cancun).
    const evm = await createEVM({ common: new Executor(NETWORKS.regtest).common.copy() });
    const library = [...evm.getActiveOpcodes().values()];
    expect(library.length).toBeGreaterThan(140);
    const byCode = new Map<number, string>(Object.entries(Op).map(([name, code]) => [code, name]));
    const differences = library
      .filter((op) => {
        const name = byCode.get(op.code);
        // `name` is the family's (`PUSH`), `fullName` numbers its members (`PUSH1`).
        return name !== op.fullName || !name.startsWith(op.name);
      })
      .map((op) => `0x${op.code.toString(16)} ${op.fullName}: ${byCode.get(op.code)}`);
    expect(differences).toEqual([]);
    // Nothing beyond them, and one name per opcode.
    expect(Object.keys(Op).length).toBe(library.length);
    expect(byCode.size).toBe(library.length);
  });

  it("gives SLOAD, the pushes and the logs their bytes", () => {
    expect(Op.SLOAD).toBe(0x54);
    expect(Op.PUSH32 - Op.PUSH1).toBe(31);
    expect(Op.LOG4).toBe(0xa4);
  });
});
