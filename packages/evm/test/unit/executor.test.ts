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
  keccak256,
  NETWORKS,
  signTransaction,
  type UnsignedTransaction,
} from "@nodex/types";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  type BlockContext,
  ExecutionError,
  ExecutionErrorCode,
  Executor,
  effectiveGasPrice,
  FeeRules,
  intrinsicGas,
  logsBloom,
  TraceAbort,
} from "../../src/index.js";
import { deployCode } from "./bytecode.js";

const [alice, bob] = deriveDevAccounts();
const COINBASE = hexToBytes("0x00000000000000000000000000000000000000cb") as Address;
const BLOCK: BlockContext = {
  number: 1n,
  timestamp: 1_700_000_000n,
  coinbase: COINBASE,
  gasLimit: 10_000_000n,
  difficulty: 1n,
  minimumGasPrice: 1n,
};
const GWEI = 10n ** 9n;

/** Runtime that reverts with `payload`: PUSH2 n, PUSH1 14, PUSH1 0, CODECOPY, PUSH2 n, PUSH1 0, REVERT. */
function revertingRuntime(payload: Uint8Array): Uint8Array {
  const n = payload.length;
  return new Uint8Array([
    0x61,
    n >> 8,
    n & 0xff,
    0x60,
    14,
    0x60,
    0,
    0x39,
    0x61,
    n >> 8,
    n & 0xff,
    0x60,
    0,
    0xfd,
    ...payload,
  ]);
}

const TOPIC = keccak256(new TextEncoder().encode("Ping()"));
/** Runtime that emits LOG1(Ping()) with 32 bytes of data (the word 7) and returns 0x2a. */
const LOGGING_RUNTIME = new Uint8Array([
  0x60,
  0x07,
  0x60,
  0x00,
  0x52, // mstore(0, 7)
  0x7f,
  ...TOPIC, // PUSH32 topic
  0x60,
  0x20,
  0x60,
  0x00,
  0xa1, // log1(0, 32, topic)
  0x60,
  0x2a,
  0x60,
  0x00,
  0x52,
  0x60,
  0x20,
  0x60,
  0x00,
  0xf3, // return 0x2a
]);

function errorString(reason: string): Uint8Array {
  const text = new TextEncoder().encode(reason);
  const out = new Uint8Array(4 + 32 + 32 + Math.ceil(text.length / 32) * 32);
  out.set(hexToBytes("0x08c379a0"));
  out[4 + 31] = 0x20;
  out[4 + 63] = text.length;
  out.set(text, 4 + 64);
  return out;
}

let dir: string;
let db: Database;
let state: WorldState;
const executor = new Executor(NETWORKS.regtest);

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), "nodex-evm-"));
  db = await Database.open(join(dir, "db"));
  state = await WorldState.open(new NodeStore(db));
  await state.setBalance(alice!.address, 100n * 10n ** 18n);
  await state.commit();
});
afterEach(async () => {
  await db.close();
  rmSync(dir, { recursive: true, force: true });
});

function tx(fields: Partial<UnsignedTransaction>, nonce = 0n) {
  return signTransaction(
    {
      nonce,
      gasPrice: GWEI,
      gasLimit: 1_000_000n,
      to: null,
      value: 0n,
      data: new Uint8Array(),
      ...fields,
    },
    alice!.privateKey,
    33,
  );
}

