import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Database, NodeStore, WorldState } from "@nodex/state";
import {
  type Address,
  bytesToHex,
  deriveDevAccounts,
  hexToBytes,
  NETWORKS,
  signTransaction,
  type UnsignedTransaction,
} from "@nodex/types";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  type BlockContext,
  CallTracer,
  Executor,
  PrestateTracer,
  StructLogger,
  TraceAbort,
  toGethCallFrame,
  toParityTraces,
} from "../../src/index.js";

const [alice] = deriveDevAccounts();
const COINBASE = hexToBytes("0x00000000000000000000000000000000000000cb") as Address;
const BLOCK: BlockContext = {
  number: 1n,
  timestamp: 1_700_000_000n,
  coinbase: COINBASE,
  gasLimit: 10_000_000n,
  difficulty: 1n,
  minimumGasPrice: 1n,
};
const B = hexToBytes("0x000000000000000000000000000000000000000b") as Address;
const C = hexToBytes("0x000000000000000000000000000000000000000c") as Address;
const D = hexToBytes("0x000000000000000000000000000000000000000d") as Address;
const R = hexToBytes("0x00000000000000000000000000000000000000ee") as Address;

/** B: sstore(0, 42); mstore(0, 42); return(0, 32). */
const B_CODE = hexToBytes("0x602a600055602a60005260206000f3");
/** D: revert(0, 0). */
const D_CODE = hexToBytes("0x60006000fd");
/**
 * C: call(0xffff, B, 0, 0, 0, 0, 32); pop; staticcall(0xffff, D, 0, 0, 0, 0); pop;
 * selfdestruct(0xee).
 */
const C_CODE = hexToBytes(
  `0x6020600060006000600073${bytesToHex(B).slice(2)}61fffff150` +
    `60006000600060007300${"0".repeat(36)}0d61fffffa50` +
    `73${bytesToHex(R).slice(2)}ff`,
);

let dir: string;
let db: Database;
let state: WorldState;
const executor = new Executor(NETWORKS.regtest);

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), "nodex-trace-"));
  db = await Database.open(join(dir, "db"));
  state = await WorldState.open(new NodeStore(db));
  await state.setBalance(alice!.address, 10n ** 18n);
  await state.setCode(B, B_CODE);
  await state.setCode(C, C_CODE);
  await state.setCode(D, D_CODE);
  await state.setBalance(C, 7n);
  await state.commit();
});
afterEach(async () => {
  await db.close();
  rmSync(dir, { recursive: true, force: true });
});

function tx(fields: Partial<UnsignedTransaction>) {
  return signTransaction(
    {
      nonce: 0n,
      gasPrice: 1n,
      gasLimit: 200_000n,
      to: C,
      value: 0n,
      data: new Uint8Array(),
      ...fields,
    },
    alice!.privateKey,
    33,
  );
}

describe("CallTracer", () => {
  it("records calls, a failed static call and a self-destruct, in geth's and OpenEthereum's formats", async () => {
    const tracer = new CallTracer();
    const out = await executor.executeTransaction(state, tx({}), BLOCK, 0n, tracer);
    expect(out.status).toBe(1);
    const trace = tracer.result();
    const geth = toGethCallFrame(trace);
    expect(geth.type).toBe("CALL");
    expect(geth.from).toBe(bytesToHex(alice!.address));
    expect(geth.to).toBe(bytesToHex(C));
    expect(geth.gas).toBe("0x30d40");
    expect(geth.gasUsed).toBe(`0x${out.gasUsed.toString(16)}`);
    expect(geth.value).toBe("0x0");
    expect(geth.calls?.map((c) => c.type)).toEqual(["CALL", "STATICCALL", "SELFDESTRUCT"]);
    const [call, staticCall, destruct] = geth.calls!;
    expect(call!.to).toBe(bytesToHex(B));
    expect(call!.output).toBe(`0x${"0".repeat(62)}2a`);
    expect(staticCall!.error).toBe("execution reverted");
    expect(staticCall!.value).toBeUndefined();
    expect(destruct).toEqual({
      type: "SELFDESTRUCT",
      from: bytesToHex(C),
      gas: "0x0",
      gasUsed: "0x0",
      to: bytesToHex(R),
      input: "0x",
      value: "0x7",
    });
    expect(toGethCallFrame(trace, { onlyTopCall: true }).calls).toBeUndefined();

    const parity = toParityTraces(trace, {
      blockHash: new Uint8Array(32),
      blockNumber: 1n,
      transactionHash: new Uint8Array(32),
      transactionPosition: 0,
    });
    expect(parity.map((t) => [t.type, t.traceAddress, t.subtraces, t.error])).toEqual([
      ["call", [], 3, undefined],
      ["call", [0], 0, undefined],
      ["call", [1], 0, "Reverted"],
      ["suicide", [2], 0, undefined],
    ]);
    expect(parity[0]!.action.gas).toBe(`0x${(200_000n - 21_000n).toString(16)}`);
    expect(parity[2]!.result).toBeNull();
    expect(parity[2]!.action.callType).toBe("staticcall");
    expect(parity[3]!.action).toEqual({
      address: bytesToHex(C),
      refundAddress: bytesToHex(R),
      balance: "0x7",
    });
  });
});

