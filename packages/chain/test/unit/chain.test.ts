import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Executor } from "@nodex/evm";
import { Bucket, Database, EMPTY_TRIE_ROOT, StateErrorCode } from "@nodex/state";
import {
  type Address,
  bytesToHex,
  contractAddress,
  deriveDevAccounts,
  headerHash,
  hexToBytes,
  NETWORKS,
  nullLogger,
  signTransaction,
} from "@nodex/types";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { Chain, ChainError, DEV_ACCOUNT_BALANCE } from "../../src/index.js";

const network = NETWORKS.regtest;
const executor = new Executor(network);
const [alice, bob] = deriveDevAccounts();
const MINER = hexToBytes("0x00000000000000000000000000000000000000aa") as Address;

let dir: string;
let db: Database;
beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), "nodex-chain-"));
  db = await Database.open(join(dir, "db"));
});
afterEach(async () => {
  await db.close().catch(() => {});
  rmSync(dir, { recursive: true, force: true });
});

const open = () => Chain.open(network, { db, executor, logger: nullLogger });
const transfer = (nonce: bigint, value: bigint) =>
  signTransaction(
    { nonce, gasPrice: 0n, gasLimit: 21_000n, to: bob!.address, value, data: new Uint8Array() },
    alice!.privateKey,
    33,
  );

