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
  type UnsignedTransaction,
} from "@nodex/types";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { type BlockContext, Executor, type TransactionOutcome } from "../../src/index.js";
import { CallInterpreter } from "../../src/interpreter/index.js";
import { deployCode, push, regtestTx } from "./bytecode.js";
import { BLOCK, DEAD, ROUNDS, tokenCreation, word } from "./fixtures.js";
import { callingProgram, program, random } from "./programs.js";

const [alice] = deriveDevAccounts();

let dir: string;
let db: Database;
beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), "nodex-txs-"));
  db = await Database.open(join(dir, "db"));
});
afterEach(async () => {
  vi.restoreAllMocks();
  await db.close();
  rmSync(dir, { recursive: true, force: true });
});

/** What a user sees of a transaction's outcome, comparable with `toEqual`. */
function seen(out: TransactionOutcome) {
  return {
    status: out.status,
    gasUsed: out.gasUsed,
    cumulativeGasUsed: out.cumulativeGasUsed,
    fee: out.fee,
    error: out.error,
    returnValue: bytesToHex(out.returnValue),
    contractAddress: out.contractAddress === null ? null : bytesToHex(out.contractAddress),
    logs: out.logs.map((l) => ({
      address: bytesToHex(l.address),
      topics: l.topics.map(bytesToHex),
      data: bytesToHex(l.data),
    })),
    bloom: bytesToHex(out.receipt.logsBloom),
  };
}

/**
 * Two states that take the same transactions: one from the executor (the interpreter first),
 * one from an executor that runs every transaction on the library. `send` runs a transaction on
 * both and checks that they agree on the outcome and on the state root after it; it counts the
 * transactions the interpreter ran itself.
 */
async function setup(block: BlockContext = BLOCK) {
  const executor = new Executor(NETWORKS.regtest);
  const library = new Executor(NETWORKS.regtest, { libraryTransactions: true });
  const fast = await WorldState.open(new NodeStore(db));
  const slow = await WorldState.open(new NodeStore(db));
  for (const state of [fast, slow]) {
    await state.setBalance(alice!.address, 10n ** 24n);
    await state.commit();
  }
  const transact = vi.spyOn(CallInterpreter.prototype, "transact");
  const counts = { fast: 0, library: 0, fastSuccess: 0, fastRevert: 0 };
  let nonce = 0n;
  let gasUsed = 0n;
  const send = async (fields: Partial<UnsignedTransaction>, what = "") => {
    const tx = regtestTx(
      { gasPrice: block.minimumGasPrice, ...fields },
      nonce++,
      alice!.privateKey,
      fields.gasLimit ?? 1_000_000n,
    );
    const before = transact.mock.results.length;
    const a = await executor.executeTransaction(fast, tx, block, gasUsed);
    const result = transact.mock.results[before];
    const ran = result !== undefined && (await result.value) !== undefined;
    const b = await library.executeTransaction(slow, tx, block, gasUsed);
    expect(seen(a), what).toEqual(seen(b));
    expect(bytesToHex(await fast.root()), `${what}: state root`).toBe(
      bytesToHex(await slow.root()),
    );
    gasUsed = a.cumulativeGasUsed > 20_000_000n ? 0n : a.cumulativeGasUsed;
    if (ran) {
      counts.fast++;
      if (a.status === 1) counts.fastSuccess++;
      else counts.fastRevert++;
    } else if (tx.to !== null) counts.library++;
    return a;
  };
  const deploy = async (runtime: Uint8Array): Promise<Address> => {
    const at = contractAddress(alice!.address, nonce);
    const out = await send({ data: deployCode(runtime) }, "deploy");
    expect(out.status).toBe(1);
    return at;
  };
  /** Sets a balance on both states. */
  const setBalance = async (address: Address, balance: bigint) => {
    for (const state of [fast, slow]) await state.setBalance(address, balance);
  };
  return { send, deploy, setBalance, counts };
}

