import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createEVM } from "@ethereumjs/evm";
import { Database, NodeStore, WorldState } from "@nodex/state";
import {
  type Address,
  bytesToHex,
  contractAddress,
  deriveDevAccounts,
  hexToBytes,
  keccak256,
  NETWORKS,
  type UnsignedTransaction,
} from "@nodex/types";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { type CallRequest, Executor } from "../../src/index.js";
import { CallInterpreter } from "../../src/interpreter/index.js";
import { deployCode, push, regtestTx } from "./bytecode.js";
import { BLOCK, DEAD, ROUNDS, tokenCreation, word } from "./fixtures.js";
import {
  callingProgram,
  PROGRAM_OPCODES,
  precompileCaller,
  precompileInputs,
  program,
  random,
} from "./programs.js";

const [alice] = deriveDevAccounts();
const ZERO = new Uint8Array(20) as Address;

function tx(fields: Partial<UnsignedTransaction>, nonce: bigint) {
  return regtestTx(fields, nonce, alice!.privateKey, 1_000_000n);
}

/** Deploys the bench's ERC-20 (bench/chain/Token.sol) as the first contract, 10²⁴ to its deployer. */
async function deployToken(
  send: (fields: Partial<UnsignedTransaction>) => Promise<unknown>,
): Promise<Address> {
  await send({ data: tokenCreation(), gasLimit: 3_000_000n });
  return contractAddress(alice!.address, 0n);
}

let dir: string;
let db: Database;
beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), "nodex-calls-"));
  db = await Database.open(join(dir, "db"));
});
afterEach(async () => {
  vi.restoreAllMocks();
  await db.close();
  rmSync(dir, { recursive: true, force: true });
});

/**
 * A funded state, transactions to set it up, and `compare`: a call run by the executor (the
 * interpreter of calls first) and by one that runs every call on the library, which must agree
 * on status, return data, gas used, error and revert reason. It counts the calls the
 * interpreter answered itself, so that a test can check it was not the library every time.
 */
async function setup() {
  const executor = new Executor(NETWORKS.regtest);
  const library = new Executor(NETWORKS.regtest, { libraryCalls: true });
  const state = await WorldState.open(new NodeStore(db));
  await state.setBalance(alice!.address, 10n ** 24n);
  await state.commit();
  let nonce = 0n;
  let gasUsed = 0n;
  const send = async (fields: Partial<UnsignedTransaction>) => {
    const out = await executor.executeTransaction(state, tx(fields, nonce++), BLOCK, gasUsed);
    gasUsed = out.cumulativeGasUsed;
    if (gasUsed > 20_000_000n) gasUsed = 0n;
    return out;
  };
  const deploy = async (runtime: Uint8Array): Promise<Address> => {
    const at = contractAddress(alice!.address, nonce);
    const out = await send({ data: deployCode(runtime) });
    expect(out.status).toBe(1);
    return at;
  };
  const answered = vi.spyOn(CallInterpreter.prototype, "call");
  const counts = { fast: 0, library: 0, fastSuccess: 0, fastRevert: 0, probeHalts: 0 };
  const compare = async (req: CallRequest, what: string) => {
    const before = answered.mock.results.length;
    const a = await executor.call(state, req, BLOCK);
    const b = await library.call(state, req, BLOCK);
    expect(
      {
        success: a.success,
        returnValue: bytesToHex(a.returnValue),
        gasUsed: a.gasUsed,
        error: a.error,
        revertReason: a.revertReason,
      },
      what,
    ).toEqual({
      success: b.success,
      returnValue: bytesToHex(b.returnValue),
      gasUsed: b.gasUsed,
      error: b.error,
      revertReason: b.revertReason,
    });
    const result = answered.mock.results[before];
    const fast = result !== undefined && (await result.value) !== undefined;
    // As eth_estimateGas probes: the same success and gas, halts answered without the library.
    const probe = await executor.call(state, req, BLOCK, { probe: true });
    expect({ success: probe.success, gasUsed: probe.gasUsed }, `${what} (probe)`).toEqual({
      success: b.success,
      gasUsed: b.gasUsed,
    });
    if (probe.error === "halted") counts.probeHalts++;
    if (fast) {
      counts.fast++;
      if (a.success) counts.fastSuccess++;
      else counts.fastRevert++;
    } else counts.library++;
    return { outcome: a, fast };
  };
  return { state, send, deploy, compare, counts };
}

