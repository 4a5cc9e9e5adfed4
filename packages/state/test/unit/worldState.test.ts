import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createMPT, verifyMerkleProof } from "@ethereumjs/mpt";
import { Caches, MerkleStateManager } from "@ethereumjs/statemanager";
import { Account, Address as EJSAddress } from "@ethereumjs/util";
import { type Address, bytesToHex, hexToBytes, keccak256, NodexError } from "@nodex/types";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import {
  Database,
  EMPTY_TRIE_ROOT,
  NodeCache,
  NodeStore,
  StateError,
  StateErrorCode,
  WorldState,
} from "../../src/index.js";
import { READ_CACHE_ENTRIES } from "../../src/worldState.js";

const ALICE = hexToBytes("0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266") as Address;
const TOKEN = hexToBytes("0x5fbdb2315678afecb367f032d93f642f64180aa3") as Address;
const slot = (n: number) => {
  const s = new Uint8Array(32);
  s[31] = n;
  return s;
};

let dir: string;
let db: Database;
beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), "nodex-state-"));
  db = await Database.open(join(dir, "db"));
});
afterEach(async () => {
  await db.close().catch(() => {});
  rmSync(dir, { recursive: true, force: true });
});

async function commitTo(db: Database, store: NodeStore, state: WorldState): Promise<Uint8Array> {
  const root = await state.commit();
  await db.write(store.takeWrites());
  store.confirmWrites();
  return root;
}