describe("transactions on the interpreter", () => {
  it.each(ROUNDS)(
    "leave the library's state root, status, gas, logs and return data: random programs (round %i)",
    async (round) => {
      const { send, deploy, counts } = await setup();
      const next = random(4242 + round);
      const programs: Address[] = [];
      for (let i = 0; i < 60; i++) programs.push(await deploy(program(next)));
      for (let i = 0; i < 240; i++) {
        const to = programs[(next() >>> 16) % programs.length]!;
        const data = Uint8Array.from({ length: next() % 70 }, () => next() & 0xff);
        // Now and then a little gas: some run out of it (intrinsic gas at most 16 a byte).
        const gasLimit =
          next() % 3 === 0 ? BigInt(21_000 + 16 * data.length + (next() % 60_000)) : 1_000_000n;
        const value = next() % 4 === 0 ? BigInt(next() % 1000) : 0n;
        await send({ to, data, gasLimit, value }, `transaction ${i} to ${bytesToHex(to)}`);
      }
      expect(counts.fastSuccess).toBeGreaterThan(40);
      expect(counts.fastRevert).toBeGreaterThan(0);
      // Out of gas, invalid opcodes and jumps: the library's, with its words for the error.
      expect(counts.library).toBeGreaterThan(10);
    },
    120_000,
  );

  it.each(ROUNDS)(
    "leave the library's state: calls of all four kinds between contracts, value, reverts, precompiles (round %i)",
    async (round) => {
      const { send, deploy, setBalance, counts } = await setup();
      const next = random(515 + round);
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
      for (const [i, c] of contracts.entries()) if (i % 2 === 0) await setBalance(c, 2_000n);
      for (let i = 0; i < 200; i++) {
        const to = contracts[(next() >>> 16) % contracts.length]!;
        const data = Uint8Array.from({ length: next() % 40 }, () => next() & 0xff);
        const gasLimit = next() % 3 === 0 ? BigInt(60_000 + (next() % 300_000)) : 2_000_000n;
        const value = next() % 3 === 0 ? BigInt(next() % 700) : 0n;
        await send({ to, data, gasLimit, value }, `transaction ${i} to ${bytesToHex(to)}`);
      }
      expect(counts.fastSuccess).toBeGreaterThan(20);
      expect(counts.fastRevert).toBeGreaterThan(5);
    },
    120_000,
  );

  it.each(ROUNDS)(
    "count storage refunds as the library does: slots set, cleared and restored, in frames that revert (round %i)",
    async (round) => {
      const { send, deploy, counts } = await setup();
      const next = random(99 + round);
      // Calldata: pairs of bytes (slot, value), each pair an SSTORE, up to a byte 0xff; what
      // follows it goes, as calldata, to a call of itself. A run reverts at its end when its first
      // slot is odd.
      const code: number[] = [];
      // 60 cold SLOADs first: gas used high enough that the refund's cap (a fifth of it) rarely
      // hides the refund.
      for (let k = 0; k < 60; k++) code.push(0x60, 100 + k, 0x54, 0x50);
      code.push(0x5f, 0x5f, 0x52); // i = 0, in memory at 0
      const start = code.length;
      code.push(0x5b);
      // slot = CALLDATALOAD(i) >> 248; if slot == 0xff or i >= CALLDATASIZE → done
      code.push(0x5f, 0x51, 0x35, 0x60, 248, 0x1c); // slot
      code.push(0x80, 0x60, 0xff, 0x14); // slot == 0xff
      code.push(0x36, 0x5f, 0x51, 0x10, 0x15, 0x17); // || !(i < size)
      const jumpDone = code.length;
      code.push(0x61, 0, 0, 0x57); // JUMPI done (patched)
      // value = CALLDATALOAD(i + 1) >> 248
      code.push(0x5f, 0x51, 0x60, 1, 0x01, 0x35, 0x60, 248, 0x1c);
      code.push(0x90, 0x55); // SSTORE(slot, value)
      code.push(0x5f, 0x51, 0x60, 2, 0x01, 0x5f, 0x52); // i += 2
      code.push(0x61, start >> 8, start & 0xff, 0x56); // JUMP start
      const done = code.length;
      code[jumpDone + 1] = done >> 8;
      code[jumpDone + 2] = done & 0xff;
      code.push(0x5b, 0x50); // JUMPDEST, POP slot
      // The rest of the calldata after the 0xff: a call of itself with it, if there is any.
      code.push(0x5f, 0x51, 0x60, 1, 0x01); // from = i + 1
      code.push(0x80, 0x36, 0x03); // size = CALLDATASIZE - from
      code.push(0x80, 0x15); // size == 0
      const jumpEnd = code.length;
      code.push(0x61, 0, 0, 0x57);
      // CALLDATACOPY(32, from, size); CALL(gas, self, 0, 32, size, 0, 0)
      code.push(0x81, 0x81, 0x90, 0x60, 32, 0x37); // stack: from, size → copy(32, from, size)
      code.push(0x5f, 0x5f); // out size, out offset
      code.push(0x82, 0x60, 32, 0x5f, 0x30, 0x5a, 0xf1, 0x50);
      const end = code.length;
      code[jumpEnd + 1] = end >> 8;
      code[jumpEnd + 2] = end & 0xff;
      code.push(0x5b);
      // Revert when the first calldata byte is odd (the callee's first byte is its first slot).
      code.push(0x5f, 0x35, 0x60, 248, 0x1c, 0x60, 1, 0x16);
      const jumpOk = code.length;
      code.push(0x61, 0, 0, 0x57, 0x00);
      const ok = code.length;
      code[jumpOk + 1] = ok >> 8;
      code[jumpOk + 2] = ok & 0xff;
      code.push(0x5b, 0x5f, 0x5f, 0xfd);
      const at = await deploy(Uint8Array.from(code));
      // Values 0–2 in slots 2–7 (even and odd first slots): clears, restores, sets.
      const pairs = () => {
        const out: number[] = [];
        const n = 1 + (next() % 6);
        for (let k = 0; k < n; k++) out.push(2 + ((next() >>> 8) % 6), (next() >>> 8) % 3);
        return out;
      };
      for (let i = 0; i < 150; i++) {
        const data = [...pairs(), 0xff];
        // (the generator's high bits: its lowest bit alternates)
        if ((next() >>> 16) % 2 === 0) data.push(...pairs(), 0xff);
        await send({ to: at, data: Uint8Array.from(data), gasLimit: 600_000n }, `writes ${data}`);
      }
      expect(counts.fastSuccess).toBeGreaterThan(30);
      expect(counts.fastRevert).toBeGreaterThan(10);
    },
    60_000,
  );

  it("run an ERC-20's transfers, approvals and failed transfers as the library does", async () => {
    const { send, counts } = await setup();
    await send({ data: tokenCreation(), gasLimit: 3_000_000n });
    const at = contractAddress(alice!.address, 0n);
    const holders = Array.from({ length: 12 }, (_, i) => BigInt(0x1000 + i));
    for (const [i, h] of holders.entries()) {
      await send({ to: at, data: hexToBytes(`0xa9059cbb${word(h)}${word(BigInt(i + 1))}`) });
      // approve(h, i), then transfer to self, all of it back and forth
      await send({ to: at, data: hexToBytes(`0x095ea7b3${word(h)}${word(BigInt(i))}`) });
    }
    // transferFrom without an allowance, more than the balance: reverts with a reason
    const out = await send({
      to: at,
      data: hexToBytes(`0x23b872dd${word(holders[0]!)}${word(1n)}${word(1n)}`),
    });
    expect(out.status).toBe(0);
    await send({ to: at, data: hexToBytes(`0xa9059cbb${word(holders[1]!)}${word(10n ** 25n)}`) });
    await send({ to: at, data: hexToBytes(`0xa9059cbb${word(holders[1]!)}${word(0n)}`) });
    expect(counts.library).toBe(0);
    expect(counts.fastRevert).toBe(2);
  });

  it("leave to the library a transaction that touches an empty account (EIP-161 deletes it)", async () => {
    const { send, setBalance, counts } = await setup();
    const empty = hexToBytes("0x00000000000000000000000000000000000e3e3e") as Address;
    await setBalance(empty, 0n);
    // A plain transfer of nothing to it, then a contract's CALL of it.
    await send({ to: empty, gasLimit: 21_000n }, "transfer to an empty account");
    await setBalance(empty, 0n);
    const caller: number[] = [0x5f, 0x5f, 0x5f, 0x5f, 0x5f];
    push(caller, BigInt(bytesToHex(empty)));
    caller.push(0x5a, 0xf1, 0x00);
    const at = contractAddress(alice!.address, 1n);
    await send({ data: deployCode(Uint8Array.from(caller)) }, "deploy");
    await send({ to: at }, "a contract calls an empty account");
    expect(counts.library).toBe(2);
    // Plain transfers, to accounts new and old: the interpreter's.
    await send({ to: DEAD, value: 5n, gasLimit: 21_000n }, "to a new account");
    await send({ to: DEAD, value: 0n, gasLimit: 21_000n }, "nothing to it");
    await send({ to: alice!.address, value: 7n, gasLimit: 21_000n }, "to itself");
    expect(counts.fastSuccess).toBe(3);
  });

  it("leave the library's state at a gas price of 0: no fee, a miner without an account stays without one", async () => {
    const { send, deploy, counts } = await setup({ ...BLOCK, minimumGasPrice: 0n });
    // SSTORE(0, CALLVALUE + 1), LOG0 of nothing
    const at = await deploy(
      Uint8Array.from([0x34, 0x60, 1, 0x01, 0x5f, 0x55, 0x5f, 0x5f, 0xa0, 0x00]),
    );
    await send({ to: at, value: 3n }, "a write and a log at no price");
    await send({ to: DEAD, value: 1n, gasLimit: 21_000n }, "a transfer at no price");
    await send({ to: at, data: Uint8Array.of(1), gasLimit: 22_000n }, "out of gas at no price");
    expect(counts.fastSuccess).toBe(2);
    expect(counts.library).toBe(1);
  });
});
