import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Database, NodeStore, WorldState } from "@nodex/state";
import {
  type Address,
  bytesToHex,
  contractAddress,
  deriveDevAccounts,
  hexToBytes,
  NETWORKS,
  type SignedTransaction,
  type UnsignedTransaction,
} from "@nodex/types";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type BlockContext, Executor } from "../../src/index.js";
import { deployCode, pushCall, regtestTx } from "./bytecode.js";
import { program, random } from "./programs.js";

const [alice] = deriveDevAccounts();
const BLOCK: BlockContext = {
  number: 1n,
  timestamp: 1_700_000_000n,
  coinbase: hexToBytes("0x00000000000000000000000000000000000000cb") as Address,
  gasLimit: 30_000_000n,
  difficulty: 1n,
  minimumGasPrice: 1n,
};

function tx(fields: Partial<UnsignedTransaction>, nonce: bigint) {
  return regtestTx(fields, nonce, alice!.privateKey);
}

let dir: string;
let db: Database;
beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), "nodex-fast-"));
  db = await Database.open(join(dir, "db"));
});
afterEach(async () => {
  await db.close();
  rmSync(dir, { recursive: true, force: true });
});

/**
 * Two funded states: `fast` runs this package's paths, `library` the library's loop (a tracer
 * makes the EVM run it) with its own opcode and gas handlers. `run` executes a transaction on
 * both and checks they agree on status, gas, error, output and logs.
 */
async function sideBySide() {
  const executor = new Executor(NETWORKS.regtest);
  const reference = new Executor(NETWORKS.regtest, { libraryOpcodes: true });
  const states: WorldState[] = [];
  for (let i = 0; i < 2; i++) {
    const state = await WorldState.open(new NodeStore(db));
    await state.setBalance(alice!.address, 10n ** 24n);
    await state.commit();
    states.push(state);
  }
  const [fast, library] = states as [WorldState, WorldState];
  const tracer = {};
  const run = async (t: SignedTransaction, gasUsed: bigint, what: string) => {
    const a = await executor.executeTransaction(fast, t, BLOCK, gasUsed);
    const b = await reference.executeTransaction(library, t, BLOCK, gasUsed, tracer);
    expect(a.status, what).toBe(b.status);
    expect(a.gasUsed, what).toBe(b.gasUsed);
    expect(a.error, what).toBe(b.error);
    expect(bytesToHex(a.returnValue ?? new Uint8Array()), what).toBe(
      bytesToHex(b.returnValue ?? new Uint8Array()),
    );
    expect(
      a.logs.map((l) => [l.address, l.topics, l.data]),
      what,
    ).toEqual(b.logs.map((l) => [l.address, l.topics, l.data]));
    return a;
  };
  return { fast, library, run };
}