describe("Executor.executeTransaction", () => {
  it("transfers value, pays the miner and refunds unused gas", async () => {
    const out = await executor.executeTransaction(
      state,
      tx({ to: bob!.address, value: 5n, gasLimit: 50_000n }),
      BLOCK,
      0n,
    );
    expect(out.status).toBe(1);
    expect(out.gasUsed).toBe(21_000n);
    expect(out.fee).toBe(21_000n * GWEI);
    expect(await state.getBalance(bob!.address)).toBe(5n);
    expect(await state.getBalance(COINBASE)).toBe(21_000n * GWEI);
    expect(await state.getBalance(alice!.address)).toBe(100n * 10n ** 18n - 5n - 21_000n * GWEI);
    expect(await state.getNonce(alice!.address)).toBe(1n);
    expect(out.receipt).toEqual({
      status: 1,
      cumulativeGasUsed: 21_000n,
      logsBloom: new Uint8Array(256),
      logs: [],
    });
  });

  it("creates a contract at the address from sender and nonce, and runs it", async () => {
    const deploy = await executor.executeTransaction(
      state,
      tx({ data: deployCode(LOGGING_RUNTIME) }),
      BLOCK,
      0n,
    );
    expect(deploy.status).toBe(1);
    const address = contractAddress(alice!.address, 0n);
    expect(deploy.contractAddress).toEqual(address);
    expect(await state.getCode(address)).toEqual(LOGGING_RUNTIME);

    const run = await executor.executeTransaction(
      state,
      tx({ to: address }, 1n),
      BLOCK,
      deploy.gasUsed,
    );
    expect(run.status).toBe(1);
    expect(run.cumulativeGasUsed).toBe(deploy.gasUsed + run.gasUsed);
    expect(run.logs).toHaveLength(1);
    expect(run.logs[0]!.address).toEqual(address);
    expect(run.logs[0]!.topics).toEqual([TOPIC]);
    expect(bytesToHex(run.logs[0]!.data)).toBe(`0x${"00".repeat(31)}07`);
    expect(run.receipt.logsBloom).toEqual(logsBloom(run.logs));
    expect(run.receipt.logsBloom.some((b) => b !== 0)).toBe(true);
  });

  it("records a revert as status 0 that still pays for its gas", async () => {
    const deploy = await executor.executeTransaction(
      state,
      tx({ data: deployCode(revertingRuntime(errorString("nope"))) }),
      BLOCK,
      0n,
    );
    const address = deploy.contractAddress!;
    const before = await state.getBalance(alice!.address);
    const run = await executor.executeTransaction(
      state,
      tx({ to: address, value: 9n }, 1n),
      BLOCK,
      0n,
    );
    expect(run.status).toBe(0);
    expect(run.error).toBe("revert");
    expect(run.logs).toEqual([]);
    expect(await state.getBalance(address)).toBe(0n);
    expect(await state.getBalance(alice!.address)).toBe(before - run.fee);
    expect(await state.getNonce(alice!.address)).toBe(2n);
  });

  it("uses all the gas when it runs out", async () => {
    const deploy = await executor.executeTransaction(
      state,
      tx({ data: deployCode(LOGGING_RUNTIME) }),
      BLOCK,
      0n,
    );
    const out = await executor.executeTransaction(
      state,
      tx({ to: deploy.contractAddress, gasLimit: 21_100n }, 1n),
      BLOCK,
      0n,
    );
    expect(out.status).toBe(0);
    expect(out.error).toBe("out of gas");
    expect(out.gasUsed).toBe(21_100n);
  });

  it.each([
    [
      "nonce too low",
      async () => {
        await executor.executeTransaction(state, tx({ to: bob!.address }), BLOCK, 0n);
        return tx({ to: bob!.address }, 0n);
      },
      "nonce too low: address 0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266, tx: 0 state: 1",
    ],
    [
      "nonce too high",
      async () => tx({ to: bob!.address }, 5n),
      "nonce too high: address 0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266, tx: 5 state: 0",
    ],
    [
      "insufficient funds",
      async () => tx({ to: bob!.address, value: 100n * 10n ** 18n }),
      "insufficient funds for gas * price + value: address 0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266 have 100000000000000000000 want 100001000000000000000",
    ],
    [
      "too little gas",
      async () => tx({ to: bob!.address, gasLimit: 20_999n }),
      "intrinsic gas too low: have 20999, want 21000",
    ],
    [
      "a price under the block minimum",
      async () => tx({ to: bob!.address, gasPrice: 0n }),
      "transaction's gas price lower than block's minimum: have 0, want 1",
    ],
  ])("refuses a transaction with %s", async (_what, make, message) => {
    const bad = await make();
    await expect(executor.executeTransaction(state, bad, BLOCK, 0n)).rejects.toThrow(
      new ExecutionError("EVM_NONCE_TOO_LOW", message).message,
    );
  });

  // The official state tests' CreateTransactionHighNonce (stCreateTest) ran these.
  it("refuses a transaction from a sender whose nonce is 2^64 - 1 (EIP-2681)", async () => {
    const max = 2n ** 64n - 1n;
    await state.setNonce(alice!.address, max);
    const root = await state.commit();
    for (const [to, library] of [
      [bob!.address, executor],
      [null, executor],
      [bob!.address, new Executor(NETWORKS.regtest, { libraryTransactions: true })],
    ] as const) {
      const refusal = library.executeTransaction(state, tx({ to }, max), BLOCK, 0n);
      await expect(refusal).rejects.toThrow(
        "nonce has max value: address 0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266, nonce: 18446744073709551615",
      );
      await expect(refusal).rejects.toMatchObject({ code: ExecutionErrorCode.NONCE_MAX });
      expect(await state.commit()).toEqual(root);
    }
  });

  // The official state tests of stEIP3607 ran these.
  it("refuses a transaction from a sender with code (EIP-3607)", async () => {
    await state.setCode(alice!.address, new Uint8Array([0x00]));
    const root = await state.commit();
    for (const to of [bob!.address, alice!.address, null]) {
      const refusal = executor.executeTransaction(state, tx({ to }), BLOCK, 0n);
      await expect(refusal).rejects.toThrow(
        "sender not an eoa: address 0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266, codehash: 0xbc36789e7a1e281436464229828f817d6612f7b477d66591ff96a9e064bcc98a",
      );
      await expect(refusal).rejects.toMatchObject({ code: ExecutionErrorCode.SENDER_NOT_EOA });
      expect(await state.commit()).toEqual(root);
    }
  });
});