describe("WorldState on LevelDB", () => {
  it("starts empty, with the empty trie root", async () => {
    const state = await WorldState.open(new NodeStore(db));
    expect(await state.root()).toEqual(EMPTY_TRIE_ROOT);
    expect(await state.getBalance(ALICE)).toBe(0n);
    expect(await state.getAccount(ALICE)).toBeUndefined();
    expect(await state.getStorage(TOKEN, slot(0))).toEqual(new Uint8Array(32));
  });

  it("keeps accounts, storage and code across a reopen of the database", async () => {
    const store = new NodeStore(db);
    const state = await WorldState.open(store);
    await state.setBalance(ALICE, 10n ** 22n);
    await state.setNonce(ALICE, 3n);
    await state.setCode(TOKEN, new Uint8Array([0x60, 0x00, 0x60, 0x00, 0xf3]));
    await state.setStorage(TOKEN, slot(1), hexToBytes("0x2a"));
    const root = await commitTo(db, store, state);
    expect(store.pendingCount).toBe(0);
    await db.close();

    db = await Database.open(join(dir, "db"));
    const reopened = await WorldState.open(new NodeStore(db), root);
    expect(await reopened.getBalance(ALICE)).toBe(10n ** 22n);
    expect(await reopened.getNonce(ALICE)).toBe(3n);
    expect(bytesToHex(await reopened.getCode(TOKEN))).toBe("0x60006000f3");
    expect(bytesToHex(await reopened.getStorage(TOKEN, slot(1)))).toBe(`0x${"00".repeat(31)}2a`);
    expect((await reopened.getAccount(TOKEN))?.codeHash).toEqual(
      keccak256(new Uint8Array([0x60, 0x00, 0x60, 0x00, 0xf3])),
    );
  });

  it("counts its changes: every write and revert, through its methods or its manager; no read", async () => {
    const state = await WorldState.open(new NodeStore(db));
    const counts: number[] = [state.changes];
    const after = async (step: () => Promise<unknown>) => {
      await step();
      counts.push(state.changes);
    };
    await after(() => state.setBalance(ALICE, 5n));
    await after(() => state.setStorage(TOKEN, slot(1), hexToBytes("0x01")));
    await after(() => state.getBalance(ALICE));
    await after(() => state.getStorage(TOKEN, slot(1)));
    await after(() => state.manager.checkpoint());
    await after(() => state.setBalance(ALICE, 6n));
    await after(() => state.manager.revert());
    await after(() => state.commit());
    expect(await state.getBalance(ALICE)).toBe(5n);
    const [c0, balance, storage, read1, read2, checkpoint, inside, reverted, committed] = counts;
    expect(balance).toBeGreaterThan(c0!);
    expect(storage).toBeGreaterThan(balance!);
    expect([read1, read2, checkpoint]).toEqual([storage, storage, storage]);
    expect(inside).toBeGreaterThan(checkpoint!);
    expect(reverted).toBeGreaterThan(inside!);
    expect(committed).toBe(reverted);
  });

  it("reaches the library's state root through writes, overwrites, zeroed slots, deletions and reverted checkpoints", async () => {
    const store = new NodeStore(db);
    const state = await WorldState.open(store);
    const library = new MerkleStateManager({
      trie: await createMPT({ useKeyHashing: true }),
      caches: new Caches(),
    });
    let seed = 5;
    const r = (n: number) => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      return (seed >>> 8) % n;
    };
    const address = (n: number) =>
      new EJSAddress(Uint8Array.from({ length: 20 }, (_, i) => n * 7 + i));
    for (let round = 0; round < 40; round++) {
      // Each round is one transaction: a checkpoint, committed or reverted, with a nested one.
      const revert = r(4) === 0;
      for (const m of [state.manager, library]) await m.checkpoint();
      const ops = Array.from({ length: 12 }, () => [r(3), r(5), r(6), r(4)] as const);
      for (const [i, [kind, who, key, value]] of ops.entries()) {
        if (i === 6) for (const m of [state.manager, library]) await m.checkpoint();
        for (const m of [state.manager, library]) {
          const a = address(who);
          // Accounts change as the EVM changes them: their fields, never their storage root.
          if ((await m.getAccount(a)) === undefined)
            await m.putAccount(a, new Account(0n, BigInt(value * 1000 + round)));
          else if (kind === 0)
            await m.modifyAccountFields(a, { nonce: BigInt(round), balance: BigInt(value) });
          else if (kind === 1)
            await m.putStorage(
              a,
              slot(key),
              value === 0 ? new Uint8Array() : Uint8Array.of(value, round),
            );
          else await m.getStorage(a, slot(key));
        }
        if (i === 9)
          for (const m of [state.manager, library])
            await (round % 3 === 0 ? m.revert() : m.commit());
      }
      for (const m of [state.manager, library]) await (revert ? m.revert() : m.commit());
      expect(bytesToHex(await state.root())).toBe(bytesToHex(await library.getStateRoot()));
    }
    for (let who = 0; who < 5; who++)
      for (let key = 0; key < 6; key++) {
        const [a, b] = [
          await state.manager.getStorage(address(who), slot(key)),
          await library.getStorage(address(who), slot(key)),
        ];
        expect(bytesToHex(a)).toBe(bytesToHex(b));
      }
    const root = await commitTo(db, store, state);
    const reopened = await WorldState.open(new NodeStore(db), root);
    expect(bytesToHex(await reopened.getStorage(address(1).bytes as Address, slot(2)))).toBe(
      bytesToHex(await state.getStorage(address(1).bytes as Address, slot(2))),
    );
  });

  it("gives an account created again at a deleted account's address empty storage", async () => {
    const state = await WorldState.open(new NodeStore(db));
    const m = state.manager;
    const a = new EJSAddress(TOKEN);
    await m.putAccount(a, new Account(1n, 0n));
    await m.putStorage(a, slot(1), Uint8Array.of(7));
    await state.commit();
    // A later transaction on the same open state reads the slot, destroys the contract and
    // creates one at the same address, which writes another slot.
    await m.checkpoint();
    expect(bytesToHex(await m.getStorage(a, slot(1)))).toBe("0x07");
    await m.deleteAccount(a);
    await m.putAccount(a, new Account(1n, 0n));
    await m.putStorage(a, slot(2), Uint8Array.of(9));
    await m.commit();
    await state.commit();
    expect(bytesToHex(await m.getStorage(a, slot(1)))).toBe("0x");
    const fresh = await WorldState.open(new NodeStore(db));
    await fresh.manager.putAccount(a, new Account(1n, 0n));
    await fresh.manager.putStorage(a, slot(2), Uint8Array.of(9));
    await fresh.commit();
    expect(bytesToHex((await m.getAccount(a))!.storageRoot)).toBe(
      bytesToHex((await fresh.manager.getAccount(a))!.storageRoot),
    );
  });

  it("keeps older roots readable (archive)", async () => {
    const store = new NodeStore(db);
    const state = await WorldState.open(store);
    await state.setBalance(ALICE, 1n);
    const first = await commitTo(db, store, state);
    await state.setBalance(ALICE, 2n);
    const second = await commitTo(db, store, state);
    expect(first).not.toEqual(second);
    expect(await (await WorldState.open(new NodeStore(db), first)).getBalance(ALICE)).toBe(1n);
    expect(await (await WorldState.open(new NodeStore(db), second)).getBalance(ALICE)).toBe(2n);
  });

  it("writes nothing to disk until the caller writes the batch", async () => {
    const store = new NodeStore(db);
    const state = await WorldState.open(store);
    await state.setBalance(ALICE, 5n);
    const root = await state.commit();
    expect(store.pendingCount).toBeGreaterThan(0);
    await expect(WorldState.open(new NodeStore(db), root)).rejects.toThrow(
      "is not in the database",
    );
    const err = await WorldState.open(new NodeStore(db), root).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StateError);
    expect(err).toBeInstanceOf(NodexError);
    expect((err as StateError).code).toBe(StateErrorCode.ROOT_MISSING);
    expect((err as StateError).code).toBe("STATE_ROOT_MISSING");
    expect((err as StateError).message).toBe(
      `state root ${Buffer.from(root).toString("hex")} is not in the database`,
    );
    await db.write(store.takeWrites());
    expect(await (await WorldState.open(new NodeStore(db), root)).getBalance(ALICE)).toBe(5n);
  });

  it("proves an account and a storage slot against the state root", async () => {
    const store = new NodeStore(db);
    const state = await WorldState.open(store);
    await state.setBalance(ALICE, 7n);
    await state.setStorage(TOKEN, slot(3), hexToBytes("0x0102"));
    await state.setBalance(TOKEN, 1n);
    const root = await commitTo(db, store, state);
    const proof = await state.getProof(TOKEN, [slot(3)]);
    expect(proof.balance).toBe(1n);
    expect(proof.storageProof[0]?.value).toBe(0x0102n);
    const accountRlp = await verifyMerkleProof(keccak256(TOKEN), [...proof.accountProof], {
      useKeyHashing: false,
    });
    expect(accountRlp).not.toBeNull();
    expect(keccak256(proof.accountProof[0]!)).toEqual(root);
    expect(keccak256(proof.storageProof[0]!.proof[0]!)).toEqual(proof.storageHash);
  });

  it("proves an absent account, with one empty storage proof per slot asked", async () => {
    const store = new NodeStore(db);
    const state = await WorldState.open(store);
    await state.setBalance(TOKEN, 1n);
    const root = await commitTo(db, store, state);
    const absent = hexToBytes("0x00000000000000000000000000000000000b0b0b") as Address;
    const proof = await state.getProof(absent, [slot(3), slot(4)]);
    expect(proof.balance).toBe(0n);
    expect(proof.storageHash).toEqual(EMPTY_TRIE_ROOT);
    expect(proof.storageProof).toEqual([
      { key: slot(3), value: 0n, proof: [] },
      { key: slot(4), value: 0n, proof: [] },
    ]);
    expect(keccak256(proof.accountProof[0]!)).toEqual(root);
    expect(
      await verifyMerkleProof(keccak256(absent), [...proof.accountProof], { root }),
    ).toBeNull();
  });
});

