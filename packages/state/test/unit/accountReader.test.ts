import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Address, bytesToHex, keccak256 } from "@nodex/types";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  AccountReader,
  Database,
  EMPTY_TRIE_ROOT,
  NodeCache,
  NodeStore,
  StateError,
  StateErrorCode,
  WorldState,
} from "../../src/index.js";

let dir: string;
let db: Database;
beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), "nodex-accounts-"));
  db = await Database.open(join(dir, "db"));
});
afterEach(async () => {
  await db.close().catch(() => {});
  rmSync(dir, { recursive: true, force: true });
});

/** The `n`-th test address (keccak of n: spread over the trie). */
const address = (n: number) => keccak256(Uint8Array.of(n >> 8, n & 0xff)).slice(12) as Address;

const seen = (a: Awaited<ReturnType<WorldState["getAccount"]>>) =>
  a === undefined
    ? undefined
    : {
        nonce: a.nonce,
        balance: a.balance,
        storageRoot: bytesToHex(a.storageRoot),
        codeHash: bytesToHex(a.codeHash),
      };

describe("AccountReader", () => {
  it("reads every account as the WorldState at the same root does, present or absent, as the state grows", async () => {
    const cache = new NodeCache();
    const store = new NodeStore(db, cache);
    const state = await WorldState.open(store);
    let count = 0;
    for (const size of [1, 2, 17, 300]) {
      for (; count < size; count++) {
        const a = address(count);
        await state.setBalance(a, BigInt(count) * 10n ** 18n + 1n);
        if (count % 3 === 0) await state.setNonce(a, BigInt(count));
        if (count % 5 === 0) {
          await state.setCode(a, Uint8Array.of(0x60, count & 0xff, 0x00));
          await state.setStorage(a, new Uint8Array(32).fill(count & 0xff), Uint8Array.of(count));
        }
      }
      const root = await state.commit();
      await db.write(store.takeWrites([root]));
      store.confirmWrites();
      // Read from a fresh store over the same database, as the chain's readers do.
      const opened = await WorldState.open(new NodeStore(db, cache), root);
      const reader = new AccountReader(new NodeStore(db, cache), root);
      for (let n = 0; n < count + 20; n++) {
        const a = address(n);
        const want = seen(await opened.getAccount(a));
        expect(seen(await reader.getAccount(a)), `account ${n} of ${count}`).toEqual(want);
        expect(want === undefined).toBe(n >= count);
      }
    }
  });

  it("reads accounts still waiting to be written, from the store that holds them", async () => {
    const store = new NodeStore(db);
    const state = await WorldState.open(store);
    await state.setBalance(address(1), 5n);
    const root = await state.commit();
    expect((await new AccountReader(store, root).getAccount(address(1)))?.balance).toBe(5n);
    // Another store over the database does not have them.
    await expect(new AccountReader(new NodeStore(db), root).getAccount(address(1))).rejects.toThrow(
      StateError,
    );
  });

  it("has no account in the empty state, and names the root a missing one lacks", async () => {
    const store = new NodeStore(db);
    expect(await new AccountReader(store, EMPTY_TRIE_ROOT).getAccount(address(0))).toBeUndefined();
    const missing = new Uint8Array(32).fill(0xab);
    const error = await new AccountReader(store, missing).getAccount(address(0)).catch((e) => e);
    expect(error).toBeInstanceOf(StateError);
    expect((error as StateError).code).toBe(StateErrorCode.ROOT_MISSING);
    expect((error as StateError).message).toContain("ab".repeat(32));
  });
});