describe("fee rules", () => {
  /** Returns BASEFEE and BLOBBASEFEE: 48 5f 52 4a 6020 52 6040 5f f3. */
  const FEES = new Uint8Array([0x48, 0x5f, 0x52, 0x4a, 0x60, 0x20, 0x52, 0x60, 0x40, 0x5f, 0xf3]);
  const READER = hexToBytes("0x00000000000000000000000000000000000fee00") as Address;
  const BASE_FEE = GWEI / 4n;
  const ETHEREUM_BLOCK: BlockContext = {
    ...BLOCK,
    minimumGasPrice: 0n,
    baseFeePerGas: BASE_FEE,
    blobBaseFee: 3n,
  };
  const modes = [{}, { libraryTransactions: true, libraryCalls: true }] as const;

  it("Ethereum's: the base fee is burnt, the priority fee paid to the miner", async () => {
    await state.setCode(READER, FEES);
    await state.commit();
    const ethereum = new Executor(NETWORKS.regtest, { feeRules: FeeRules.ETHEREUM });
    const out = await ethereum.executeTransaction(
      state,
      tx({ to: bob!.address, value: 5n, gasLimit: 50_000n }),
      ETHEREUM_BLOCK,
      0n,
    );
    expect(out.fee).toBe(21_000n * (GWEI - BASE_FEE));
    expect(await state.getBalance(COINBASE)).toBe(21_000n * (GWEI - BASE_FEE));
    expect(await state.getBalance(alice!.address)).toBe(100n * 10n ** 18n - 5n - 21_000n * GWEI);
    const low = ethereum.executeTransaction(
      state,
      tx({ to: bob!.address, gasPrice: BASE_FEE - 1n }, 1n),
      ETHEREUM_BLOCK,
      0n,
    );
    await expect(low).rejects.toMatchObject({ code: ExecutionErrorCode.FEE_CAP_TOO_LOW });
    await expect(low).rejects.toThrow("max fee per gas less than block base fee");
    expect(effectiveGasPrice(GWEI, GWEI, BASE_FEE)).toBe(GWEI);
    expect(effectiveGasPrice(GWEI, 1n, BASE_FEE)).toBe(BASE_FEE + 1n);
  });

  it.each(modes)(
    "BASEFEE and BLOBBASEFEE answer the block's under Ethereum's rules, 0 under the chain's (%o)",
    async (mode) => {
      await state.setCode(READER, FEES);
      await state.commit();
      const word = (n: bigint) => n.toString(16).padStart(64, "0");
      const ethereum = new Executor(NETWORKS.regtest, { ...mode, feeRules: FeeRules.ETHEREUM });
      const chain = new Executor(NETWORKS.regtest, mode);
      const called = await ethereum.call(state, { to: READER }, ETHEREUM_BLOCK);
      expect(bytesToHex(called.returnValue)).toBe(`0x${word(BASE_FEE)}${word(3n)}`);
      const onChain = await chain.call(state, { to: READER }, ETHEREUM_BLOCK);
      expect(bytesToHex(onChain.returnValue)).toBe(`0x${word(0n)}${word(0n)}`);
      const sent = await ethereum.executeTransaction(state, tx({ to: READER }), ETHEREUM_BLOCK, 0n);
      expect(bytesToHex(sent.returnValue)).toBe(`0x${word(BASE_FEE)}${word(3n)}`);
      // The chain's executor ignores the block's base fee: the whole fee to the miner.
      const before = await state.getBalance(COINBASE);
      const full = await chain.executeTransaction(
        state,
        tx({ to: READER }, 1n),
        ETHEREUM_BLOCK,
        0n,
      );
      expect(bytesToHex(full.returnValue)).toBe(`0x${word(0n)}${word(0n)}`);
      expect(full.fee).toBe(full.gasUsed * GWEI);
      expect(await state.getBalance(COINBASE)).toBe(before + full.fee);
    },
  );
});

