import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Hardfork } from "@ethereumjs/common";
import { Database, NodeStore, WorldState } from "@nodex/state";
import { deriveDevAccounts, hexToBytes, NETWORKS } from "@nodex/types";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import {
  EVM_HARDFORK,
  Executor,
  fastPathStatus,
  installedEvmVersion,
  VERIFIED_EVM_VERSION,
  VERIFIED_HARDFORK,
} from "../../src/index.js";
import { CallInterpreter } from "../../src/interpreter/index.js";
import { deployCode, regtestTx } from "./bytecode.js";
import { BLOCK } from "./fixtures.js";

const [alice] = deriveDevAccounts();

let dir: string;
let db: Database;
beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), "nodex-fastpaths-"));
  db = await Database.open(join(dir, "db"));
});
afterEach(async () => {
  vi.restoreAllMocks();
  await db.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("the fast paths' front door", () => {
  it("knows the library version it was verified on, and the installed one is it (pinned)", () => {
    expect(installedEvmVersion()).toBe(VERIFIED_EVM_VERSION);
    expect(VERIFIED_HARDFORK).toBe(EVM_HARDFORK);
    expect(fastPathStatus(EVM_HARDFORK)).toEqual({ on: true });
  });

  it("turns them off for another library version or hardfork, saying why", () => {
    expect(fastPathStatus(EVM_HARDFORK, "10.2.0")).toEqual({
      on: false,
      reason: `@ethereumjs/evm 10.2.0 is installed; the fast paths were verified on ${VERIFIED_EVM_VERSION}`,
    });
    expect(fastPathStatus(Hardfork.Prague)).toEqual({
      on: false,
      reason: `the executor runs the prague hardfork; the fast paths were verified for ${VERIFIED_HARDFORK}`,
    });
  });

  it("refuses a hardfork whose intrinsic gas it does not know", () => {
    expect(() => new Executor(NETWORKS.regtest, { hardfork: Hardfork.Prague })).toThrow(
      "intrinsicGas has the rules of shanghai and cancun, not of prague",
    );
  });

  it("runs an executor of another hardfork on the library alone, with that hardfork's opcodes", async () => {
    const shanghai = new Executor(NETWORKS.regtest, { hardfork: Hardfork.Shanghai });
    expect(shanghai.fastPaths.on).toBe(false);
    expect(new Executor(NETWORKS.regtest).fastPaths.on).toBe(true);
    const interpreter = vi.spyOn(CallInterpreter.prototype, "call");
    const state = await WorldState.open(new NodeStore(db));
    await state.setBalance(alice!.address, 10n ** 20n);
    await state.commit();
    // A contract that answers TLOAD(0) (Cancun): an invalid opcode before it.
    const out = await shanghai.executeTransaction(
      state,
      regtestTx(
        { data: deployCode(Uint8Array.from([0x5f, 0x5c, 0x5f, 0x52, 0x60, 32, 0x5f, 0xf3])) },
        0n,
        alice!.privateKey,
      ),
      BLOCK,
      0n,
    );
    expect(out.status).toBe(1);
    const at = out.contractAddress!;
    const onShanghai = await shanghai.call(state, { to: at, data: new Uint8Array() }, BLOCK);
    expect(onShanghai.success).toBe(false);
    expect(onShanghai.error).toBe("invalid opcode");
    expect(interpreter).not.toHaveBeenCalled();
    const onCancun = await new Executor(NETWORKS.regtest).call(
      state,
      { to: at, data: new Uint8Array() },
      BLOCK,
    );
    expect(onCancun.success).toBe(true);
    expect(onCancun.returnValue).toEqual(hexToBytes(`0x${"00".repeat(32)}`));
    expect(interpreter).toHaveBeenCalled();
  });
});