describe("the caches of a state", () => {
  const other = (i: number) => {
    const address = new Uint8Array(20);
    new DataView(address.buffer).setUint32(16, i + 1);
    return address as Address;
  };

  it("start over after so many reads of a state that is only read, and keep a written state's values", async () => {
    const store = new NodeStore(db);
    const state = await WorldState.open(store);
    await state.setBalance(ALICE, 5n);
    const root = await commitTo(db, store, state);

    // The trie's nodes from memory: each read below costs a walk, not a LevelDB read.
    const nodes = new NodeCache(100);
    const readStore = new NodeStore(db, nodes);
    const reader = await WorldState.open(readStore, root);
    expect(await reader.getBalance(ALICE)).toBe(5n);
    const reads = vi.spyOn(readStore, "get");
    expect(await reader.getBalance(ALICE)).toBe(5n);
    expect(reads).not.toHaveBeenCalled();
    for (let i = 0; i < READ_CACHE_ENTRIES; i++) await reader.getBalance(other(i));
    reads.mockClear();
    expect(await reader.getBalance(ALICE)).toBe(5n);
    expect(reads).toHaveBeenCalled();

    // A write not yet flushed lives in the caches only: they stay.
    const writer = await WorldState.open(new NodeStore(db, nodes), root);
    await writer.setBalance(ALICE, 7n);
    for (let i = 0; i < READ_CACHE_ENTRIES; i++) await writer.getBalance(other(i));
    expect(await writer.getBalance(ALICE)).toBe(7n);
    expect(await writer.root()).not.toEqual(root);
  }, 60_000);
});