describe("StructLogger", () => {
  it("logs every step with decreasing gas, depth changes at calls and geth's gasCost for CALL", async () => {
    const logger = new StructLogger();
    const out = await executor.executeTransaction(state, tx({}), BLOCK, 0n, logger);
    const result = logger.result();
    expect(result.failed).toBe(false);
    expect(result.gas).toBe(Number(out.gasUsed));
    const logs = result.structLogs;
    expect(logs[0]).toMatchObject({ pc: 0, op: "PUSH1", depth: 1, gas: 200_000 - 21_000 });
    expect(logs.at(-1)!.op).toBe("SELFDESTRUCT");
    const depths = logs.map((l) => l.depth);
    expect(Math.max(...depths)).toBe(2);
    // Within a frame, gas only goes down by the step's cost.
    for (let i = 1; i < logs.length; i++) {
      const [a, b] = [logs[i - 1]!, logs[i]!];
      if (a.depth === b.depth && a.op !== "CALL" && a.op !== "STATICCALL")
        expect(b.gas).toBe(a.gas - a.gasCost);
    }
    const call = logs.find((l) => l.op === "CALL")!;
    const firstInner = logs[logs.indexOf(call) + 1]!;
    expect(firstInner.depth).toBe(2);
    // geth: the cost of CALL includes the gas handed to the callee (here 0xffff, no stipend),
    // besides the cold account (2600) and a word of memory for the output (3).
    expect(call.gasCost - 0xffff).toBe(2603);
    expect(firstInner.gas).toBe(0xffff);
    const sstore = logs.find((l) => l.op === "SSTORE")!;
    expect(sstore.storage).toEqual({ [`${"0".repeat(64)}`]: `${"0".repeat(62)}2a` });
    expect(sstore.stack).toEqual(["0x2a", "0x0"]);
    const ret = logs.find((l) => l.op === "RETURN")!;
    expect(ret.memory).toEqual([`${"0".repeat(62)}2a`]);
    expect(logs.find((l) => l.op === "PUSH1")!.storage).toBeUndefined();
  });

  it("leaves out what is disabled, and stops past its size limit", async () => {
    const lean = new StructLogger({
      disableStack: true,
      disableMemory: true,
      disableStorage: true,
    });
    await executor.executeTransaction(state, tx({}), BLOCK, 0n, lean);
    for (const log of lean.result().structLogs) {
      expect(log.stack).toBeUndefined();
      expect(log.memory).toBeUndefined();
      expect(log.storage).toBeUndefined();
    }
    const small = new StructLogger({ limitBytes: 1000 });
    await expect(
      executor.executeTransaction(state, tx({ nonce: 1n }), BLOCK, 0n, small),
    ).rejects.toBeInstanceOf(TraceAbort);
  });

  it("stop at their deadline", async () => {
    const past = Date.now() - 1;
    const tracers = [
      new StructLogger({ deadline: past }),
      new CallTracer({ deadline: past }),
      new PrestateTracer({ deadline: past }),
    ];
    // An aborted transaction leaves the state half-run (tracing runs on a throwaway copy).
    for (const [nonce, tracer] of tracers.entries()) {
      const err = await executor
        .executeTransaction(state, tx({ nonce: BigInt(nonce) }), BLOCK, 0n, tracer)
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(TraceAbort);
      expect((err as TraceAbort).code).toBe("EVM_TRACE_DEADLINE");
    }
  });

  it("marks an out-of-gas step and reports the failure", async () => {
    const logger = new StructLogger();
    const out = await executor.executeTransaction(
      state,
      tx({ to: B, gasLimit: 21_010n }),
      BLOCK,
      0n,
      logger,
    );
    expect(out.status).toBe(0);
    const result = logger.result();
    expect(result.failed).toBe(true);
    expect(result.returnValue).toBe("");
    expect(result.structLogs.at(-1)!.error).toBe("out of gas");
  });
});

describe("PrestateTracer", () => {
  it("gives the touched accounts before the transaction, and the changes in diff mode", async () => {
    const pre = new PrestateTracer();
    await executor.executeTransaction(state, tx({}), BLOCK, 0n, pre);
    const accounts = pre.result() as Record<string, { balance?: string; storage?: object }>;
    expect(accounts[bytesToHex(alice!.address)]!.balance).toBe("0xde0b6b3a7640000");
    expect(accounts[bytesToHex(C)]!.balance).toBe("0x7");
    expect(accounts[bytesToHex(B)]!.storage).toEqual({
      [`0x${"0".repeat(64)}`]: `0x${"0".repeat(64)}`,
    });
    expect(Object.keys(accounts)).toContain(bytesToHex(D));

    const diff = new PrestateTracer({ diffMode: true });
    await executor.executeTransaction(state, tx({ nonce: 1n, to: B }), BLOCK, 0n, diff);
    const { pre: before, post } = diff.result() as {
      pre: Record<string, { nonce?: number; storage?: object }>;
      post: Record<string, { nonce?: number; storage?: object }>;
    };
    expect(post[bytesToHex(alice!.address)]!.nonce).toBe(2);
    expect(before[bytesToHex(alice!.address)]!.nonce).toBe(1);
    // B's slot 0 already held 42 (the first transaction): unchanged, so B is left out.
    expect(before[bytesToHex(B)]).toBeUndefined();
  });
});
