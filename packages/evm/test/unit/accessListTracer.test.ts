import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Database, NodeStore, WorldState } from "@nodex/state";
import {
  type Address,
  bytesToHex,
  contractAddress,
  deriveDevAccounts,
  type Hash32,
  hexToBytes,
  NETWORKS,
} from "@nodex/types";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { AccessListTracer, Executor } from "../../src/index.js";
import { deployCode, regtestTx } from "./bytecode.js";
import { BLOCK } from "./fixtures.js";

const [alice] = deriveDevAccounts();
const word = (n: number) => `0x${n.toString(16).padStart(64, "0")}`;
const BEEF = hexToBytes("0x000000000000000000000000000000000000beef");

/** Runtime of the library: sload(5), then stop. */
const LIBRARY = Uint8Array.from([0x60, 0x05, 0x54, 0x50, 0x00]);

/**
 * Runtime of the caller: sstore(9, 1), BALANCE(0xbeef), BALANCE(itself), BALANCE(caller),
 * STATICCALL to the ECRECOVER precompile, then DELEGATECALL to `library`.
 */
function callerRuntime(library: Uint8Array): Uint8Array {
  return Uint8Array.from([
    0x60,
    0x01,
    0x60,
    0x09,
    0x55, // sstore(9, 1)
    0x61,
    0xbe,
    0xef,
    0x31,
    0x50, // balance(0xbeef)
    0x30,
    0x31,
    0x50, // balance(address)
    0x33,
    0x31,
    0x50, // balance(caller)
    0x5f,
    0x5f,
    0x5f,
    0x5f,
    0x60,
    0x01,
    0x5a,
    0xfa,
    0x50, // staticcall(gas, 1, 0, 0, 0, 0)
    0x5f,
    0x5f,
    0x5f,
    0x5f,
    0x73,
    ...library,
    0x5a,
    0xf4,
    0x50, // delegatecall(gas, library, …)
    0x00,
  ]);
}

let dir: string;
let db: Database;
beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), "nodex-accesslist-"));
  db = await Database.open(join(dir, "db"));
});
afterEach(async () => {
  await db.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("AccessListTracer", () => {
  it("lists slots under the storage's account and the accounts named, as geth does", async () => {
    const executor = new Executor(NETWORKS.regtest);
    const state = await WorldState.open(new NodeStore(db));
    await state.setBalance(alice!.address, 10n ** 20n);
    const library = contractAddress(alice!.address, 0n);
    const caller = contractAddress(alice!.address, 1n);
    for (const [nonce, code] of [
      [0n, LIBRARY],
      [1n, callerRuntime(library)],
    ] as const)
      await executor.executeTransaction(
        state,
        regtestTx({ data: deployCode(code) }, nonce, alice!.privateKey),
        BLOCK,
        0n,
      );
    const tracer = new AccessListTracer({
      initial: [
        {
          address: hexToBytes("0x00000000000000000000000000000000000000aa") as Address,
          storageKeys: [hexToBytes(word(3)) as Hash32],
        },
        // the sender without slots: left out, as geth leaves it out
        { address: alice!.address, storageKeys: [] },
      ],
    });
    const out = await executor.traceCall(
      state,
      { from: alice!.address, to: caller, gas: 200_000n },
      BLOCK,
      tracer,
    );
    expect(out.success).toBe(true);
    const list = tracer.result().map((e) => ({
      address: bytesToHex(e.address),
      storageKeys: e.storageKeys.map(bytesToHex),
    }));
    // The caller (the recipient) with slots 5 (the library's SLOAD, on the caller's storage)
    // and 9; the library (named by DELEGATECALL); 0xbeef; not the sender, nor 0x01.
    expect(list).toEqual(
      [
        { address: "0x00000000000000000000000000000000000000aa", storageKeys: [word(3)] },
        { address: bytesToHex(BEEF), storageKeys: [] },
        { address: bytesToHex(caller), storageKeys: [word(5), word(9)] },
        { address: bytesToHex(library), storageKeys: [] },
      ].sort((a, b) => (a.address < b.address ? -1 : 1)),
    );
  });
});
