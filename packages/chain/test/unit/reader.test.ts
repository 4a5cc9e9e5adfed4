import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Database } from "@nodex/state";
import {
  type Address,
  type BlockSelector,
  BlockTag,
  bytesToHex,
  contractAddress,
  deriveDevAccounts,
  type Hash32,
  keccak256,
  NETWORKS,
  type NetworkPreset,
  nullLogger,
  signTransaction,
  type UnsignedTransaction,
} from "@nodex/types";
import { afterEach, describe, expect, it, vi } from "vitest";
import {
  Chain,
  ChainError,
  ChainErrorCode,
  ChainReader,
  DEV_ACCOUNT_BALANCE,
  type IncludedReceipt,
  type PendingBlock,
  type PendingSource,
} from "../../src/index.js";
import { executor, MINER } from "./fixtures.js";

const [alice, bob, carol] = deriveDevAccounts();

/** Regtest with a `safe` 2 and a `finalized` 5 blocks below the head. */
const deepNetwork: NetworkPreset = { ...NETWORKS.regtest, safeDepth: 2n, finalizedDepth: 5n };

const dirs: string[] = [];
const dbs: Database[] = [];
afterEach(async () => {
  for (const db of dbs.splice(0)) await db.close().catch(() => {});
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

async function openChain(network: NetworkPreset = deepNetwork): Promise<Chain> {
  const dir = mkdtempSync(join(tmpdir(), "nodex-reader-test-"));
  dirs.push(dir);
  const db = await Database.open(join(dir, "db"));
  dbs.push(db);
  return Chain.open(network, { db, executor, logger: nullLogger });
}

const readerOf = (chain: Chain) => new ChainReader(chain, executor, { coinbase: () => MINER });

const sign = (from: typeof alice, fields: Partial<UnsignedTransaction> & { nonce: bigint }) =>
  signTransaction(
    {
      gasPrice: 1n,
      gasLimit: 100_000n,
      to: null,
      value: 0n,
      data: new Uint8Array(),
      ...fields,
    },
    from!.privateKey,
    33,
  );

const TOPIC = keccak256(new TextEncoder().encode("Ping()")) as Hash32;
/** Runtime that emits LOG1(Ping()) with the word 7 as data. */
const LOGGING_RUNTIME = new Uint8Array([
  ...[0x60, 0x07, 0x60, 0x00, 0x52], // mstore(0, 7)
  0x7f,
  ...TOPIC, // push32 topic
  ...[0x60, 0x20, 0x60, 0x00, 0xa1], // log1(0, 32, topic)
  0x00, // stop
]);
/** Init code that returns `runtime` as the contract's code. */
function deployCode(runtime: Uint8Array): Uint8Array {
  const n = runtime.length;
  return new Uint8Array([
    ...[0x61, n >> 8, n & 0xff, 0x80, 0x60, 12, 0x60, 0, 0x39, 0x60, 0, 0xf3],
    ...runtime,
  ]);
}

const byNumber = (number: bigint): BlockSelector => ({ kind: "number", number });
const byTag = (tag: BlockTag): BlockSelector => ({ kind: "tag", tag });
const byHash = (hash: Uint8Array, requireCanonical = false): BlockSelector => ({
  kind: "hash",
  hash: hash as Hash32,
  requireCanonical,
});
const numberOf = (block: { block: { header: { number: bigint } } } | null) =>
  block?.block.header.number;

const EMITTER = contractAddress(alice!.address, 0n);

/**
 * A chain of 7 blocks: 1 deploys the emitter (alice's nonce 0), 2 calls it twice (alice, then
 * bob: two logs), 3 to 7 each pay carol 1 from alice.
 */
async function sevenBlocks(chain: Chain) {
  const deploy = sign(alice, { nonce: 0n, data: deployCode(LOGGING_RUNTIME), gasLimit: 200_000n });
  await chain.mine([deploy], { coinbase: MINER, timestamp: 1_001n });
  const calls = [
    sign(alice, { nonce: 1n, to: EMITTER }),
    sign(bob, { nonce: 0n, to: EMITTER, gasPrice: 1n }),
  ];
  const block2 = await chain.mine(calls, { coinbase: MINER, timestamp: 1_002n });
  expect(block2.block.transactions).toHaveLength(2);
  for (let i = 0n; i < 5n; i++) {
    const pay = sign(alice, { nonce: 2n + i, to: carol!.address, value: 1n, gasLimit: 21_000n });
    await chain.mine([pay], { coinbase: MINER, timestamp: 1_003n + i });
  }
  expect(chain.head.block.header.number).toBe(7n);
  return { deploy, calls, block2 };
}

function expectChainError(err: unknown, code: ChainErrorCode, message: string | RegExp): void {
  expect(err).toBeInstanceOf(ChainError);
  expect((err as ChainError).code).toBe(code);
  if (typeof message === "string") expect((err as ChainError).message).toBe(message);
  else expect((err as ChainError).message).toMatch(message);
}

async function caught(work: Promise<unknown>): Promise<unknown> {
  try {
    await work;
  } catch (err) {
    return err;
  }
  throw new Error("expected a rejection");
}

describe("ChainReader.resolve", () => {
  it("finds a canonical block by number, null past the head", async () => {
    const chain = await openChain();
    await sevenBlocks(chain);
    const reader = readerOf(chain);
    const three = await reader.resolve(byNumber(3n));
    expect(numberOf(three)).toBe(3n);
    expect(bytesToHex(three!.hash)).toBe(bytesToHex((await chain.getCanonicalHash(3n))!));
    expect(await reader.resolve(byNumber(8n))).toBeNull();
  });

  it("finds a block by hash, canonical or not; requireCanonical refuses a side block", async () => {
    const chain = await openChain();
    await sevenBlocks(chain);
    const other = await openChain();
    const side = await other.mine([], { coinbase: carol!.address, timestamp: 5_000n });
    expect((await chain.importBlock(side.block)).result).toBe("IMPORTED_NOT_BEST");
    const reader = readerOf(chain);

    const canonical = (await chain.getBlockByNumber(4n))!;
    expect(bytesToHex((await reader.resolve(byHash(canonical.hash, true)))!.hash)).toBe(
      bytesToHex(canonical.hash),
    );
    const found = await reader.resolve(byHash(side.hash));
    expect(bytesToHex(found!.hash)).toBe(bytesToHex(side.hash));
    expect(numberOf(found)).toBe(1n);

    const err = await caught(reader.resolve(byHash(side.hash, true)));
    expectChainError(
      err,
      ChainErrorCode.NOT_CANONICAL,
      `block ${bytesToHex(side.hash)} is not canonical`,
    );
    expect(await reader.resolve(byHash(new Uint8Array(32).fill(9)))).toBeNull();
  });

  it("answers latest with the head, earliest with genesis, pending (no source) with the head", async () => {
    const chain = await openChain();
    await sevenBlocks(chain);
    const reader = readerOf(chain);
    expect(await reader.resolve(byTag(BlockTag.LATEST))).toBe(chain.head);
    const earliest = await reader.resolve(byTag(BlockTag.EARLIEST));
    expect(numberOf(earliest)).toBe(0n);
    expect(bytesToHex(earliest!.hash)).toBe(bytesToHex((await chain.getCanonicalHash(0n))!));
    expect(await reader.resolve(byTag(BlockTag.PENDING))).toBe(chain.head);
  });

  it("answers safe and finalized with the blocks the network's depths below the head, at least genesis", async () => {
    const chain = await openChain();
    const reader = readerOf(chain);
    const tags = async () => [
      numberOf(await reader.resolve(byTag(BlockTag.SAFE))),
      numberOf(await reader.resolve(byTag(BlockTag.FINALIZED))),
    ];
    expect(await tags()).toEqual([0n, 0n]);
    for (let i = 0n; i < 3n; i++) await chain.mine([], { coinbase: MINER, timestamp: 1_001n + i });
    // Head 3: safe is 1; finalized would be -2, so genesis.
    expect(await tags()).toEqual([1n, 0n]);
    for (let i = 3n; i < 9n; i++) await chain.mine([], { coinbase: MINER, timestamp: 1_001n + i });
    // Head 9.
    expect(await tags()).toEqual([7n, 4n]);
    const safe = await reader.resolve(byTag(BlockTag.SAFE));
    expect(bytesToHex(safe!.hash)).toBe(bytesToHex((await chain.getCanonicalHash(7n))!));
  });

  it("answers safe and finalized with the head on regtest's own depths (0)", async () => {
    const chain = await openChain(NETWORKS.regtest);
    await chain.mine([], { coinbase: MINER, timestamp: 1_001n });
    await chain.mine([], { coinbase: MINER, timestamp: 1_002n });
    const reader = readerOf(chain);
    expect(numberOf(await reader.resolve(byTag(BlockTag.SAFE)))).toBe(2n);
    expect(numberOf(await reader.resolve(byTag(BlockTag.FINALIZED)))).toBe(2n);
  });
});

describe("ChainReader.require", () => {
  it("returns the block, and refuses a missing one with UNKNOWN_BLOCK naming it", async () => {
    const chain = await openChain();
    await chain.mine([], { coinbase: MINER, timestamp: 1_001n });
    const reader = readerOf(chain);
    expect(numberOf(await reader.require(byNumber(1n)))).toBe(1n);

    let err = await caught(reader.require(byNumber(0x63n)));
    expectChainError(err, ChainErrorCode.UNKNOWN_BLOCK, "block 0x63 not found");
    const missing = new Uint8Array(32).fill(0xab);
    err = await caught(reader.require(byHash(missing)));
    expectChainError(err, ChainErrorCode.UNKNOWN_BLOCK, `block 0x${"ab".repeat(32)} not found`);
  });
});

describe("ChainReader.state and nonce", () => {
  it("read the state after a past block", async () => {
    const chain = await openChain();
    await sevenBlocks(chain);
    const reader = readerOf(chain);
    expect(await reader.nonce(alice!.address, byNumber(0n))).toBe(0n);
    expect(await reader.nonce(alice!.address, byNumber(1n))).toBe(1n);
    expect(await reader.nonce(alice!.address, byNumber(4n))).toBe(4n);
    expect(await reader.nonce(alice!.address, byTag(BlockTag.LATEST))).toBe(7n);
    expect(await reader.nonce(bob!.address, byNumber(1n))).toBe(0n);
    expect(await reader.nonce(bob!.address, byNumber(2n))).toBe(1n);
    const at4 = await reader.state(byNumber(4n));
    expect(await at4.getBalance(carol!.address)).toBe(DEV_ACCOUNT_BALANCE + 2n);
    const atHead = await reader.state(byTag(BlockTag.LATEST));
    expect(await atHead.getBalance(carol!.address)).toBe(DEV_ACCOUNT_BALANCE + 5n);
    expect((await reader.state(byNumber(0n)).then((s) => s.getCode(EMITTER))).length).toBe(0);
    expect(await (await reader.state(byNumber(1n))).getCode(EMITTER)).toEqual(LOGGING_RUNTIME);
    const err = await caught(reader.state(byNumber(8n)));
    expectChainError(err, ChainErrorCode.UNKNOWN_BLOCK, "block 0x8 not found");
  });

  it("share one state per block: the same promise and object for the same header", async () => {
    const chain = await openChain();
    await sevenBlocks(chain);
    const reader = readerOf(chain);
    const header = (await chain.getBlockByNumber(3n))!.block.header;
    const first = reader.stateAt(header);
    const second = reader.stateAt(header);
    expect(second).toBe(first);
    expect(await reader.state(byNumber(3n))).toBe(await first);
    // Another block's state is another object.
    expect(await reader.state(byNumber(4n))).not.toBe(await first);
  });
});

describe("ChainReader.getLogs", () => {
  const everything = { addresses: [], topics: [] } as const;

  it("returns the logs of a block range, in chain order, with their positions", async () => {
    const chain = await openChain();
    const { calls, block2 } = await sevenBlocks(chain);
    const reader = readerOf(chain);
    const logs = await reader.getLogs({
      ...everything,
      range: { from: byTag(BlockTag.EARLIEST), to: byTag(BlockTag.LATEST) },
    });
    expect(logs).toHaveLength(2);
    expect(logs.map((l) => [l.transactionIndex, l.logIndex])).toEqual([
      [0, 0],
      [1, 1],
    ]);
    expect(logs.map((l) => bytesToHex(l.transactionHash))).toEqual(
      calls.map((tx) => bytesToHex(tx.hash)),
    );
    expect(logs.every((l) => bytesToHex(l.blockHash) === bytesToHex(block2.hash))).toBe(true);
    expect(logs.map((l) => l.blockNumber)).toEqual([2n, 2n]);
    expect(bytesToHex(logs[0]!.log.address)).toBe(bytesToHex(EMITTER));
    expect(logs[0]!.log.topics.map(bytesToHex)).toEqual([bytesToHex(TOPIC)]);
    expect(bytesToHex(logs[0]!.log.data)).toBe(`0x${"00".repeat(31)}07`);

    // A range without the block, a filter on another topic or emitter: nothing.
    const later = { from: byNumber(3n), to: byTag(BlockTag.LATEST) };
    expect(await reader.getLogs({ ...everything, range: later })).toEqual([]);
    const whole = { from: byNumber(0n), to: byNumber(7n) };
    const otherTopic = [new Uint8Array(32).fill(1) as Hash32];
    expect(await reader.getLogs({ range: whole, addresses: [], topics: [otherTopic] })).toEqual([]);
    expect(await reader.getLogs({ range: whole, addresses: [carol!.address], topics: [] })).toEqual(
      [],
    );
    expect(
      await reader.getLogs({ range: whole, addresses: [EMITTER], topics: [[TOPIC]] }),
    ).toHaveLength(2);
  });

  it("refuses a range whose start is after its end with INVALID_RANGE", async () => {
    const chain = await openChain();
    await sevenBlocks(chain);
    const reader = readerOf(chain);
    const err = await caught(
      reader.getLogs({ ...everything, range: { from: byNumber(5n), to: byNumber(2n) } }),
    );
    expectChainError(
      err,
      ChainErrorCode.INVALID_RANGE,
      "invalid block range: fromBlock 0x5 is after toBlock 0x2",
    );
  });

  it("reads one block by hash, and refuses an unknown hash with UNKNOWN_BLOCK", async () => {
    const chain = await openChain();
    const { block2 } = await sevenBlocks(chain);
    const reader = readerOf(chain);
    const logs = await reader.getLogs({
      ...everything,
      range: { blockHash: block2.hash as Hash32 },
    });
    expect(logs.map((l) => l.logIndex)).toEqual([0, 1]);
    const block3 = (await chain.getBlockByNumber(3n))!;
    expect(
      await reader.getLogs({ ...everything, range: { blockHash: block3.hash as Hash32 } }),
    ).toEqual([]);
    const unknown = new Uint8Array(32).fill(0xcd) as Hash32;
    const err = await caught(reader.getLogs({ ...everything, range: { blockHash: unknown } }));
    expectChainError(err, ChainErrorCode.UNKNOWN_BLOCK, `block 0x${"cd".repeat(32)} not found`);
  });
});

describe("ChainReader.transaction and receipt", () => {
  it("find a mined transaction and its receipt by hash, with its own gas and first log index", async () => {
    const chain = await openChain();
    const { deploy, calls, block2 } = await sevenBlocks(chain);
    const reader = readerOf(chain);

    const found = await reader.transaction(calls[1]!.hash);
    expect(found?.index).toBe(1);
    expect(bytesToHex(found!.tx.hash)).toBe(bytesToHex(calls[1]!.hash));
    expect(bytesToHex(found!.block.hash)).toBe(bytesToHex(block2.hash));

    const first = await reader.receipt(calls[0]!.hash);
    const second = await reader.receipt(calls[1]!.hash);
    expect(first?.firstLogIndex).toBe(0);
    expect(second?.firstLogIndex).toBe(1);
    expect(second?.receipt).toEqual(block2.receipts[1]);
    expect(first!.gasUsed).toBe(block2.receipts[0]!.cumulativeGasUsed);
    expect(second!.gasUsed).toBe(
      block2.receipts[1]!.cumulativeGasUsed - block2.receipts[0]!.cumulativeGasUsed,
    );
    // Both calls do the same work.
    expect(second!.gasUsed).toBe(first!.gasUsed);
    expect(first!.gasUsed).toBeGreaterThan(21_000n);

    const created = await reader.receipt(deploy.hash);
    expect(numberOf(created!.block)).toBe(1n);
    expect(created!.index).toBe(0);
    expect(created!.receipt.status).toBe(1);
    const pay = await reader.receipt(
      (await chain.getBlockByNumber(5n))!.block.transactions[0]!.hash,
    );
    expect(pay?.gasUsed).toBe(21_000n);
    expect(pay?.firstLogIndex).toBe(0);
  });

  it("give every receipt of a block as receipt gives each, and none for an empty block", async () => {
    const chain = await openChain();
    const { calls, block2 } = await sevenBlocks(chain);
    const reader = readerOf(chain);
    const all = await reader.blockReceipts(block2);
    expect(all.map((r) => bytesToHex(r.tx.hash))).toEqual(
      block2.block.transactions.map((tx) => bytesToHex(tx.hash)),
    );
    const plain = (r: IncludedReceipt | null) =>
      r === null ? r : { ...r, tx: bytesToHex(r.tx.hash), block: bytesToHex(r.block.hash) };
    expect(plain(all[1]!)).toEqual(plain(await reader.receipt(calls[1]!.hash)));
    expect(plain(all[0]!)).toEqual(plain(await reader.receipt(calls[0]!.hash)));
    expect(await reader.blockReceipts((await chain.getBlockByNumber(0n))!)).toEqual([]);
  });

  it("answer null for an unknown hash", async () => {
    const chain = await openChain();
    await sevenBlocks(chain);
    const reader = readerOf(chain);
    const unknown = sign(alice, { nonce: 99n, to: carol!.address, gasLimit: 21_000n });
    expect(await reader.transaction(unknown.hash)).toBeNull();
    expect(await reader.receipt(unknown.hash)).toBeNull();
  });
});

describe("ChainReader with a pending source", () => {
  async function withSource(hasPending: boolean) {
    const chain = await openChain();
    await sevenBlocks(chain);
    const reader = readerOf(chain);
    const state = await chain.stateAt(chain.head.block.header);
    const pendingBlock: PendingBlock = { ...chain.head, pending: true, state, receipts: [] };
    const waiting = sign(alice, { nonce: 7n, to: carol!.address, gasLimit: 21_000n });
    const source: PendingSource = {
      hasPending: () => hasPending,
      pendingBlock: vi.fn(async () => pendingBlock),
      pendingNonce: vi.fn((_address: Address, stateNonce: bigint) => stateNonce + 3n),
      pendingTransaction: (hash) =>
        bytesToHex(hash) === bytesToHex(waiting.hash) ? waiting : undefined,
    };
    reader.setPendingSource(source);
    return { chain, reader, source, pendingBlock, waiting };
  }

  it("resolves pending to the source's block and reads its state", async () => {
    const { reader, pendingBlock } = await withSource(true);
    expect(await reader.resolve(byTag(BlockTag.PENDING))).toBe(pendingBlock);
    expect(await reader.require(byTag(BlockTag.PENDING))).toBe(pendingBlock);
    expect(await reader.state(byTag(BlockTag.PENDING))).toBe(pendingBlock.state);
    // Other tags are not the source's business.
    expect(numberOf(await reader.resolve(byTag(BlockTag.LATEST)))).toBe(7n);
  });

  it("asks the source for the pending nonce, from the head's nonce", async () => {
    const { reader, source } = await withSource(true);
    expect(await reader.nonce(alice!.address, byTag(BlockTag.PENDING))).toBe(10n);
    expect(source.pendingNonce).toHaveBeenCalledTimes(1);
    const [address, stateNonce] = vi.mocked(source.pendingNonce).mock.calls[0]!;
    expect(bytesToHex(address)).toBe(bytesToHex(alice!.address));
    expect(stateNonce).toBe(7n);
    // latest and numbers do not ask it.
    expect(await reader.nonce(alice!.address, byTag(BlockTag.LATEST))).toBe(7n);
    expect(source.pendingNonce).toHaveBeenCalledTimes(1);
  });

  it("reads the head's state for pending while nothing waits, without building a block", async () => {
    const { chain, reader, source } = await withSource(false);
    const state = await reader.state(byTag(BlockTag.PENDING));
    expect(state).toBe(await reader.stateAt(chain.head.block.header));
    expect(source.pendingBlock).not.toHaveBeenCalled();
  });

  it("finds waiting transactions through the source", async () => {
    const { reader, waiting } = await withSource(true);
    expect(reader.pendingTransaction(waiting.hash)).toBe(waiting);
    expect(reader.pendingTransaction(new Uint8Array(32))).toBeUndefined();
  });
});