describe("Executor.call", () => {
  it("returns the output and leaves no trace", async () => {
    const deploy = await executor.executeTransaction(
      state,
      tx({ data: deployCode(LOGGING_RUNTIME) }),
      BLOCK,
      0n,
    );
    const root = await state.commit();
    const out = await executor.call(
      state,
      { to: deploy.contractAddress, from: bob!.address, value: 0n },
      BLOCK,
    );
    expect(out.success).toBe(true);
    expect(bytesToHex(out.returnValue)).toBe(`0x${"00".repeat(31)}2a`);
    expect(await state.commit()).toEqual(root);
    expect(await state.getNonce(bob!.address)).toBe(0n);
  });

  it("decodes a revert reason", async () => {
    const deploy = await executor.executeTransaction(
      state,
      tx({ data: deployCode(revertingRuntime(errorString("not allowed"))) }),
      BLOCK,
      0n,
    );
    const out = await executor.call(state, { to: deploy.contractAddress }, BLOCK);
    expect(out.success).toBe(false);
    expect(out.error).toBe("revert");
    expect(out.revertReason).toBe("not allowed");
    expect(out.returnValue).toEqual(errorString("not allowed"));
  });
});

/**
 * Runtime that calls itself twice: once on a path that writes and reverts, once on a path that
 * writes and returns; then returns slots 0 and 1. Expected: slot 0 = 1 + 10, slot 1 = 3.
 */
const NESTED_RUNTIME = hexToBytes(
  `0x${[
    "36604057", // CALLDATASIZE PUSH1 inner JUMPI
    "6001600055", // SSTORE(0, 1)
    "6001600053", // MSTORE8(0, 1)
    "60006000600160006000305af150", // CALL(gas, self, 0, 0, 1, 0, 0); POP
    "6002600053", // MSTORE8(0, 2)
    "60006000600160006000305af150", // the same call
    "600054600052600154602052", // MSTORE(0, SLOAD(0)); MSTORE(32, SLOAD(1))
    "60406000f3", // RETURN(0, 64)
    "5b60003560f81c", // inner: JUMPDEST; the first byte of calldata
    "600114605c57", // == 1 -> revert path
    "6003600155", // SSTORE(1, 3)
    "600054600a0160005500", // SSTORE(0, SLOAD(0) + 10); STOP
    "5b", // revert path: JUMPDEST
    "60026000556005600155", // SSTORE(0, 2); SSTORE(1, 5)
    "60006000fd", // REVERT(0, 0)
  ].join("")}`,
);