describe("the interpreter's step loop", () => {
  it("gives the library loop's results on random programs: gas, status, output, logs, state", async () => {
    const { fast, library, run } = await sideBySide();
    const next = random(20261124);
    let nonce = 0n;
    let failures = 0;
    let succeeded = 0;
    for (let i = 0; i < 150; i++) {
      const code = program(next);
      const deploy = tx({ data: deployCode(code) }, nonce);
      const at = contractAddress(alice!.address, nonce);
      nonce++;
      const calldata = Uint8Array.from({ length: next() % 64 }, () => next() & 0xff);
      const call = tx({ to: at, data: calldata, value: BigInt(next() % 3) }, nonce);
      nonce++;
      let gasUsed = 0n;
      for (const t of [deploy, call]) {
        const a = await run(t, gasUsed, `program ${i} ${bytesToHex(code)}`);
        if (t === call) {
          if (a.status === 0) failures++;
          else succeeded++;
        }
        gasUsed = a.cumulativeGasUsed;
      }
    }
    expect(bytesToHex(await fast.commit())).toBe(bytesToHex(await library.commit()));
    // The programs go both ways: most run to the end, some fail (jumps, reverts, gas).
    expect(succeeded).toBeGreaterThan(60);
    expect(failures).toBeGreaterThan(10);
  }, 60_000);

  it("ends a run at STOP and RETURN: what came before stays, what follows never runs", async () => {
    const executor = new Executor(NETWORKS.regtest);
    const state = await WorldState.open(new NodeStore(db));
    await state.setBalance(alice!.address, 10n ** 24n);
    await state.commit();
    const cases: [string, string, bigint][] = [
      // SSTORE(0, 1), STOP, SSTORE(0, 2)
      ["600160005500600260005500", "0x", 1n],
      // SSTORE(0, 3), MSTORE(0, 0x2a), RETURN(0, 32), SSTORE(0, 4)
      ["6003600055602a60005260206000f3600460005500", `0x${"2a".padStart(64, "0")}`, 3n],
    ];
    let nonce = 0n;
    for (const [code, output, slot] of cases) {
      const at = contractAddress(alice!.address, nonce);
      await executor.executeTransaction(
        state,
        tx({ data: deployCode(hexToBytes(`0x${code}`)) }, nonce++),
        BLOCK,
        0n,
      );
      const out = await executor.executeTransaction(state, tx({ to: at }, nonce++), BLOCK, 0n);
      expect(out.status, code).toBe(1);
      expect(bytesToHex(out.returnValue ?? new Uint8Array()), code).toBe(output);
      expect(BigInt(bytesToHex(await state.getStorage(at, new Uint8Array(32)))), code).toBe(slot);
    }
  });

  it("stores words with MSTORE as 32 big-endian bytes", async () => {
    const executor = new Executor(NETWORKS.regtest);
    const state = await WorldState.open(new NodeStore(db));
    await state.setBalance(alice!.address, 10n ** 24n);
    await state.commit();
    const next = random(7);
    const words = [0n, 1n, 0xffn, 2n ** 64n - 1n, 2n ** 64n, 2n ** 255n, 2n ** 256n - 1n];
    for (let i = 0; i < 40; i++)
      words.push(
        BigInt(
          `0x${Array.from({ length: 8 }, () => next().toString(16).padStart(8, "0")).join("")}`,
        ) >> BigInt(next() % 256),
      );
    let nonce = 0n;
    for (const word of words) {
      const offset = next() % 33;
      const hex = word.toString(16).padStart(64, "0");
      // PUSH32 word, PUSH1 offset, MSTORE, RETURN 96 bytes of memory from 0.
      const runtime = hexToBytes(`0x7f${hex}60${offset.toString(16).padStart(2, "0")}5260606000f3`);
      const at = contractAddress(alice!.address, nonce);
      await executor.executeTransaction(
        state,
        tx({ data: deployCode(runtime) }, nonce++),
        BLOCK,
        0n,
      );
      const out = await executor.executeTransaction(state, tx({ to: at }, nonce++), BLOCK, 0n);
      const expected = new Uint8Array(96);
      expected.set(hexToBytes(`0x${hex}`), offset);
      expect(bytesToHex(out.returnValue ?? new Uint8Array()), `${word} at ${offset}`).toBe(
        bytesToHex(expected),
      );
    }
  });

  it("gives the library's results on calls between contracts: every call kind, value, precompiles, failures", async () => {
    const { fast, library, run: runBoth } = await sideBySide();
    const next = random(424242);
    const contracts = Array.from({ length: 5 }, (_, i) =>
      contractAddress(alice!.address, BigInt(i)),
    );
    const targets: Uint8Array[] = [
      ...contracts,
      alice!.address,
      hexToBytes("0x000000000000000000000000000000000000dead"),
      ...[1, 2, 3, 4, 5, 9].map((n) => hexToBytes(`0x${n.toString(16).padStart(40, "0")}`)),
    ];
    /** A contract that makes a few calls of random kinds and keeps what they answered. */
    const callingProgram = (): Uint8Array => {
      const out: number[] = [];
      // Memory: calldata's first word, for the arguments of the calls.
      out.push(0x60, 0, 0x35, 0x60, 0, 0x52);
      const calls = 1 + (next() % 4);
      for (let c = 0; c < calls; c++) {
        const kind = ([0xf1, 0xf2, 0xf4, 0xfa] as const)[next() % 4]!;
        const target = targets[next() % targets.length]!;
        const gas = next() % 5 === 0 ? undefined : BigInt(next() % 80_000);
        const retOffset = BigInt(next() % 64);
        const argsSize = BigInt(next() % 96);
        const value =
          kind === 0xf1 || kind === 0xf2
            ? next() % 7 === 0
              ? 10n ** 30n
              : BigInt(next() % 3)
            : 0n;
        pushCall(out, { kind, target, gas, value, retOffset, argsSize }, c);
      }
      // SSTORE(32, CALLVALUE), SSTORE(33, CALLER), LOG1 of memory with ADDRESS as topic
      out.push(0x34, 0x60, 32, 0x55, 0x33, 0x60, 33, 0x55, 0x30, 0x60, 32, 0x60, 0, 0xa1);
      const end = next() % 10;
      if (end === 0) out.push(0x60, 0, 0x60, 0, 0xfd);
      else if (end === 1) out.push(0xfe);
      else out.push(0x60, 32, 0x60, 0, 0xf3);
      return Uint8Array.from(out);
    };
    let nonce = 0n;
    let gasUsed = 0n;
    const run = async (t: ReturnType<typeof tx>, what: string) => {
      const a = await runBoth(t, gasUsed, what);
      gasUsed = a.cumulativeGasUsed;
      return a;
    };
    const codes = contracts.map(() => callingProgram());
    for (const [i, code] of codes.entries())
      await run(tx({ data: deployCode(code), gasLimit: 1_000_000n }, nonce++), `deploy ${i}`);
    const statuses = new Set<number>();
    for (let i = 0; i < 120; i++) {
      const to = contracts[next() % contracts.length]!;
      const data = Uint8Array.from({ length: next() % 40 }, () => next() & 0xff);
      const value = BigInt(next() % 1000);
      const out = await run(
        tx({ to, data, value, gasLimit: BigInt(30_000 + (next() % 400_000)) }, nonce++),
        `call ${i} to ${bytesToHex(to)}`,
      );
      statuses.add(out.status);
      if (i % 40 === 39) gasUsed = 0n;
    }
    expect(bytesToHex(await fast.commit())).toBe(bytesToHex(await library.commit()));
    expect([...statuses].sort()).toEqual([0, 1]);
  }, 60_000);
});
