import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Account, Address as EJSAddress, KECCAK256_NULL, KECCAK256_RLP } from "@ethereumjs/util";
import { Database, NodeStore, WorldState } from "@nodex/state";
import { type Address, hexToBytes, keccak256 } from "@nodex/types";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { CallStateManager, CodeByHash } from "../../src/callState.js";

const A = hexToBytes(`0x${"00".repeat(19)}aa`) as Address;
const B = hexToBytes(`0x${"00".repeat(19)}bb`) as Address;
const a = new EJSAddress(A);
const b = new EJSAddress(B);
const CODE = new Uint8Array([0x60, 0x01, 0x00]);
const slot = (n: number) => {
  const key = new Uint8Array(32);
  key[31] = n;
  return key;
};

let dir: string;
let db: Database;
let state: WorldState;
let overlay: CallStateManager;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), "nodex-callstate-"));
  db = await Database.open(join(dir, "db"));
  state = await WorldState.open(new NodeStore(db));
  await state.setBalance(A, 100n);
  await state.setCode(A, CODE);
  await state.setStorage(A, slot(1), new Uint8Array([7]));
  await state.commit();
  overlay = new CallStateManager(state.manager, new CodeByHash());
});
afterEach(async () => {
  await db.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("CallStateManager", () => {
  it("reads through to the base state", async () => {
    expect((await overlay.getAccount(a))?.balance).toBe(100n);
    expect(await overlay.getAccount(b)).toBeUndefined();
    expect(await overlay.getCode(a)).toEqual(CODE);
    expect(await overlay.getCodeSize(a)).toBe(3);
    expect(await overlay.getCode(b)).toEqual(new Uint8Array());
    expect(await overlay.getStorage(a, slot(1))).toEqual(new Uint8Array([7]));
    expect(await overlay.getStorage(a, slot(2))).toEqual(new Uint8Array());
  });

  it("hands out one array per code, and copies of accounts", async () => {
    const other = new CallStateManager(state.manager, new CodeByHash());
    const codes = new CodeByHash();
    const one = new CallStateManager(state.manager, codes);
    const two = new CallStateManager(state.manager, codes);
    expect(await one.getCode(a)).toBe(await two.getCode(a));
    expect(await other.getCode(a)).toEqual(await one.getCode(a));
    const account = (await overlay.getAccount(a))!;
    account.balance = 1n;
    expect((await overlay.getAccount(a))?.balance).toBe(100n);
    await overlay.putAccount(a, account);
    account.balance = 2n;
    expect((await overlay.getAccount(a))?.balance).toBe(1n);
  });

  it("keeps writes to itself, and forgets them on reset", async () => {
    await overlay.putAccount(b, new Account(1n, 5n));
    await overlay.putStorage(a, slot(1), new Uint8Array([0, 0, 9]));
    await overlay.putCode(b, CODE);
    expect((await overlay.getAccount(b))?.balance).toBe(5n);
    expect((await overlay.getAccount(b))?.codeHash).toEqual(keccak256(CODE));
    expect(await overlay.getStorage(a, slot(1))).toEqual(new Uint8Array([9]));
    expect(await overlay.getCode(b)).toEqual(CODE);
    expect(overlay.dirty).toBe(true);
    expect(await state.getAccount(B)).toBeUndefined();
    expect((await state.getStorage(A, slot(1)))[31]).toBe(7);

    overlay.reset();
    expect(overlay.dirty).toBe(false);
    expect(await overlay.getAccount(b)).toBeUndefined();
    expect(await overlay.getStorage(a, slot(1))).toEqual(new Uint8Array([7]));
  });

  it("reverts and commits nested checkpoints", async () => {
    await overlay.checkpoint();
    await overlay.putStorage(a, slot(1), new Uint8Array([1]));
    await overlay.checkpoint();
    await overlay.putStorage(a, slot(1), new Uint8Array([2]));
    await overlay.putStorage(a, slot(3), new Uint8Array([3]));
    await overlay.modifyAccountFields(a, { nonce: 4n });
    await overlay.revert();
    expect(await overlay.getStorage(a, slot(1))).toEqual(new Uint8Array([1]));
    expect(await overlay.getStorage(a, slot(3))).toEqual(new Uint8Array());
    expect((await overlay.getAccount(a))?.nonce).toBe(0n);

    await overlay.checkpoint();
    await overlay.putStorage(a, slot(3), new Uint8Array([3]));
    await overlay.commit();
    expect(await overlay.getStorage(a, slot(3))).toEqual(new Uint8Array([3]));
    await overlay.revert(); // the outer checkpoint takes the committed inner writes with it
    expect(await overlay.getStorage(a, slot(1))).toEqual(new Uint8Array([7]));
    expect(await overlay.getStorage(a, slot(3))).toEqual(new Uint8Array());
  });

  it("deletes an account with its code and storage, undone by a revert", async () => {
    await overlay.checkpoint();
    await overlay.deleteAccount(a);
    expect(await overlay.getAccount(a)).toBeUndefined();
    expect(await overlay.getCode(a)).toEqual(new Uint8Array());
    expect(await overlay.getStorage(a, slot(1))).toEqual(new Uint8Array());
    await overlay.putAccount(a, new Account());
    expect(await overlay.getStorage(a, slot(1))).toEqual(new Uint8Array());
    expect((await overlay.getAccount(a))?.codeHash).toEqual(KECCAK256_NULL);
    await overlay.revert();
    expect((await overlay.getAccount(a))?.balance).toBe(100n);
    expect(await overlay.getCode(a)).toEqual(CODE);
    expect(await overlay.getStorage(a, slot(1))).toEqual(new Uint8Array([7]));
  });

  it("clears storage and (re)creates the account", async () => {
    await overlay.clearStorage(a);
    expect(await overlay.getStorage(a, slot(1))).toEqual(new Uint8Array());
    expect((await overlay.getAccount(a))?.storageRoot).toEqual(KECCAK256_RLP);
    await overlay.clearStorage(b);
    expect(await overlay.getAccount(b)).toBeDefined();
  });

  it("refuses storage of a missing account and malformed keys and values", async () => {
    await expect(overlay.putStorage(b, slot(1), new Uint8Array([1]))).rejects.toThrow(
      "non-existing account",
    );
    await expect(overlay.getStorage(a, new Uint8Array(31))).rejects.toThrow("32 bytes");
    await expect(overlay.putStorage(a, slot(1), new Uint8Array(33))).rejects.toThrow("32 bytes");
  });

  it("remembers a slot's value at its first look until the outermost checkpoint ends", async () => {
    await overlay.checkpoint();
    expect(await overlay.originalStorageCache.get(a, slot(1))).toEqual(new Uint8Array([7]));
    await overlay.putStorage(a, slot(1), new Uint8Array([8]));
    expect(await overlay.originalStorageCache.get(a, slot(1))).toEqual(new Uint8Array([7]));
    await overlay.commit();
    expect(await overlay.originalStorageCache.get(a, slot(1))).toEqual(new Uint8Array([8]));
  });
});
