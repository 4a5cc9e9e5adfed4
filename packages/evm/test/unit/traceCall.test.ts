import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Database, NodeStore, WorldState } from "@nodex/state";
import { contractAddress, deriveDevAccounts, NETWORKS } from "@nodex/types";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { CallTracer, Executor, PrestateTracer, StructLogger } from "../../src/index.js";
import { deployCode, regtestTx } from "./bytecode.js";
import { BLOCK } from "./fixtures.js";

const [alice] = deriveDevAccounts();

/** Runtime: sstore(0, sload(0) + callvalue), log0 of nothing, return 32 bytes of slot 0. */
const RUNTIME = Uint8Array.from([
  0x5f, 0x54, 0x34, 0x01, 0x80, 0x5f, 0x55, 0x5f, 0x52, 0x5f, 0x5f, 0xa0, 0x60, 0x20, 0x5f, 0xf3,
]);

let dir: string;
let db: Database;
const executor = new Executor(NETWORKS.regtest);

/** A state with alice funded and RUNTIME deployed by her (nonce 0). */
async function setUp(): Promise<WorldState> {
  const state = await WorldState.open(new NodeStore(db));
  await state.setBalance(alice!.address, 10n ** 20n);
  await executor.executeTransaction(
    state,
    regtestTx({ data: deployCode(RUNTIME) }, 0n, alice!.privateKey),
    BLOCK,
    0n,
  );
  await state.commit();
  return state;
}

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), "nodex-tracecall-"));
  db = await Database.open(join(dir, "db"));
});
afterEach(async () => {
  await db.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("Executor.traceCall", () => {
  it("traces a call as the transaction it would be, and leaves the state as it was", async () => {
    const state = await setUp();
    const to = contractAddress(alice!.address, 0n);
    const root = await state.commit();
    const req = { from: alice!.address, to, value: 5n, gas: 100_000n, gasPrice: 0n };
    const tracers = () => [new CallTracer(), new StructLogger(), new PrestateTracer()] as const;
    const traced = tracers();
    for (const tracer of traced) {
      const out = await executor.traceCall(state, req, BLOCK, tracer);
      expect(out.success).toBe(true);
      expect(out.returnValue[31]).toBe(5);
    }
    expect(await state.commit()).toEqual(root);
    expect((await state.getStorage(to, new Uint8Array(32))).every((b) => b === 0)).toBe(true);

    // The same transaction, on copies of the state (its gas price is regtest's minimum, 1).
    const sent = tracers();
    for (const [i, tracer] of sent.entries()) {
      const copy = await setUp();
      const tx = regtestTx(
        { to, value: 5n, data: new Uint8Array() },
        1n,
        alice!.privateKey,
        100_000n,
      );
      const out = await executor.executeTransaction(copy, tx, BLOCK, 0n, tracer);
      expect(out.status, String(i)).toBe(1);
    }
    const call = traced[0].result();
    const tx = sent[0].result();
    expect(call).toEqual(tx);
    expect(traced[1].result()).toEqual(sent[1].result());
    // the accounts before: the same (what the transaction pays is taken after txStart)
    expect(traced[2].result()).toEqual(sent[2].result());
  });
});
