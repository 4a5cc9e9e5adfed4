import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Chain, ChainReader, mergedMiningRules, SYNTHETIC_SEALER } from "@nodex/chain";
import { Database } from "@nodex/state";
import { TxAdmission, TxPool } from "@nodex/txpool";
import {
  type Address,
  bytesToHex,
  deriveDevAccounts,
  nullLogger,
  type SignedTransaction,
  signTransaction,
  type UnsignedTransaction,
} from "@nodex/types";
import { afterEach, describe, expect, it, vi } from "vitest";
import {
  BlockProducer,
  type BlockProducerOptions,
  MinerError,
  MinerErrorCode,
} from "../../src/index.js";
import { chainFactory, executor, MINER, network } from "./fixtures.js";

const [alice, bob, carol] = deriveDevAccounts();
const makeChain = chainFactory();

const producers: BlockProducer[] = [];
const admissions: TxAdmission[] = [];
const dirs: string[] = [];
afterEach(async () => {
  for (const producer of producers.splice(0)) await producer.stop();
  for (const admission of admissions.splice(0)) admission.close();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

interface Setup {
  readonly chain: Chain;
  readonly reader: ChainReader;
  readonly pool: TxPool;
  readonly admission: TxAdmission;
  readonly producer: BlockProducer;
}

/** Block production on a regtest chain sealed with real merged-mining proofs. */
async function setup(
  opts: Partial<Omit<BlockProducerOptions, "coinbase" | "logger">> = {},
  deps: { chain?: Chain; journalPath?: string } = {},
): Promise<Setup> {
  const chain =
    deps.chain ??
    (await makeChain({ rules: mergedMiningRules(network), sealer: SYNTHETIC_SEALER }));
  const reader = new ChainReader(chain, executor, { coinbase: () => MINER });
  const pool = new TxPool({
    chainId: network.chainId,
    ...(deps.journalPath === undefined ? {} : { journalPath: deps.journalPath }),
  });
  const admission = new TxAdmission(reader, pool, nullLogger);
  admissions.push(admission);
  const producer = new BlockProducer(chain, admission, {
    automine: true,
    mineInterval: 0,
    coinbase: () => MINER,
    logger: nullLogger,
    ...opts,
  });
  producers.push(producer);
  reader.setPendingSource(producer);
  return { chain, reader, pool, admission, producer };
}

const sign = (
  from: typeof alice,
  fields: Partial<UnsignedTransaction> & { nonce: bigint },
): SignedTransaction =>
  signTransaction(
    {
      gasPrice: 1n,
      gasLimit: 21_000n,
      to: carol!.address,
      value: 1n,
      data: new Uint8Array(),
      ...fields,
    },
    from!.privateKey,
    33,
  );
const pay = (from: typeof alice, nonce: bigint, value = 1n) => sign(from, { nonce, value });

const headNumber = (chain: Chain) => chain.head.block.header.number;
const now = () => BigInt(Math.floor(Date.now() / 1000));

async function caught(work: Promise<unknown>): Promise<unknown> {
  try {
    await work;
  } catch (err) {
    return err;
  }
  throw new Error("expected a rejection");
}

function expectMinerError(err: unknown, code: MinerErrorCode, message: string | RegExp): void {
  expect(err).toBeInstanceOf(MinerError);
  expect((err as MinerError).code).toBe(code);
  if (typeof message === "string") expect((err as MinerError).message).toBe(message);
  else expect((err as MinerError).message).toMatch(message);
}

async function balanceOf(chain: Chain, address: Address): Promise<bigint> {
  const state = await chain.stateAt(chain.head.block.header);
  return state.getBalance(address);
}

describe("BlockProducer with automine", () => {
  it("mines a block with each transaction sent", async () => {
    const { chain, reader, pool, producer } = await setup();
    await producer.start();
    const tx = pay(alice, 0n, 5n);
    const hash = await producer.sendTransaction(tx.raw);
    expect(bytesToHex(hash)).toBe(bytesToHex(tx.hash));
    expect(headNumber(chain)).toBe(1n);
    expect(chain.head.block.transactions.map((t) => bytesToHex(t.hash))).toEqual([
      bytesToHex(tx.hash),
    ]);
    // A real merged-mining proof went into the header.
    expect(chain.head.block.header.bitcoinMergedMiningHeader).toHaveLength(80);
    const receipt = await reader.receipt(tx.hash);
    expect(receipt?.receipt.status).toBe(1);
    expect(receipt?.gasUsed).toBe(21_000n);
    expect(pool.status()).toEqual({ pending: 0, queued: 0 });
    expect(producer.hasPending()).toBe(false);

    await producer.sendTransaction(pay(alice, 1n));
    expect(headNumber(chain)).toBe(2n);
  });

  it('answers a send with wait "built" while its block is written; writing() settles at the head', async () => {
    const { chain, reader, pool, producer } = await setup();
    await producer.start();
    const tx = pay(alice, 0n, 5n);
    const hash = await producer.sendTransaction(tx.raw, { wait: "built" });
    expect(bytesToHex(hash)).toBe(bytesToHex(tx.hash));
    const writing = chain.writing();
    expect(writing).toBeInstanceOf(Promise);
    expect(headNumber(chain)).toBe(0n);
    await writing;
    expect(headNumber(chain)).toBe(1n);
    expect((await reader.receipt(tx.hash))?.receipt.status).toBe(1);
    // The next send mines on the new head, without the one already mined.
    await producer.sendTransaction(pay(alice, 1n), { wait: "built" });
    await chain.writing();
    expect(headNumber(chain)).toBe(2n);
    expect(chain.head.block.transactions.map((t) => t.nonce)).toEqual([1n]);
    expect(pool.status()).toEqual({ pending: 0, queued: 0 });
  });

  it("keeps a send answered before its block failed to be written waiting, and mines it once writes land", async () => {
    const dir = mkdtempSync(join(tmpdir(), "nodex-producer-"));
    dirs.push(dir);
    let fault: Error | undefined;
    const db = await Database.open(join(dir, "db"), { faults: { beforeWrite: () => fault } });
    try {
      const chain = await makeChain({
        db,
        rules: mergedMiningRules(network),
        sealer: SYNTHETIC_SEALER,
      });
      const { reader, pool, admission, producer } = await setup({}, { chain });
      await producer.start();
      fault = new Error("IO error: 000005.log: No space left on device");
      const tx = pay(alice, 0n, 5n);
      const hash = await producer.sendTransaction(tx.raw, { wait: "built" });
      expect(bytesToHex(hash)).toBe(bytesToHex(tx.hash));
      // The block never became the head; the transaction waits in the pool.
      await chain.writing();
      await vi.waitFor(() => expect(chain.storage().writable).toBe(false));
      await admission.settled();
      expect(headNumber(chain)).toBe(0n);
      expect(await reader.receipt(tx.hash)).toBeNull();
      expect(pool.status()).toEqual({ pending: 1, queued: 0 });
      // New transactions are refused, naming the storage, while it takes no writes.
      await expect(producer.sendTransaction(pay(alice, 1n).raw, { wait: "built" })).rejects.toThrow(
        "the node's storage takes no writes: no space left on the device",
      );
      expect(pool.status()).toEqual({ pending: 1, queued: 0 });
      // Writes land again: automine mines what waited, without being asked.
      fault = undefined;
      expect(await db.probe()).toBe(true);
      await vi.waitFor(() => expect(headNumber(chain)).toBe(1n));
      await admission.settled();
      expect((await reader.receipt(tx.hash))?.receipt.status).toBe(1);
      expect(pool.status()).toEqual({ pending: 0, queued: 0 });
    } finally {
      await db.close();
    }
  });

  it("does not mine a transaction that waits behind a nonce gap", async () => {
    const { chain, pool, producer } = await setup();
    await producer.start();
    await producer.sendTransaction(pay(alice, 1n));
    expect(headNumber(chain)).toBe(0n);
    expect(pool.status()).toEqual({ pending: 0, queued: 1 });
    // Filling the gap mines both.
    await producer.sendTransaction(pay(alice, 0n));
    expect(headNumber(chain)).toBe(1n);
    expect(chain.head.block.transactions.map((t) => t.nonce)).toEqual([0n, 1n]);
    expect(pool.status()).toEqual({ pending: 0, queued: 0 });
  });

  it("throws TRANSACTION_REJECTED for a transaction the block has no room for, and drops it", async () => {
    const { chain, pool, admission, producer } = await setup();
    await producer.start();
    // A creation whose init code runs out of gas at once (MLOAD at 0xffffff): it uses all of
    // its 9,000,000 gas. It waits in the pool, admitted without a block.
    const hog = sign(alice, {
      nonce: 0n,
      to: null,
      value: 0n,
      gasPrice: 2n,
      gasLimit: 9_000_000n,
      data: new Uint8Array([0x62, 0xff, 0xff, 0xff, 0x51]),
    });
    await admission.admit(hog);
    // Bob's transfer passes every pool rule, but after the hog only 1,000,000 gas is left.
    const late = sign(bob, { nonce: 0n, gasLimit: 2_000_000n });
    const err = await caught(producer.sendTransaction(late));
    expectMinerError(
      err,
      MinerErrorCode.TRANSACTION_REJECTED,
      "transaction gas 2000000 exceeds the block's remaining gas 1000000",
    );
    expect((err as MinerError).meta).toEqual({ hash: bytesToHex(late.hash) });
    // The hog's block was mined; the rejected transaction is not in it, nor in the pool.
    expect(headNumber(chain)).toBe(1n);
    expect(chain.head.block.transactions.map((t) => bytesToHex(t.hash))).toEqual([
      bytesToHex(hog.hash),
    ]);
    expect(chain.head.block.header.gasUsed).toBe(9_000_000n);
    expect(pool.get(late.hash)).toBeUndefined();
    expect(pool.status()).toEqual({ pending: 0, queued: 0 });
    // Sent again it now fits a block of its own.
    await producer.sendTransaction(late);
    expect(headNumber(chain)).toBe(2n);
  });
});

describe("BlockProducer with concurrent sends", () => {
  // Known defect: each send builds its block from `pool.pending()` read before the other
  // send's block is written, so the second block runs the first block's transactions again;
  // the second sender is told TRANSACTION_REJECTED ("nonce too low") for a transaction that
  // is in block 1, and block 2 is mined empty. Marked `fails` until block production
  // serializes the read of the pool with the write of the block.
  it("mines two transactions sent at once, each reported as sent, no empty block", async () => {
    const { chain, producer } = await setup();
    await producer.start();
    const a = pay(alice, 0n);
    const b = pay(bob, 0n);
    const hashes = await Promise.all([producer.sendTransaction(a), producer.sendTransaction(b)]);
    expect(hashes.map(bytesToHex)).toEqual([bytesToHex(a.hash), bytesToHex(b.hash)]);
    const mined: string[] = [];
    for (let n = 1n; n <= headNumber(chain); n++) {
      const block = (await chain.getBlockByNumber(n))!;
      expect(block.block.transactions.length).toBeGreaterThan(0);
      mined.push(...block.block.transactions.map((t) => bytesToHex(t.hash)));
    }
    expect(mined.sort()).toEqual([bytesToHex(a.hash), bytesToHex(b.hash)].sort());
  });
});

describe("BlockProducer with mining stopped", () => {
  it("keeps transactions waiting, with the pending block, state and nonce after them", async () => {
    const { chain, reader, producer } = await setup();
    await producer.start();
    await producer.setMining(false);
    expect(producer.miningStopped).toBe(true);
    const first = pay(alice, 0n, 7n);
    const second = pay(alice, 1n, 8n);
    await producer.sendTransaction(first);
    await producer.sendTransaction(second);
    expect(headNumber(chain)).toBe(0n);
    expect(producer.hasPending()).toBe(true);
    expect(producer.pendingTransaction(first.hash)).toBe(first);
    expect(producer.pendingTransactions()).toEqual([first, second]);

    const pending = await producer.pendingBlock();
    expect(pending.pending).toBe(true);
    expect(pending.block.header.number).toBe(1n);
    expect(pending.block.transactions.map((t) => t.nonce)).toEqual([0n, 1n]);
    expect(await pending.state.getBalance(carol!.address)).toBe(
      (await balanceOf(chain, carol!.address)) + 15n,
    );
    expect(await pending.state.getNonce(alice!.address)).toBe(2n);
    // The same block until the pool or the head changes.
    expect(await producer.pendingBlock()).toBe(pending);
    expect(producer.pendingNonce(alice!.address, 0n)).toBe(2n);
    expect(producer.pendingNonce(bob!.address, 0n)).toBe(0n);
    // Through the reader.
    expect(await reader.nonce(alice!.address, { kind: "tag", tag: "pending" })).toBe(2n);
    expect(await reader.nonce(alice!.address, { kind: "tag", tag: "latest" })).toBe(0n);
    expect(await reader.resolve({ kind: "tag", tag: "pending" })).toBe(pending);
    // A stopped producer's interval tick mines nothing.
    expect(await producer.minePending()).toBeUndefined();
    expect(headNumber(chain)).toBe(0n);
  });

  it("mines what waits with mineBlock, and again when mining starts", async () => {
    const { chain, reader, producer } = await setup();
    await producer.start();
    await producer.setMining(false);
    await producer.sendTransaction(pay(alice, 0n));
    const mined = await producer.mineBlock();
    expect(mined.block.header.number).toBe(1n);
    expect(mined.block.transactions.map((t) => t.nonce)).toEqual([0n]);
    expect(producer.hasPending()).toBe(false);
    expect(headNumber(chain)).toBe(1n);
    // An empty block when nothing waits.
    expect((await producer.mineBlock()).block.transactions).toEqual([]);
    expect(headNumber(chain)).toBe(2n);

    await producer.sendTransaction(pay(alice, 1n));
    expect(headNumber(chain)).toBe(2n);
    await producer.setMining(true);
    expect(producer.miningStopped).toBe(false);
    expect(headNumber(chain)).toBe(3n);
    expect(await reader.nonce(alice!.address, { kind: "tag", tag: "latest" })).toBe(2n);
    // A new head: the pending block follows it.
    expect((await producer.pendingBlock()).block.header.number).toBe(4n);
  });
});

describe("BlockProducer.mineBlock with a timestamp", () => {
  it("mines at that time, and later blocks continue from it", async () => {
    const { chain, producer } = await setup();
    await producer.start();
    const at = now() + 1_000n;
    const mined = await producer.mineBlock(at);
    expect(mined.block.header.timestamp).toBe(at);
    const next = await producer.mineBlock();
    expect(next.block.header.timestamp).toBeGreaterThan(at);
    expect(next.block.header.timestamp).toBeLessThan(at + 100n);
    expect(headNumber(chain)).toBe(2n);
  });

  it("refuses a time not after the head's with INVALID_TIMESTAMP", async () => {
    const { chain, producer } = await setup();
    await producer.start();
    const head = (await producer.mineBlock(now() + 50n)).block.header.timestamp;
    for (const t of [head, head - 1n]) {
      const err = await caught(producer.mineBlock(t));
      expectMinerError(
        err,
        MinerErrorCode.INVALID_TIMESTAMP,
        `timestamp ${t} is not after the head's ${head}`,
      );
    }
    expect(headNumber(chain)).toBe(1n);
  });
});

describe("BlockProducer snapshots", () => {
  it("revert restores the head and the waiting transactions; ids are single-use", async () => {
    const { chain, pool, producer } = await setup();
    await producer.start();
    await producer.sendTransaction(pay(alice, 0n));
    const id = producer.snapshot();
    const headHash = bytesToHex(chain.head.hash);

    await producer.setMining(false);
    const waiting = pay(alice, 1n);
    const gapped = pay(bob, 3n);
    await producer.sendTransaction(waiting);
    await producer.sendTransaction(gapped);
    const later = producer.snapshot();
    await producer.mineBlock();
    await producer.mineBlock();
    expect(headNumber(chain)).toBe(3n);
    expect(pool.status()).toEqual({ pending: 0, queued: 1 });

    expect(await producer.revert(id)).toBe(true);
    expect(headNumber(chain)).toBe(1n);
    expect(bytesToHex(chain.head.hash)).toBe(headHash);
    // Nothing waited at the snapshot.
    expect(pool.status()).toEqual({ pending: 0, queued: 0 });
    const state = await chain.stateAt(chain.head.block.header);
    expect(await state.getNonce(alice!.address)).toBe(1n);
    // Used, and the later one with it; unknown ids too.
    expect(await producer.revert(id)).toBe(false);
    expect(await producer.revert(later)).toBe(false);
    expect(await producer.revert(999n)).toBe(false);
    expect(headNumber(chain)).toBe(1n);
  });

  it("revert puts back the transactions that were waiting at the snapshot", async () => {
    const { chain, pool, producer } = await setup();
    await producer.start();
    await producer.setMining(false);
    const waiting = pay(alice, 0n);
    const gapped = pay(bob, 3n);
    await producer.sendTransaction(waiting);
    await producer.sendTransaction(gapped);
    const id = producer.snapshot();
    await producer.mineBlock();
    expect(pool.get(waiting.hash)).toBeUndefined();
    expect(headNumber(chain)).toBe(1n);

    expect(await producer.revert(id)).toBe(true);
    expect(headNumber(chain)).toBe(0n);
    expect(pool.get(waiting.hash)?.status).toBe("pending");
    expect(pool.get(gapped.hash)?.status).toBe("queued");
    expect(producer.hasPending()).toBe(true);
    // They still mine.
    const mined = await producer.mineBlock();
    expect(mined.block.transactions.map((t) => bytesToHex(t.hash))).toEqual([
      bytesToHex(waiting.hash),
    ]);
  });

  it("revert restores the clock offset", async () => {
    const { producer } = await setup();
    await producer.start();
    const id = producer.snapshot();
    expect(producer.increaseTime(500n)).toBe(500n);
    await producer.revert(id);
    expect(producer.increaseTime(0n)).toBe(0n);
  });
});

describe("BlockProducer.reset and increaseTime", () => {
  it("reset goes back to genesis with nothing waiting and no snapshots", async () => {
    const { chain, pool, producer } = await setup();
    await producer.start();
    const genesis = bytesToHex(chain.head.hash);
    await producer.sendTransaction(pay(alice, 0n));
    const id = producer.snapshot();
    await producer.sendTransaction(pay(alice, 1n));
    await producer.setMining(false);
    await producer.sendTransaction(pay(alice, 2n));
    producer.increaseTime(1_000n);

    await producer.reset();
    expect(headNumber(chain)).toBe(0n);
    expect(bytesToHex(chain.head.hash)).toBe(genesis);
    expect(pool.status()).toEqual({ pending: 0, queued: 0 });
    expect(producer.increaseTime(0n)).toBe(0n);
    expect(await producer.revert(id)).toBe(false);
    const state = await chain.stateAt(chain.head.block.header);
    expect(await state.getNonce(alice!.address)).toBe(0n);
    // The chain goes on from genesis: nonce 0 is free again.
    await producer.setMining(true);
    await producer.sendTransaction(pay(alice, 0n));
    expect(headNumber(chain)).toBe(1n);
  });

  it("increaseTime moves the next block's timestamp forward", async () => {
    const { producer } = await setup();
    await producer.start();
    const before = now();
    expect(producer.increaseTime(3_600n)).toBe(3_600n);
    expect(producer.increaseTime(-5n)).toBe(3_600n);
    expect(producer.increaseTime(400n)).toBe(4_000n);
    const mined = await producer.mineBlock();
    expect(mined.block.header.timestamp).toBeGreaterThanOrEqual(before + 4_000n);
    expect(mined.block.header.timestamp).toBeLessThan(before + 4_100n);
  });
});

describe("BlockProducer on a network merged miners mine", () => {
  it("refuses the development controls with NOT_SUPPORTED", async () => {
    const { chain, producer } = await setup({ automine: false });
    await producer.start();
    const message = (method: string) =>
      `${method} works on regtest and devnet only: blocks of regtest are made by merged miners`;
    expectMinerError(
      await caught(producer.mineBlock()),
      MinerErrorCode.NOT_SUPPORTED,
      message("evm_mine"),
    );
    expectMinerError(
      await caught(producer.setMining(false)),
      MinerErrorCode.NOT_SUPPORTED,
      message("evm_stopMining"),
    );
    expectMinerError(
      await caught(producer.setMining(true)),
      MinerErrorCode.NOT_SUPPORTED,
      message("evm_startMining"),
    );
    // Transactions wait for a miner.
    await producer.sendTransaction(pay(alice, 0n));
    expect(headNumber(chain)).toBe(0n);
    expect(producer.hasPending()).toBe(true);
  });
});

describe("BlockProducer.start", () => {
  it("puts the journaled transactions back and mines them", async () => {
    const dir = mkdtempSync(join(tmpdir(), "nodex-producer-journal-"));
    dirs.push(dir);
    const journalPath = join(dir, "txpool.journal");
    const first = await setup({}, { journalPath });
    await first.producer.start();
    await first.producer.setMining(false);
    const txs = [pay(alice, 0n), pay(alice, 1n), pay(bob, 0n)];
    for (const tx of txs) await first.producer.sendTransaction(tx, { local: true });
    await first.pool.flushJournal();
    expect(headNumber(first.chain)).toBe(0n);
    first.admission.close();

    // A node started again on the same chain and journal.
    const second = await setup({}, { chain: first.chain, journalPath });
    expect(second.pool.status()).toEqual({ pending: 0, queued: 0 });
    await second.producer.start();
    expect(headNumber(first.chain)).toBe(1n);
    expect(first.chain.head.block.transactions.map((t) => bytesToHex(t.hash)).sort()).toEqual(
      txs.map((t) => bytesToHex(t.hash)).sort(),
    );
    expect(second.pool.status()).toEqual({ pending: 0, queued: 0 });
  });
});

describe("BlockProducer with an interval", () => {
  it("mines a block each interval once started, and no more once stopped", async () => {
    const { chain, producer } = await setup({ mineInterval: 1 });
    await producer.start();
    // Interval mining does not mine per transaction.
    await producer.sendTransaction(pay(alice, 0n));
    expect(headNumber(chain)).toBe(0n);
    const mined = new Promise<bigint>((resolve) => {
      const stop = chain.onHeadChange(({ head }) => {
        stop();
        resolve(head.block.header.number);
      });
    });
    const timeout = new Promise<string>((resolve) => setTimeout(() => resolve("timeout"), 3_000));
    expect(await Promise.race([mined, timeout])).toBe(1n);
    expect(chain.head.block.transactions).toHaveLength(1);
    await producer.stop();
    const stopped = headNumber(chain);
    await new Promise((resolve) => setTimeout(resolve, 1_300));
    expect(headNumber(chain)).toBe(stopped);
  });
});
