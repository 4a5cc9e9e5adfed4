import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Chain, ChainReader } from "@nodex/chain";
import { Executor } from "@nodex/evm";
import { Database } from "@nodex/state";
import {
  type Address,
  bytesToHex,
  DecodeError,
  DecodeErrorCode,
  deriveDevAccounts,
  hexToBytes,
  NETWORKS,
  nullLogger,
  type SignedTransaction,
  signTransaction,
} from "@nodex/types";
import { afterEach, describe, expect, it } from "vitest";
import { TxAdmission, TxPool, TxPoolError, TxPoolErrorCode } from "../../src/index.js";

const network = NETWORKS.regtest;
const executor = new Executor(network);
const MINER = hexToBytes("0x00000000000000000000000000000000000000aa") as Address;
const [alice, bob, carol] = deriveDevAccounts();

const dirs: string[] = [];
const dbs: Database[] = [];
const admissions: TxAdmission[] = [];
afterEach(async () => {
  for (const admission of admissions.splice(0)) admission.close();
  for (const db of dbs.splice(0)) await db.close().catch(() => {});
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A regtest chain at genesis, its reader, and a pool admitted into through `TxAdmission`. */
async function setup() {
  const dir = mkdtempSync(join(tmpdir(), "nodex-admission-test-"));
  dirs.push(dir);
  const db = await Database.open(join(dir, "db"));
  dbs.push(db);
  const chain = await Chain.open(network, { db, executor, logger: nullLogger });
  const reader = new ChainReader(chain, executor, { coinbase: () => MINER });
  const pool = new TxPool({ chainId: network.chainId });
  const admission = new TxAdmission(reader, pool, nullLogger);
  admissions.push(admission);
  return { chain, reader, pool, admission };
}

const pay = (from: typeof alice, nonce: bigint, chainId = 33, value = 1n): SignedTransaction =>
  signTransaction(
    { nonce, gasPrice: 1n, gasLimit: 21_000n, to: carol!.address, value, data: new Uint8Array() },
    from!.privateKey,
    chainId,
  );

async function caught(work: Promise<unknown>): Promise<unknown> {
  try {
    await work;
  } catch (err) {
    return err;
  }
  throw new Error("expected a rejection");
}

describe("TxAdmission.admit", () => {
  it("admits a raw transaction and a decoded one as pending", async () => {
    const { pool, admission } = await setup();
    const raw = pay(alice, 0n);
    const decoded = pay(bob, 0n);
    const first = await admission.admit(raw.raw);
    expect(first.status).toBe("pending");
    expect(first.tx.hash).toEqual(raw.hash);
    expect(first.tx.from).toEqual(alice!.address);
    const second = await admission.admit(decoded);
    expect(second).toEqual({ status: "pending", tx: decoded });
    expect(pool.status()).toEqual({ pending: 2, queued: 0 });
    expect(pool.get(raw.hash)?.status).toBe("pending");
    expect(pool.get(raw.hash)?.local).toBe(false);
    await admission.admit(pay(alice, 1n), { local: true });
    expect(pool.get(pay(alice, 1n).hash)?.local).toBe(true);
  });

  it("refuses a transaction that is already in the chain with NONCE_TOO_LOW, naming its block", async () => {
    const { chain, pool, admission } = await setup();
    const tx = pay(alice, 0n);
    const mined = await chain.mine([tx], { coinbase: MINER, timestamp: 1_001n });
    const err = await caught(admission.admit(tx.raw));
    expect(err).toBeInstanceOf(TxPoolError);
    expect((err as TxPoolError).code).toBe(TxPoolErrorCode.NONCE_TOO_LOW);
    expect((err as TxPoolError).message).toBe(
      `nonce too low: transaction ${bytesToHex(tx.hash)} is already in block ${bytesToHex(mined.hash)}`,
    );
    expect(pool.status()).toEqual({ pending: 0, queued: 0 });
  });

  it("refuses a transaction signed for another chain with CHAIN_ID_MISMATCH", async () => {
    const { pool, admission } = await setup();
    const err = await caught(admission.admit(pay(alice, 0n, 31)));
    expect(err).toBeInstanceOf(TxPoolError);
    expect((err as TxPoolError).code).toBe(TxPoolErrorCode.CHAIN_ID_MISMATCH);
    expect((err as TxPoolError).message).toBe(
      "invalid chain id: transaction signed for chain 31, this network is 33",
    );
    expect(pool.status()).toEqual({ pending: 0, queued: 0 });
  });

  it("refuses bytes that are not a transaction with a decode error", async () => {
    const { pool, admission } = await setup();
    const cases: [Uint8Array, string][] = [
      [new Uint8Array([0xde, 0xad, 0xbe, 0xef]), "invalid transaction: invalid RLP"],
      [new Uint8Array(), "invalid transaction: empty"],
    ];
    for (const [garbage, message] of cases) {
      const err = await caught(admission.admit(garbage));
      expect(err).toBeInstanceOf(DecodeError);
      expect((err as DecodeError).code).toBe(DecodeErrorCode.INVALID_RLP);
      expect((err as DecodeError).message).toMatch(new RegExp(`^${message}`));
    }
    expect(pool.status()).toEqual({ pending: 0, queued: 0 });
    // The pool still takes transactions afterwards.
    expect((await admission.admit(pay(alice, 0n))).status).toBe("pending");
  });

  it("checks a transaction against the head's state: a mined nonce is too low", async () => {
    const { chain, admission } = await setup();
    await chain.mine([pay(alice, 0n)], { coinbase: MINER, timestamp: 1_001n });
    const err = await caught(admission.admit(pay(alice, 0n, 33, 2n)));
    expect((err as TxPoolError).code).toBe(TxPoolErrorCode.NONCE_TOO_LOW);
    expect((await admission.admit(pay(alice, 1n))).status).toBe("pending");
  });
});

describe("TxAdmission and the head", () => {
  it("updates the pool when a block mined on the chain takes its transaction", async () => {
    const { chain, pool, admission } = await setup();
    const mined = pay(alice, 0n);
    const next = pay(alice, 1n);
    const other = pay(bob, 0n);
    await admission.admit(mined);
    await admission.admit(next);
    await admission.admit(other);
    expect(pool.status()).toEqual({ pending: 3, queued: 0 });
    // Straight on the chain: nobody calls the pool's remove.
    const block = await chain.mine([mined], { coinbase: MINER, timestamp: 1_001n });
    expect(block.block.transactions).toHaveLength(1);
    await admission.settled();
    expect(pool.get(mined.hash)).toBeUndefined();
    expect(pool.status()).toEqual({ pending: 2, queued: 0 });
    expect(pool.pending().map((tx) => tx.hash)).toEqual(
      expect.arrayContaining([next.hash, other.hash]),
    );
    expect(pool.pendingNonce(alice!.address, 1n)).toBe(2n);
  });

  it("checks transactions against the new head's accounts without opening its state", async () => {
    const { chain, reader, pool, admission } = await setup();
    const tx = pay(alice, 0n);
    await admission.admit(tx);
    const opened: string[] = [];
    const stateAt = reader.stateAt.bind(reader);
    reader.stateAt = (header) => {
      opened.push(`0x${Buffer.from(header.stateRoot).toString("hex")}`);
      return stateAt(header);
    };
    await chain.mine([tx], { coinbase: MINER, timestamp: 1_001n });
    await admission.settled();
    expect(pool.status()).toEqual({ pending: 0, queued: 0 });
    // The mined nonce is too low now; the next one is pending; a gap waits queued.
    await expect(admission.admit(pay(alice, 0n, 33, 2n))).rejects.toThrow(/nonce too low/);
    await admission.admit(pay(alice, 1n));
    await admission.admit(pay(alice, 3n));
    expect(pool.status()).toEqual({ pending: 1, queued: 1 });
    await new Promise((resolve) => setImmediate(resolve));
    expect(opened).toEqual([]);
  });

  it("demotes after a rewind: a transaction behind a gap the rewind opened waits queued", async () => {
    const { chain, pool, admission } = await setup();
    await chain.mine([pay(alice, 0n)], { coinbase: MINER, timestamp: 1_001n });
    await admission.admit(pay(alice, 1n));
    expect(pool.get(pay(alice, 1n).hash)?.status).toBe("pending");
    await chain.rewindTo(0n);
    await admission.settled();
    expect(pool.get(pay(alice, 1n).hash)?.status).toBe("queued");
  });

  it("replaceAll empties the pool and admits the given transactions again", async () => {
    const { pool, admission } = await setup();
    await admission.admit(pay(alice, 0n));
    await admission.admit(pay(alice, 1n));
    await admission.admit(pay(bob, 0n));
    await admission.replaceAll([pay(bob, 0n), pay(bob, 2n), pay(alice, 9n, 31)]);
    // Alice's are gone; bob's 0 is pending, his 2 queued; the other chain's is dropped silently.
    expect(pool.status()).toEqual({ pending: 1, queued: 1 });
    expect(pool.get(pay(alice, 0n).hash)).toBeUndefined();
    expect(pool.get(pay(bob, 0n).hash)?.status).toBe("pending");
    expect(pool.get(pay(bob, 2n).hash)?.status).toBe("queued");
    await admission.replaceAll([]);
    expect(pool.status()).toEqual({ pending: 0, queued: 0 });
  });

  it("stops following the head once closed", async () => {
    const { chain, pool, admission } = await setup();
    const tx = pay(alice, 0n);
    await admission.admit(tx);
    admission.close();
    await chain.mine([tx], { coinbase: MINER, timestamp: 1_001n });
    await admission.settled();
    // The pool was not told: it still holds the mined transaction.
    expect(pool.get(tx.hash)?.status).toBe("pending");
    expect(pool.status()).toEqual({ pending: 1, queued: 0 });
  });

  it("loads the journal against the head", async () => {
    const dir = mkdtempSync(join(tmpdir(), "nodex-admission-journal-"));
    dirs.push(dir);
    const journalPath = join(dir, "journal.rlp");
    const { reader, chain } = await setup();
    const first = new TxPool({ chainId: 33, journalPath });
    const writer = new TxAdmission(reader, first);
    admissions.push(writer);
    await writer.admit(pay(alice, 0n), { local: true });
    await writer.admit(pay(alice, 1n), { local: true });
    await first.flushJournal();
    writer.close();
    // Meanwhile nonce 0 made it into a block.
    await chain.mine([pay(alice, 0n)], { coinbase: MINER, timestamp: 1_001n });
    const second = new TxPool({ chainId: 33, journalPath });
    const reloaded = new TxAdmission(reader, second);
    admissions.push(reloaded);
    const result = await reloaded.loadJournal();
    expect(result.loaded).toBe(1);
    expect(result.dropped).toBe(1);
    expect(result.reasons[0]).toMatch(/nonce too low/);
    expect(second.get(pay(alice, 1n).hash)).toEqual({
      tx: expect.anything(),
      status: "pending",
      local: true,
    });
  });
});

describe("TxAdmission on a reorganization", () => {
  it("puts back the transactions of the blocks that left, unless the new branch has them", async () => {
    // Branch A: one block with alice's and bob's payments. Branch C: two blocks (heavier), the
    // first with bob's payment only.
    const a = await setup();
    const c = await setup();
    const alicePays = pay(alice, 0n);
    const bobPays = pay(bob, 0n);
    const branchA = [(await a.chain.mine([alicePays, bobPays], { coinbase: MINER })).block];
    const branchC = [
      (await c.chain.mine([bobPays], { coinbase: MINER, timestamp: 2_000n })).block,
      (await c.chain.mine([], { coinbase: MINER, timestamp: 2_001n })).block,
    ];
    const { chain, pool, admission } = await setup();
    await chain.importBlock(branchA[0]!);
    await admission.settled();
    expect(pool.status()).toEqual({ pending: 0, queued: 0 });
    for (const block of branchC)
      expect((await chain.importBlock(block)).result).not.toBe("INVALID_BLOCK");
    expect(chain.head.block.header.number).toBe(2n);
    await admission.settled();
    // Alice's payment left the chain with branch A: it waits again. Bob's is in branch C.
    expect(pool.get(alicePays.hash)?.status).toBe("pending");
    expect(pool.get(bobPays.hash)).toBeUndefined();
    expect(pool.status()).toEqual({ pending: 1, queued: 0 });
  });

  it("puts nothing back on a rewind (development controls restore their own pool)", async () => {
    const { chain, pool, admission } = await setup();
    await chain.mine([pay(alice, 0n)], { coinbase: MINER });
    await chain.rewindTo(0n);
    await admission.settled();
    expect(pool.status()).toEqual({ pending: 0, queued: 0 });
  });
});