describe("Chain", () => {
  it("writes genesis with the development accounts funded", async () => {
    const chain = await open();
    const genesis = chain.head;
    expect(genesis.block.header.number).toBe(0n);
    expect(genesis.hash).toEqual(headerHash(genesis.block.header));
    expect(genesis.totalDifficulty).toBe(1n);
    expect(genesis.block.header.transactionsRoot).toEqual(EMPTY_TRIE_ROOT);
    const state = await chain.stateAt(genesis.block.header);
    for (const account of deriveDevAccounts())
      expect(await state.getBalance(account.address)).toBe(DEV_ACCOUNT_BALANCE);
    expect((await chain.getBlockByNumber(0n))?.hash).toEqual(genesis.hash);
  });

  it("mines blocks that move the head, with receipts and indexes", async () => {
    const chain = await open();
    const mined = await chain.mine([transfer(0n, 7n), transfer(1n, 8n)], {
      coinbase: MINER,
      timestamp: 100n,
    });
    expect(mined.rejected).toEqual([]);
    expect(mined.block.header.number).toBe(1n);
    expect(mined.block.header.gasUsed).toBe(42_000n);
    expect(mined.block.header.timestamp).toBe(100n);
    expect(mined.totalDifficulty).toBe(2n);
    expect(chain.head.hash).toEqual(mined.hash);
    expect(mined.block.header.transactionsRoot).not.toEqual(EMPTY_TRIE_ROOT);
    const receipts = await chain.getReceipts(mined.hash);
    expect(receipts?.map((r) => [r.status, r.cumulativeGasUsed])).toEqual([
      [1, 21_000n],
      [1, 42_000n],
    ]);
    const where = await chain.getTransactionLocation(mined.block.transactions[1]!.hash);
    expect(where).toEqual({ blockHash: mined.hash, index: 1 });
    const state = await chain.stateAt(mined.block.header);
    expect(await state.getBalance(bob!.address)).toBe(DEV_ACCOUNT_BALANCE + 15n);
    // Below the head, from the index; in the new head, from its block; never heard of: none.
    const next = await chain.mine([transfer(2n, 9n)], { coinbase: MINER, timestamp: 101n });
    expect(await chain.getTransactionLocation(mined.block.transactions[1]!.hash)).toEqual(where);
    expect(await chain.getTransactionLocation(next.block.transactions[0]!.hash)).toEqual({
      blockHash: next.hash,
      index: 0,
    });
    expect(await chain.getTransactionLocation(new Uint8Array(32).fill(9))).toBeUndefined();
  });

  it("runs a block of transactions as it runs them one block each: the same gas, status and state", async () => {
    // A contract that stores its calldata's first word in slot 0: what SSTORE costs depends on
    // the slot's value when each transaction starts (EIP-2200), not when the block does.
    const runtime = hexToBytes("0x60003560005500");
    const init = Uint8Array.from([
      0x60,
      runtime.length,
      0x80,
      0x60,
      0x0b,
      0x60,
      0x00,
      0x39,
      0x60,
      0x00,
      0xf3,
      ...runtime,
    ]);
    const word = (n: bigint) => hexToBytes(`0x${n.toString(16).padStart(64, "0")}`);
    const sign = (nonce: bigint, to: Address | null, data: Uint8Array, value = 0n) =>
      signTransaction(
        { nonce, gasPrice: 0n, gasLimit: 200_000n, to, value, data },
        alice!.privateKey,
        33,
      );
    const contract = contractAddress(alice!.address, 0n);
    const deploy = sign(0n, null, init);
    const txs = [
      sign(1n, contract, word(1n)),
      sign(2n, contract, word(2n)),
      sign(3n, contract, word(0n)),
      sign(4n, bob!.address, new Uint8Array(), 3n),
      sign(5n, contract, word(5n)),
      sign(6n, contract, word(5n)),
      sign(7n, MINER, new Uint8Array(), 1n),
    ];
    const other = await Database.open(join(dir, "db-one-by-one"));
    try {
      const together = await open();
      await together.mine([deploy], { coinbase: MINER });
      const block = await together.mine(txs, { coinbase: MINER });
      expect(block.rejected).toEqual([]);
      const oneByOne = await Chain.open(network, { db: other, executor, logger: nullLogger });
      await oneByOne.mine([deploy], { coinbase: MINER });
      const gas: bigint[] = [];
      for (const tx of txs) {
        const mined = await oneByOne.mine([tx], { coinbase: MINER });
        expect(mined.rejected).toEqual([]);
        gas.push(mined.block.header.gasUsed);
      }
      const receipts = (await together.getReceipts(block.hash))!;
      expect(
        receipts.map((r, i) => r.cumulativeGasUsed - (receipts[i - 1]?.cumulativeGasUsed ?? 0n)),
      ).toEqual(gas);
      expect(receipts.every((r) => r.status === 1)).toBe(true);
      // Setting 0 → 1 costs more than 1 → 2: the second transaction saw its own original value.
      expect(gas[0]! > gas[1]!).toBe(true);
      const a = await together.stateAt(together.head.block.header);
      const b = await oneByOne.stateAt(oneByOne.head.block.header);
      for (const who of [alice!.address, bob!.address, MINER, contract]) {
        expect(await a.getBalance(who)).toBe(await b.getBalance(who));
        expect(await a.getNonce(who)).toBe(await b.getNonce(who));
      }
      expect(bytesToHex(await a.getStorage(contract, new Uint8Array(32)))).toBe(
        bytesToHex(word(5n)),
      );
      expect(bytesToHex(await b.getStorage(contract, new Uint8Array(32)))).toBe(
        bytesToHex(word(5n)),
      );
    } finally {
      await other.close();
    }
  });

  it("leaves out transactions that cannot run, saying why", async () => {
    const chain = await open();
    const mined = await chain.mine([transfer(1n, 1n)], { coinbase: MINER });
    expect(mined.block.transactions).toEqual([]);
    expect(mined.rejected[0]?.error.message).toBe(
      "nonce too high: address 0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266, tx: 1 state: 0",
    );
  });

  it("reopens at the same head with its state", async () => {
    const chain = await open();
    await chain.mine([transfer(0n, 5n)], { coinbase: MINER });
    const second = await chain.mine([transfer(1n, 5n)], { coinbase: MINER });
    await db.close();
    db = await Database.open(join(dir, "db"));
    const reopened = await open();
    expect(bytesToHex(reopened.head.hash)).toBe(bytesToHex(second.hash));
    expect(reopened.head.block.header.number).toBe(2n);
    const state = await reopened.stateAt(reopened.head.block.header);
    expect(await state.getNonce(alice!.address)).toBe(2n);
    expect((await reopened.getBlockByNumber(1n))?.block.transactions[0]?.hash).toBeDefined();
    expect(await reopened.getBlockByNumber(3n)).toBeUndefined();
  });

  it("tells what a mined block took once built, before it is written; writing() settles at the head", async () => {
    const chain = await open();
    expect(chain.writing()).toBeUndefined();
    const told: { included?: number; head?: bigint; headOnceWritten?: string }[] = [];
    const mined = await chain.mine(
      [transfer(0n, 7n), transfer(5n, 1n)],
      { coinbase: MINER },
      (built) => {
        const seen: (typeof told)[number] = {
          included: built.included.length,
          head: chain.head.block.header.number,
        };
        expect(built.rejected.map((r) => r.tx.nonce)).toEqual([5n]);
        told.push(seen);
        const writing = chain.writing();
        expect(writing).toBeInstanceOf(Promise);
        void writing?.then(() => {
          seen.headOnceWritten = bytesToHex(chain.head.hash);
        });
      },
    );
    // Told before the block was the head; the promise settled once it was.
    expect(told).toEqual([{ included: 1, head: 0n, headOnceWritten: bytesToHex(mined.hash) }]);
    expect(chain.writing()).toBeUndefined();
    expect(mined.receipts).toHaveLength(1);
  });

  it("makes a mined block the head once its batch has landed, readable in full", async () => {
    const chain = await open();
    const tx = transfer(0n, 9n);
    const seen: Promise<unknown>[] = [];
    chain.onHeadChange((change) => {
      const { header } = change.head.block;
      seen.push(
        chain.getTransactionLocation(tx.hash).then((l) => l?.index),
        chain.getBlockByNumber(1n).then((b) => b?.block.transactions.length),
        chain.getReceipts(change.head.hash).then((r) => r?.length),
        chain.stateAt(header).then((state) => state.getBalance(bob!.address)),
      );
    });
    const mined = await chain.mine([tx], { coinbase: MINER });
    const [index, count, receipts, balance] = await Promise.all(seen);
    expect([index, count, receipts, balance]).toEqual([0, 1, 1, DEV_ACCOUNT_BALANCE + 9n]);
    expect(chain.head.hash).toEqual(mined.hash);
  });

  it("keeps its head when a mined block's write fails, refuses to mine until a probe lands", async () => {
    const dir = mkdtempSync(join(tmpdir(), "nodex-chain-faults-"));
    let fault: Error | undefined;
    const faulty = await Database.open(join(dir, "db"), {
      faults: { beforeWrite: () => fault },
    });
    try {
      const chain = await Chain.open(network, { db: faulty, executor, logger: nullLogger });
      const changes: bigint[] = [];
      chain.onHeadChange((c) => changes.push(c.head.block.header.number));
      const health: boolean[] = [];
      chain.onStorageChange((h) => health.push(h.writable));
      fault = new Error("IO error: 000003.log: No space left on device");
      let writing: Promise<void> | undefined;
      const failed = chain.mine([transfer(0n, 7n)], { coinbase: MINER }, () => {
        writing = chain.writing();
      });
      await expect(failed).rejects.toThrow(
        expect.objectContaining({
          code: StateErrorCode.STORAGE_UNAVAILABLE,
          message: expect.stringContaining("no space left on the device"),
        }),
      );
      await expect(writing).resolves.toBeUndefined();
      expect(chain.writing()).toBeUndefined();
      // Nobody was told of the block: it never was the head.
      expect(changes).toEqual([]);
      expect(chain.head.block.header.number).toBe(0n);
      expect(await chain.getBlockByNumber(1n)).toBeUndefined();
      expect(chain.storage()).toMatchObject({ writable: false });
      expect(health).toEqual([false]);
      // Refused before anything is built, while the storage takes no writes.
      fault = undefined;
      await expect(chain.mine([transfer(0n, 7n)], { coinbase: MINER })).rejects.toThrow(
        "the node's storage takes no writes",
      );
      expect(await faulty.probe()).toBe(true);
      expect(health).toEqual([false, true]);
      const mined = await chain.mine([transfer(0n, 7n)], { coinbase: MINER });
      expect(mined.block.header.number).toBe(1n);
      expect(changes).toEqual([1n]);
      const state = await chain.stateAt(chain.head.block.header);
      expect(await state.getBalance(bob!.address)).toBe(DEV_ACCOUNT_BALANCE + 7n);
      expect(await state.getNonce(alice!.address)).toBe(1n);
    } finally {
      await faulty.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("builds blocks one at a time when asked concurrently", async () => {
    const chain = await open();
    const [a, b] = await Promise.all([
      chain.mine([transfer(0n, 1n)], { coinbase: MINER }),
      chain.mine([transfer(1n, 1n)], { coinbase: MINER }),
    ]);
    expect(a.block.header.number).toBe(1n);
    expect(b.block.header.number).toBe(2n);
    expect(b.block.header.parentHash).toEqual(a.hash);
    expect(b.block.transactions).toHaveLength(1);
  });

  it("keeps the state of the last blocks of its window and prunes the rest", async () => {
    const chain = await Chain.open(network, { db, executor, logger: nullLogger, stateWindow: 3 });
    const trieNodes = async () => {
      let n = 0;
      for await (const _ of db.keys(Bucket.TRIE)) n++;
      return n;
    };
    const mined = [];
    for (let i = 0n; i < 6n; i++)
      mined.push(await chain.mine([transfer(i, 1n)], { coinbase: MINER }));
    const grown = await trieNodes();
    // Block 6 is a multiple of the window: its state sweep ran before the next block.
    await chain.mine([transfer(6n, 1n)], { coinbase: MINER });
    expect(await trieNodes()).toBeLessThan(grown);
    // Head 7: blocks 5, 6 and 7 keep their state, block 4 and older do not.
    await expect(chain.stateAt(mined[3]!.block.header)).rejects.toThrow(
      "state of block 4 is pruned: this node keeps the state of the last 3 blocks (archive mode keeps all)",
    );
    expect(() => chain.assertStateRetained(mined[3]!.block.header)).toThrow(ChainError);
    const oldest = await chain.stateAt(mined[4]!.block.header);
    expect(await oldest.getBalance(bob!.address)).toBe(DEV_ACCOUNT_BALANCE + 5n);
    const head = await chain.stateAt(chain.head.block.header);
    expect(await head.getNonce(alice!.address)).toBe(7n);
    // Blocks, receipts and indexes are kept: only state is pruned.
    expect((await chain.getReceipts(mined[0]!.hash))?.length).toBe(1);
  });

  it("keeps every block's state without a window (archive)", async () => {
    const chain = await open();
    expect(chain.stateWindow).toBeUndefined();
    for (let i = 0n; i < 4n; i++) await chain.mine([transfer(i, 1n)], { coinbase: MINER });
    const genesis = await chain.getBlockByNumber(0n);
    const state = await chain.stateAt(genesis!.block.header);
    expect(await state.getBalance(bob!.address)).toBe(DEV_ACCOUNT_BALANCE);
  });

  it("has each block it builds sealed by its sealer, and hashes and stores the sealed header", async () => {
    const proofHeader = new Uint8Array(80).fill(7);
    const seen: bigint[] = [];
    const chain = await Chain.open(network, {
      db,
      executor,
      logger: nullLogger,
      sealer: {
        seal: async (header) => {
          seen.push(header.number);
          return { ...header, bitcoinMergedMiningHeader: proofHeader };
        },
      },
    });
    const mined = await chain.mine([transfer(0n, 1n)], { coinbase: MINER });
    expect(seen).toEqual([1n]);
    expect(mined.block.header.bitcoinMergedMiningHeader).toEqual(proofHeader);
    expect(mined.hash).toEqual(headerHash(mined.block.header));
    expect(chain.head.hash).toEqual(mined.hash);
    const stored = await chain.getBlockByNumber(1n);
    expect(stored?.block.header.bitcoinMergedMiningHeader).toEqual(proofHeader);
  });
});