/** Runtime that stores its 32-byte calldata, if any, in slot 0 and returns slot 0. */
const STORE_RUNTIME = hexToBytes(
  `0x${[
    "3615600b57", // CALLDATASIZE ISZERO PUSH1 read JUMPI
    "600035600055", // SSTORE(0, CALLDATALOAD(0))
    "5b600054600052", // read: JUMPDEST; MSTORE(0, SLOAD(0))
    "60206000f3", // RETURN(0, 32)
  ].join("")}`,
);

const word = (n: bigint) => hexToBytes(`0x${n.toString(16).padStart(64, "0")}`);

describe("Executor.call on its overlay", () => {
  async function deploy(runtime: Uint8Array, nonce = 0n): Promise<Address> {
    const out = await executor.executeTransaction(
      state,
      tx({ data: deployCode(runtime) }, nonce),
      BLOCK,
      0n,
    );
    expect(out.status).toBe(1);
    return out.contractAddress!;
  }

  it("sees its own writes, undoes a reverted frame's, and uses the gas a transaction uses", async () => {
    const address = await deploy(NESTED_RUNTIME);
    const root = await state.commit();
    const expected = `0x${"00".repeat(31)}0b${"00".repeat(31)}03`;
    const first = await executor.call(state, { to: address, from: alice!.address }, BLOCK);
    expect(first.success).toBe(true);
    expect(bytesToHex(first.returnValue)).toBe(expected);
    // nothing reached the state, and the next call starts afresh
    expect(await state.getStorage(address, new Uint8Array(32))).toEqual(new Uint8Array(32));
    const second = await executor.call(state, { to: address, from: alice!.address }, BLOCK);
    expect(bytesToHex(second.returnValue)).toBe(expected);
    expect(second.gasUsed).toBe(first.gasUsed);
    expect(await state.commit()).toEqual(root);

    const sent = await executor.executeTransaction(state, tx({ to: address }, 1n), BLOCK, 0n);
    expect(sent.status).toBe(1);
    expect(bytesToHex(sent.returnValue)).toBe(expected);
    expect(sent.gasUsed).toBe(first.gasUsed);
  });

  it("sees the state's changes made after earlier calls", async () => {
    const address = await deploy(STORE_RUNTIME);
    const read = async () =>
      bytesToHex((await executor.call(state, { to: address }, BLOCK)).returnValue);
    expect(await read()).toBe(bytesToHex(word(0n)));
    const wrote = await executor.call(state, { to: address, data: word(7n) }, BLOCK);
    expect(bytesToHex(wrote.returnValue)).toBe(bytesToHex(word(7n)));
    expect(await read()).toBe(bytesToHex(word(0n)));
    await executor.executeTransaction(state, tx({ to: address, data: word(9n) }, 1n), BLOCK, 0n);
    expect(await read()).toBe(bytesToHex(word(9n)));
    await state.commit();
    expect(await read()).toBe(bytesToHex(word(9n)));
  });

  it("runs calls on one state at the same time, each on its own writes", async () => {
    const address = await deploy(STORE_RUNTIME);
    const values = [1n, 2n, 3n, 4n, 5n, 6n];
    const outs = await Promise.all(
      values.map((v) => executor.call(state, { to: address, data: word(v) }, BLOCK)),
    );
    expect(outs.map((o) => bytesToHex(o.returnValue))).toEqual(
      values.map((v) => bytesToHex(word(v))),
    );
    expect(await state.getStorage(address, new Uint8Array(32))).toEqual(new Uint8Array(32));
  });

  it("creates a contract when `to` is null, and keeps nothing of it", async () => {
    const out = await executor.call(
      state,
      { to: null, from: alice!.address, data: deployCode(LOGGING_RUNTIME) },
      BLOCK,
    );
    expect(out.success).toBe(true);
    expect(out.returnValue).toEqual(LOGGING_RUNTIME);
    expect(await state.getCode(contractAddress(alice!.address, 0n))).toEqual(new Uint8Array());
    expect(await state.getNonce(alice!.address)).toBe(0n);
  });

  it("reports running out of gas, an invalid opcode and too little gas as before", async () => {
    const address = await deploy(LOGGING_RUNTIME);
    const oog = await executor.call(state, { to: address, gas: 21_100n }, BLOCK);
    expect(oog).toMatchObject({ success: false, error: "out of gas", gasUsed: 21_100n });
    const invalid = await deploy(new Uint8Array([0x60, 0x01, 0xfe]), 1n);
    const bad = await executor.call(state, { to: invalid, gas: 50_000n }, BLOCK);
    expect(bad).toMatchObject({ success: false, error: "invalid opcode", gasUsed: 50_000n });
    const short = await executor.call(state, { to: address, gas: 20_000n }, BLOCK);
    expect(short).toMatchObject({ success: false, error: "out of gas", gasUsed: 20_000n });
    // and a good call after them still works
    const ok = await executor.call(state, { to: address }, BLOCK);
    expect(bytesToHex(ok.returnValue)).toBe(`0x${"00".repeat(31)}2a`);
  });
});

