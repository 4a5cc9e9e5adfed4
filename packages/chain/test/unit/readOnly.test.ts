import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Database } from "@nodex/state";
import { bytesToHex, deriveDevAccounts, NETWORKS, nullLogger, signTransaction } from "@nodex/types";
import { afterEach, describe, expect, it } from "vitest";
import { Chain, ChainError, ChainErrorCode, ChainReader } from "../../src/index.js";
import { executor, MINER } from "./fixtures.js";

// A chain opened for reads only on the database another Chain writes (as the node's worker
// threads open it, with multithreading): it sees the writer's blocks once told of its head,
// forgets the canonical entries a rewind changed, and writes nothing.

const [alice, bob] = deriveDevAccounts();
const dirs: string[] = [];
const dbs: Database[] = [];
afterEach(async () => {
  for (const db of dbs.splice(0).reverse()) await db.close().catch(() => {});
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

async function open(path: string): Promise<Database> {
  const db = await Database.open(path, { multithreading: true });
  dbs.push(db);
  return db;
}

async function pair() {
  const dir = mkdtempSync(join(tmpdir(), "nodex-readonly-test-"));
  dirs.push(dir);
  const path = join(dir, "db");
  const writerDb = await open(path);
  const writer = await Chain.open(NETWORKS.regtest, {
    db: writerDb,
    executor,
    logger: nullLogger,
  });
  const reader = await Chain.openReadOnly(NETWORKS.regtest, {
    db: await open(path),
    executor,
    logger: nullLogger,
  });
  return { writer, writerDb, reader };
}

const pay = (nonce: bigint) =>
  signTransaction(
    {
      nonce,
      gasPrice: 1n,
      gasLimit: 21_000n,
      to: bob!.address,
      value: 5n,
      data: new Uint8Array(),
    },
    alice!.privateKey,
    33,
  );

describe("Chain.openReadOnly", () => {
  it("refuses a database without a chain", async () => {
    const dir = mkdtempSync(join(tmpdir(), "nodex-readonly-test-"));
    dirs.push(dir);
    const db = await open(join(dir, "db"));
    const err = await Chain.openReadOnly(NETWORKS.regtest, {
      db,
      executor,
      logger: nullLogger,
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ChainError);
    expect((err as ChainError).code).toBe(ChainErrorCode.CORRUPT);
  });

  it("reads the writer's blocks, state and transactions once it follows the writer's head", async () => {
    const { writer, writerDb, reader } = await pair();
    const mined = await writer.mine([pay(0n)], { coinbase: MINER, timestamp: 1_001n });
    await writerDb.landed();
    // Until told, its head is the one it opened on.
    expect(reader.head.block.header.number).toBe(0n);
    expect(await reader.getBlockByNumber(1n)).toBeUndefined();
    await reader.follow(mined.hash);
    expect(reader.head.hash).toEqual(mined.hash);
    expect((await reader.getBlockByNumber(1n))?.hash).toEqual(mined.hash);
    const view = new ChainReader(reader, executor, { coinbase: () => MINER });
    expect((await view.transaction(mined.block.transactions[0]!.hash))?.index).toBe(0);
    const state = await view.stateAt(mined.block.header);
    expect(await state.getNonce(alice!.address)).toBe(1n);
    // The same blocks through the writer's reader.
    const logs = await new ChainReader(writer, executor, { coinbase: () => MINER }).getLogs({
      range: { from: { kind: "number", number: 0n }, to: { kind: "tag", tag: "latest" } },
      addresses: [],
      topics: [],
    });
    expect(
      await view.getLogs({
        range: { from: { kind: "number", number: 0n }, to: { kind: "tag", tag: "latest" } },
        addresses: [],
        topics: [],
      }),
    ).toEqual(logs);
  });

  it("forgets the canonical entries a rewind changed, and never writes", async () => {
    const { writer, writerDb, reader } = await pair();
    const first = await writer.mine([pay(0n)], { coinbase: MINER, timestamp: 1_001n });
    await writer.mine([pay(1n)], { coinbase: MINER, timestamp: 1_002n });
    await writerDb.landed();
    await reader.follow(writer.head.hash);
    expect((await reader.getBlockByNumber(2n))?.block.header.number).toBe(2n);
    // The writer goes back to block 1 and builds another block 2.
    await writer.rewindTo(1n);
    const other = await writer.mine([pay(1n)], { coinbase: MINER, timestamp: 1_005n });
    await writerDb.landed();
    await reader.follow(other.hash, [2n]);
    expect(bytesToHex((await reader.getBlockByNumber(2n))!.hash)).toBe(bytesToHex(other.hash));
    expect((await reader.getBlockByNumber(1n))?.hash).toEqual(first.hash);
    await expect(reader.mine([pay(2n)], { coinbase: MINER, timestamp: 1_010n })).rejects.toThrow(
      "reads only",
    );
    expect(reader.head.hash).toEqual(other.hash);
  });

  it("is told of an unknown head as a corrupt database", async () => {
    const { reader } = await pair();
    const err = await reader.follow(new Uint8Array(32).fill(7)).catch((e: unknown) => e);
    expect((err as ChainError).code).toBe(ChainErrorCode.CORRUPT);
  });
});