describe("the interpreter of calls", () => {
  it.each(ROUNDS)(
    "gives the library's results on random programs: status, return data, gas, errors (round %i)",
    async (round) => {
      const { state, send, deploy, compare, counts } = await setup();
      const next = random(20261125 + round);
      const programs: Address[] = [];
      for (let i = 0; i < 120; i++) {
        const at = await deploy(program(next));
        // Half of them have run once, so that their storage has values before the calls.
        if (i % 2 === 0)
          await send({ to: at, data: Uint8Array.of(next() & 0xff), gasLimit: 300_000n });
        programs.push(at);
      }
      await state.commit();
      const senders = [alice!.address, ZERO, DEAD];
      for (const [i, to] of programs.entries()) {
        for (let k = 0; k < 3; k++) {
          const data = Uint8Array.from({ length: next() % 70 }, () => next() & 0xff);
          const gas = k === 2 ? 21_000n + BigInt(next() % 40_000) : undefined;
          const value = next() % 4 === 0 ? BigInt(next() % 1000) : undefined;
          await compare(
            {
              from: senders[next() % senders.length],
              to,
              data,
              ...(gas === undefined ? {} : { gas }),
              ...(value === undefined ? {} : { value }),
              gasPrice: BigInt(next() % 3),
            },
            `program ${i} at ${bytesToHex(to)}, call ${k}`,
          );
        }
      }
      // The interpreter answered many of them itself (programs with BLOCKHASH, say, are the
      // library's), ending both ways.
      expect(counts.fast).toBeGreaterThan(120);
      expect(counts.fastSuccess).toBeGreaterThan(50);
      expect(counts.fastRevert).toBeGreaterThan(5);
      expect(counts.probeHalts).toBeGreaterThan(20);
    },
    120_000,
  );

  it.each(ROUNDS)(
    "gives the library's results on calls between contracts: all four kinds, value, gas, static writes, precompiles (round %i)",
    async (round) => {
      const { state, send, deploy, compare, counts } = await setup();
      const next = random(77 + round);
      const contracts = Array.from({ length: 16 }, (_, i) =>
        contractAddress(alice!.address, BigInt(i)),
      );
      const targets: Uint8Array[] = [
        ...contracts,
        alice!.address,
        DEAD,
        ...[4, 10].map((n) => hexToBytes(`0x${n.toString(16).padStart(40, "0")}`)),
      ];
      for (const [i] of contracts.entries()) await deploy(callingProgram(next, i, targets));
      // Half of the contracts hold a balance to send from; the others only what calls bring.
      for (const [i, c] of contracts.entries()) if (i % 2 === 0) await state.setBalance(c, 2_000n);
      await send({ to: contracts[0], gasLimit: 2_000_000n });
      await send({ to: contracts[3], gasLimit: 2_000_000n });
      await state.commit();
      for (let i = 0; i < 300; i++) {
        // the high bits: the generator's low bits repeat with a short period
        const to = contracts[(next() >>> 16) % contracts.length]!;
        const data = Uint8Array.from({ length: next() % 40 }, () => next() & 0xff);
        const gas = next() % 3 === 0 ? BigInt(30_000 + (next() % 300_000)) : undefined;
        const value = next() % 3 === 0 ? BigInt(next() % 700) : undefined;
        await compare(
          {
            from: next() % 2 === 0 ? alice!.address : ZERO,
            to,
            data,
            ...(gas === undefined ? {} : { gas }),
            ...(value === undefined ? {} : { value }),
          },
          `call ${i} to ${bytesToHex(to)}`,
        );
      }
      expect(counts.fastSuccess).toBeGreaterThan(20);
      expect(counts.fastRevert).toBeGreaterThan(5);
      // Calls into contracts that halt: the library's.
      expect(counts.library).toBeGreaterThan(10);
    },
    120_000,
  );

  it("gives the library's results for every precompile at the edges of its input", async () => {
    const { state, deploy, compare, counts } = await setup();
    const next = random(20261128);
    const callers = new Map<string, Address>();
    const caller = async (precompile: number, gas: number | undefined) => {
      const key = `${precompile}/${gas}`;
      let at = callers.get(key);
      if (at === undefined) {
        at = await deploy(precompileCaller(precompile, gas));
        callers.set(key, at);
      }
      return at;
    };
    const cases = precompileInputs(next);
    const outcomes = { success: 0, failure: 0 };
    for (const [i, [precompile, input]] of cases.entries()) {
      // all the gas there is, or a little (a precompile out of gas fails its frame only)
      for (const gas of [undefined, 3_000 + (next() % 60_000)]) {
        const to = await caller(precompile, gas);
        await state.commit();
        const { outcome } = await compare(
          { from: alice!.address, to, data: input, gas: 10_000_000n },
          `case ${i}: precompile ${precompile}, ${input.length} bytes, gas ${gas ?? "all"}`,
        );
        expect(outcome.success).toBe(true);
        // The first word is the precompile's success.
        if (outcome.returnValue[31] === 1) outcomes.success++;
        else outcomes.failure++;
      }
    }
    // Both ends were reached, and the interpreter ran some of the calls itself.
    expect(outcomes.success).toBeGreaterThan(40);
    expect(outcomes.failure).toBeGreaterThan(20);
    expect(counts.fast).toBeGreaterThan(0);
  }, 120_000);

  it("has generators that write every opcode of the hardfork", async () => {
    const next = random(5);
    const seen = new Set<number>(PROGRAM_OPCODES);
    const contracts = Array.from({ length: 32 }, (_, i) => callingProgram(next, i, [DEAD]));
    for (const code of contracts) {
      for (let pc = 0; pc < code.length; pc++) {
        const op = code[pc]!;
        seen.add(op);
        if (op >= 0x60 && op <= 0x7f) pc += op - 0x5f;
      }
    }
    // The library's opcodes of the executor's hardfork.
    const evm = await createEVM({ common: new Executor(NETWORKS.regtest).common.copy() });
    const opcodes = evm.getActiveOpcodes();
    expect(opcodes.size).toBeGreaterThan(140);
    const missing = [...opcodes.values()]
      .filter((op) => !seen.has(op.code))
      .map((op) => `0x${op.code.toString(16)} ${op.name}`);
    expect(missing).toEqual([]);
  });

  it("answers an ERC-20's reads and simulated transfers itself, as the library does", async () => {
    const { state, send, compare, counts } = await setup();
    const at = await deployToken(send);
    const holders = Array.from({ length: 20 }, (_, i) => BigInt(0x1000 + i));
    for (const [i, h] of holders.entries())
      await send({ to: at, data: hexToBytes(`0xa9059cbb${word(h)}${word(BigInt(i + 1))}`) });
    await state.commit();
    const calls: [string, Address][] = [];
    for (const h of holders) calls.push([`0x70a08231${word(h)}`, alice!.address]); // balanceOf
    calls.push(["0x18160ddd", alice!.address]); // totalSupply
    for (const [i, h] of holders.entries()) {
      const from = hexToBytes(`0x${h.toString(16).padStart(40, "0")}`) as Address;
      // transfer within the balance, all of it, and beyond it (a revert with a reason)
      for (const amount of [1n, BigInt(i + 1), BigInt(i + 2)])
        calls.push([`0xa9059cbb${word(holders[(i + 1) % holders.length]!)}${word(amount)}`, from]);
    }
    let reverts = 0;
    for (const [data, from] of calls) {
      const { outcome, fast } = await compare({ from, to: at, data: hexToBytes(data) }, data);
      expect(fast, data).toBe(true);
      if (!outcome.success) {
        reverts++;
        expect(outcome.error).toBe("revert");
        expect(outcome.revertReason).toBeTruthy();
      }
    }
    expect(reverts).toBe(holders.length);
    expect(counts.library).toBe(0);
  }, 60_000);

  it("sees the changes made to a state between its calls (what it read is read again)", async () => {
    const { state, send, compare } = await setup();
    const at = await deployToken(send);
    const holder = 0xbeefn;
    const balanceOf = { to: at, data: hexToBytes(`0x70a08231${word(holder)}`) };
    const balance = async () => {
      const { outcome, fast } = await compare(balanceOf, "balanceOf");
      expect(fast).toBe(true);
      return BigInt(bytesToHex(outcome.returnValue));
    };
    expect(await balance()).toBe(0n);
    expect(await balance()).toBe(0n);
    // A transfer run on the same state object, as a pending block's state takes transactions.
    await send({ to: at, data: hexToBytes(`0xa9059cbb${word(holder)}${word(7n)}`) });
    expect(await balance()).toBe(7n);
    await send({ to: at, data: hexToBytes(`0xa9059cbb${word(holder)}${word(5n)}`) });
    expect(await balance()).toBe(12n);
    // A balance set directly: SELFBALANCE and BALANCE of a contract read it again.
    const reader = contractAddress(alice!.address, 3n);
    await send({ data: deployCode(Uint8Array.from([0x47, 0x5f, 0x52, 0x60, 32, 0x5f, 0xf3])) });
    const selfBalance = async () =>
      BigInt(bytesToHex((await compare({ to: reader }, "SELFBALANCE")).outcome.returnValue));
    expect(await selfBalance()).toBe(0n);
    await state.setBalance(reader, 123n);
    expect(await selfBalance()).toBe(123n);
  });

  it("moves value: a sender short of it topped up, a new account made by it, balances as they move", async () => {
    const { state, deploy, compare } = await setup();
    const fresh = 0xf4e5n;
    const code: number[] = [0x5f, 0x5f, 0x5f, 0x5f];
    push(code, 256n); // value
    push(code, fresh);
    code.push(0x5a, 0xf1, 0x50); // CALL(GAS, fresh, 256, 0, 0, 0, 0), POP
    push(code, fresh);
    code.push(0x31, 0x5f, 0x52); // BALANCE(fresh) to memory 0
    push(code, fresh);
    code.push(0x3f, 0x60, 32, 0x52); // EXTCODEHASH(fresh) to memory 32
    code.push(0x47, 0x60, 64, 0x52, 0x34, 0x60, 96, 0x52); // SELFBALANCE, CALLVALUE
    code.push(0x60, 128, 0x5f, 0xf3);
    const at = await deploy(Uint8Array.from(code));
    await state.commit();
    const sender = hexToBytes("0x000000000000000000000000000000000000beef") as Address;
    const { outcome, fast } = await compare({ from: sender, to: at, value: 1_000n }, "value");
    expect(fast).toBe(true);
    const words = bytesToHex(outcome.returnValue).slice(2).match(/.{64}/g)!;
    expect(words.map((w) => BigInt(`0x${w}`))).toEqual([
      256n,
      BigInt(bytesToHex(keccak256(new Uint8Array()))),
      744n,
      1_000n,
    ]);
  });

  it("undoes what a failed frame wrote and warmed: storage, transient storage, slots", async () => {
    const { state, deploy, compare } = await setup();
    // SSTORE(7, 0x2a), TSTORE(7, 0x2b), SLOAD(8), then REVERT
    const writer = await deploy(hexToBytes("0x602a600755602b60075d600854505f5ffd"));
    const caller: number[] = [0x5f, 0x5f, 0x5f, 0x5f];
    push(caller, BigInt(bytesToHex(writer)));
    caller.push(0x5a, 0xf4, 0x50); // DELEGATECALL(GAS, writer, 0, 0, 0, 0), POP
    caller.push(0x60, 7, 0x54, 0x5f, 0x52); // SLOAD(7) to memory 0
    caller.push(0x60, 7, 0x5c, 0x60, 32, 0x52); // TLOAD(7) to memory 32
    // the gas of GAS, PUSH1, SLOAD(8), POP: 2,107 when slot 8 is cold again
    caller.push(0x5a, 0x60, 8, 0x54, 0x50, 0x5a, 0x90, 0x03, 0x60, 64, 0x52);
    caller.push(0x60, 96, 0x5f, 0xf3);
    const at = await deploy(Uint8Array.from(caller));
    await state.commit();
    const { outcome, fast } = await compare({ to: at }, "undo");
    expect(fast).toBe(true);
    const words = bytesToHex(outcome.returnValue)
      .slice(2)
      .match(/.{64}/g)!
      .map((w) => BigInt(`0x${w}`));
    expect(words).toEqual([0n, 0n, 2107n]);
  });

  it("runs deep recursion without running out of stack", async () => {
    const { state, deploy, compare } = await setup();
    // STATICCALL(GAS, ADDRESS, 0, 0, 0, 0) of itself, then the depth it reached: nothing to
    // return but success. With 2³² gas the recursion goes some 800 frames deep.
    const at = await deploy(Uint8Array.from([0x5f, 0x5f, 0x5f, 0x5f, 0x30, 0x5a, 0xfa, 0x00]));
    await state.commit();
    const { fast } = await compare({ to: at, gas: 2n ** 32n }, "recursion");
    expect(fast).toBe(true);
  }, 60_000);

  it("leaves to the library what it does not run: creations, BLOCKHASH, halts, huge gas", async () => {
    const { state, deploy, compare } = await setup();
    const reverts = await deploy(Uint8Array.from([0x60, 0, 0x60, 0, 0xfd]));
    const invalid = await deploy(Uint8Array.from([0xfe]));
    const blockhash = await deploy(
      Uint8Array.from([0x60, 1, 0x40, 0x5f, 0x52, 0x60, 32, 0x5f, 0xf3]),
    );
    await state.commit();
    const cases: [CallRequest, boolean][] = [
      [{ to: reverts }, true],
      [{ to: DEAD }, true],
      [{ to: invalid }, false],
      [{ to: blockhash }, false],
      [{ to: reverts, value: 1n, from: alice!.address }, true],
      [{ to: DEAD, value: 10n ** 30n, from: DEAD }, true],
      [{ to: null, data: deployCode(Uint8Array.of(0)) }, false],
      // precompiles, run on the library's functions: sha256, and ecrecover of a bad signature
      [
        {
          to: hexToBytes("0x0000000000000000000000000000000000000002") as Address,
          data: Uint8Array.of(1),
        },
        true,
      ],
      [
        {
          to: hexToBytes("0x0000000000000000000000000000000000000001") as Address,
          data: new Uint8Array(128),
        },
        true,
      ],
      // a precompile out of gas: a halt, the library's
      [
        { to: hexToBytes("0x0000000000000000000000000000000000000002") as Address, gas: 21_010n },
        false,
      ],
      [{ to: reverts, gas: 2n ** 40n }, false],
    ];
    for (const [i, [req, byInterpreter]] of cases.entries()) {
      const { fast } = await compare(req, `case ${i}`);
      expect(fast, `case ${i}`).toBe(byInterpreter);
    }
  }, 60_000);
});