describe("precompiles", () => {
  it("has Ethereum's 0x01–0x09 and not Cancun's 0x0a", async () => {
    const at = (n: number) =>
      hexToBytes(`0x${"00".repeat(19)}${n.toString(16).padStart(2, "0")}`) as Address;
    // identity (0x04) echoes its input
    const identity = await executor.call(
      state,
      { to: at(4), data: new Uint8Array([1, 2, 3]) },
      BLOCK,
    );
    expect(identity.returnValue).toEqual(new Uint8Array([1, 2, 3]));
    // 0x0a is an empty account: a call succeeds with no output and no precompile cost
    const kzg = await executor.call(state, { to: at(10), data: new Uint8Array(192) }, BLOCK);
    expect(kzg.success).toBe(true);
    expect(kzg.returnValue).toEqual(new Uint8Array());
    expect(kzg.gasUsed).toBeLessThan(21_000n + 192n * 4n + 3_000n);
  });
});

describe("EVMs", () => {
  it("hold no reference from the executor's Common, so they go with their state", async () => {
    const fresh = new Executor(NETWORKS.regtest);
    await fresh.call(state, { to: bob!.address }, BLOCK);
    await fresh.executeTransaction(state, tx({ to: bob!.address }), BLOCK, 0n);
    expect(fresh.common.events.listenerCount("hardforkChanged")).toBe(0);
  });
});

describe("intrinsicGas", () => {
  it("charges for calldata and creation as Cancun does", () => {
    expect(intrinsicGas({ to: bob!.address, data: new Uint8Array() })).toBe(21_000n);
    expect(intrinsicGas({ to: bob!.address, data: new Uint8Array([0, 1, 0, 2]) })).toBe(
      21_000n + 4n + 16n + 4n + 16n,
    );
    expect(intrinsicGas({ to: null, data: new Uint8Array(33) })).toBe(
      21_000n + 32_000n + 33n * 4n + 2n * 2n,
    );
  });
});

describe("Executor.call's deadline", () => {
  // JUMPDEST PUSH1 0 JUMP: a loop until the gas runs out.
  const LOOP = Uint8Array.from([0x5b, 0x60, 0x00, 0x56]);
  const LOOPER = bob!.address;

  it("stops a call past its deadline with TraceAbort, and runs one before it to its end", async () => {
    await state.setCode(LOOPER, LOOP);
    await state.commit();
    // A deadline already past: the call stops at the first look at the clock (4096 jumps).
    const stopped = executor.call(state, { to: LOOPER, gas: 1_000_000n }, BLOCK, {
      deadline: Date.now() - 1,
    });
    await expect(stopped).rejects.toBeInstanceOf(TraceAbort);
    await expect(stopped).rejects.toMatchObject({ reason: "deadline" });
    // Far ahead: the loop runs out of gas, as without one.
    const ran = await executor.call(state, { to: LOOPER, gas: 1_000_000n }, BLOCK, {
      deadline: Date.now() + 3_600_000,
    });
    expect(ran.success).toBe(false);
    expect(ran.gasUsed).toBe(1_000_000n);
    // A call that jumps fewer than 4096 times never looks at the clock.
    const short = await executor.call(state, { to: LOOPER, gas: 21_000n + 4000n }, BLOCK, {
      deadline: Date.now() - 1,
    });
    expect(short.success).toBe(false);
  });
});
