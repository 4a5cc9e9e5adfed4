import {
  type Address,
  type BlockSelector,
  BlockTag,
  contractAddress,
  deriveDevAccounts,
  signTransaction,
  type UnsignedTransaction,
} from "@nodex/types";
import { describe, expect, it, vi } from "vitest";
import {
  type Chain,
  ChainError,
  ChainErrorCode,
  ChainReader,
  type PendingSource,
} from "../../src/index.js";
import { chainFactory, databaseOf, executor, forgetLogRecords, MINER } from "./fixtures.js";

const openChain = chainFactory();
const [alice] = deriveDevAccounts();

/** Runtime that emits as many empty LOG0 as the first calldata word says. */
const LOOP_RUNTIME = new Uint8Array([
  ...[0x60, 0x00, 0x35], // calldataload(0): n
  0x5b, // 3: loop
  ...[0x80, 0x15, 0x60, 20, 0x57], // if n == 0 goto end
  ...[0x60, 0x00, 0x80, 0xa0], // log0(0, 0)
  ...[0x60, 0x01, 0x90, 0x03], // n - 1
  ...[0x60, 0x03, 0x56], // goto loop
  ...[0x5b, 0x00], // 20: end
]);

function deployCode(runtime: Uint8Array): Uint8Array {
  const n = runtime.length;
  return new Uint8Array([
    ...[0x61, n >> 8, n & 0xff, 0x80, 0x60, 12, 0x60, 0, 0x39, 0x60, 0, 0xf3],
    ...runtime,
  ]);
}

const sign = (fields: Partial<UnsignedTransaction> & { nonce: bigint }) =>
  signTransaction(
    {
      gasPrice: 1n,
      gasLimit: 3_000_000n,
      to: null,
      value: 0n,
      data: new Uint8Array(),
      ...fields,
    },
    alice!.privateKey,
    33,
  );

const EMITTER_A = contractAddress(alice!.address, 0n);
const EMITTER_B = contractAddress(alice!.address, 1n);
/** `n` as a 32-byte big-endian word. */
function word(n: number): Uint8Array {
  const out = new Uint8Array(32);
  new DataView(out.buffer).setUint32(28, n);
  return out;
}
const byNumber = (number: bigint): BlockSelector => ({ kind: "number", number });
const byTag = (tag: BlockTag): BlockSelector => ({ kind: "tag", tag });
const range = (from: BlockSelector, to: BlockSelector) => ({ from, to });

/** Block 1 deploys emitters A and B; then one block per entry of `counts` calls A that often. */
async function emitting(chain: Chain, counts: readonly number[][]): Promise<bigint> {
  await chain.mine(
    [
      sign({ nonce: 0n, data: deployCode(LOOP_RUNTIME) }),
      sign({ nonce: 1n, data: deployCode(LOOP_RUNTIME) }),
    ],
    { coinbase: MINER, timestamp: 1_001n },
  );
  let nonce = 2n;
  let timestamp = 1_002n;
  for (const block of counts) {
    const txs = block.map((n) => sign({ nonce: nonce++, to: EMITTER_A, data: word(n) }));
    const mined = await chain.mine(txs, { coinbase: MINER, timestamp: timestamp++ });
    expect(mined.block.transactions).toHaveLength(txs.length);
  }
  return nonce;
}

async function caught(work: Promise<unknown>): Promise<ChainError> {
  try {
    await work;
  } catch (err) {
    expect(err).toBeInstanceOf(ChainError);
    return err as ChainError;
  }
  throw new Error("expected a rejection");
}

describe("ChainReader.getLogs limits", () => {
  it("caps 10,001 logs over 2,001 blocks, not 10,000, nor 10,001 over 2,000 blocks (the defaults)", async () => {
    const chain = await openChain();
    // Block 2: 10,000 logs of A; block 3: one log of B.
    const nonce = await emitting(chain, [[5_000, 5_000]]);
    await chain.mine([sign({ nonce, to: EMITTER_B, data: word(1) })], {
      coinbase: MINER,
      timestamp: 1_100n,
    });
    const reader = new ChainReader(chain, executor, { coinbase: () => MINER });
    const all = { addresses: [], topics: [] };
    // Ranges that end beyond the head are read up to the head.
    const exact = await reader.getLogs({ ...all, range: range(byNumber(0n), byNumber(1_999n)) });
    expect(exact).toHaveLength(10_001);
    const onlyA = await reader.getLogs({
      addresses: [EMITTER_A],
      topics: [],
      range: range(byNumber(0n), byNumber(2_000n)),
    });
    expect(onlyA).toHaveLength(10_000);
    const err = await caught(
      reader.getLogs({ ...all, range: range(byNumber(0n), byNumber(2_000n)) }),
    );
    expect(err.code).toBe(ChainErrorCode.LOGS_LIMIT);
    expect(err.message).toBe(
      "query returns more than 10000 logs over more than 2000 blocks: ask for at most 2000 blocks at a time, such as 0x0 to 0x7cf",
    );
  }, 60_000);

  it("applies injected limits at their edges", async () => {
    const chain = await openChain();
    // Blocks 2..6 with 1 log each.
    await emitting(chain, [[1], [1], [1], [1], [1]]);
    const reader = new ChainReader(chain, executor, {
      coinbase: () => MINER,
      logsUncappedRange: 4n,
      logsCap: 3,
    });
    const all = { addresses: [] as Address[], topics: [] };
    // 4 blocks: never capped, 4 logs.
    expect(await reader.getLogs({ ...all, range: range(byNumber(2n), byNumber(5n)) })).toHaveLength(
      4,
    );
    // 5 blocks: 3 logs pass, 4 do not.
    expect(await reader.getLogs({ ...all, range: range(byNumber(0n), byNumber(4n)) })).toHaveLength(
      3,
    );
    const err = await caught(reader.getLogs({ ...all, range: range(byNumber(2n), byNumber(6n)) }));
    expect(err.code).toBe(ChainErrorCode.LOGS_LIMIT);
    expect(err.message).toBe(
      "query returns more than 3 logs over more than 4 blocks: ask for at most 4 blocks at a time, such as 0x2 to 0x5",
    );
    expect(() => new ChainReader(chain, executor, { coinbase: () => MINER, logsCap: 0 })).toThrow(
      RangeError,
    );
    expect(
      () => new ChainReader(chain, executor, { coinbase: () => MINER, logsUncappedRange: 0n }),
    ).toThrow(RangeError);
  });

  it("getLogsWithin answers what getLogs does within its budget, undefined past it, and the same errors", async () => {
    const chain = await openChain();
    // Blocks 2..6 with 1, 2, 0 (no call), 3 and 1 logs.
    await emitting(chain, [[1], [2], [], [3], [1]]);
    const reader = new ChainReader(chain, executor, { coinbase: () => MINER });
    const all = { addresses: [] as Address[], topics: [] };
    const q = (from: bigint, to: bigint) => ({
      ...all,
      range: range(byNumber(from), byNumber(to)),
    });
    const budget = (blocks: bigint, logs: number) => ({ blocks, logs });
    const ids = (logs: readonly { blockNumber: bigint; logIndex: number }[] | undefined) =>
      logs?.map((l) => `${l.blockNumber}/${l.logIndex}`);
    // Within: the same logs.
    expect(ids(await reader.getLogsWithin(q(2n, 6n), budget(5n, 7)))).toEqual(
      ids(await reader.getLogs(q(2n, 6n))),
    );
    // One block too many, or one log too many: undefined.
    expect(await reader.getLogsWithin(q(2n, 6n), budget(4n, 7))).toBeUndefined();
    expect(await reader.getLogsWithin(q(2n, 6n), budget(5n, 6))).toBeUndefined();
    // The range is counted to the head; a single block by hash counts its logs.
    expect(ids(await reader.getLogsWithin(q(5n, 100n), budget(2n, 4)))).toEqual(
      ids(await reader.getLogs(q(5n, 6n))),
    );
    const block5 = (await chain.getBlockByNumber(5n))!;
    const byHash = { ...all, range: { blockHash: block5.hash } };
    expect(await reader.getLogsWithin(byHash, budget(1n, 2))).toBeUndefined();
    expect(ids(await reader.getLogsWithin(byHash, budget(1n, 3)))).toEqual(
      ids(await reader.getLogs(byHash)),
    );
    // A bad range is refused as getLogs refuses it.
    expect((await caught(reader.getLogsWithin(q(8n, 9n), budget(5n, 5)))).code).toBe(
      ChainErrorCode.RANGE_BEYOND_HEAD,
    );
    expect((await caught(reader.getLogsWithin(q(4n, 3n), budget(5n, 5)))).code).toBe(
      ChainErrorCode.INVALID_RANGE,
    );
  });

  it("refuses a range that starts beyond the head, and reads one that ends beyond it up to the head", async () => {
    const chain = await openChain();
    await emitting(chain, [[1], [2]]);
    const reader = new ChainReader(chain, executor, { coinbase: () => MINER });
    const all = { addresses: [] as Address[], topics: [] };
    const err = await caught(reader.getLogs({ ...all, range: range(byNumber(4n), byNumber(10n)) }));
    expect(err.code).toBe(ChainErrorCode.RANGE_BEYOND_HEAD);
    expect(err.message).toBe("block range extends beyond current head block");
    // The start after the end is still INVALID_RANGE.
    const backwards = await caught(
      reader.getLogs({ ...all, range: range(byNumber(4n), byTag(BlockTag.LATEST)) }),
    );
    expect(backwards.code).toBe(ChainErrorCode.INVALID_RANGE);
    expect(await reader.getLogs({ ...all, range: range(byNumber(3n), byNumber(9n)) })).toHaveLength(
      2,
    );
    expect(
      await reader.getLogs({ ...all, range: range(byNumber(3n), byNumber(2n ** 64n - 1n)) }),
    ).toHaveLength(2);

    // `pending` is the head (block 3, two logs): no pending block is built for a range.
    const source: PendingSource = {
      hasPending: () => true,
      pendingBlock: vi.fn(async () => {
        throw new Error("built a pending block");
      }),
      pendingNonce: (_a, n) => n,
      pendingTransaction: () => undefined,
    };
    reader.setPendingSource(source);
    const logs = await reader.getLogs({
      ...all,
      range: range(byTag(BlockTag.EARLIEST), byTag(BlockTag.PENDING)),
    });
    expect(logs).toHaveLength(3);
    expect(
      await reader.getLogs({
        ...all,
        range: range(byTag(BlockTag.PENDING), byTag(BlockTag.PENDING)),
      }),
    ).toHaveLength(2);
    expect(source.pendingBlock).not.toHaveBeenCalled();
  });

  it("reads log records only: no header, body or receipt", async () => {
    const chain = await openChain();
    const nonce = await emitting(chain, [[1], [0], [0], [0], [0], [0]]);
    await chain.mine([sign({ nonce, to: EMITTER_B, data: word(2) })], {
      coinbase: MINER,
      timestamp: 1_100n,
    });
    const reader = new ChainReader(chain, executor, { coinbase: () => MINER });
    const headers = vi.spyOn(chain, "getHeaderByHash");
    const bodies = vi.spyOn(chain, "getBlockByHash");
    const receipts = vi.spyOn(chain, "getReceipts");
    const records = vi.spyOn(chain.logIndex, "logRecord");
    const logs = await reader.getLogs({
      addresses: [EMITTER_B],
      topics: [],
      range: range(byNumber(0n), byTag(BlockTag.LATEST)),
    });
    expect(logs.map((l) => [l.blockNumber, l.logIndex])).toEqual([
      [8n, 0],
      [8n, 1],
    ]);
    expect(logs.every((l) => l.block === undefined)).toBe(true);
    // Block 0 (genesis, before the records start) by its header; the records of 1 to 8 looked
    // up (2 and 8 have one).
    expect(headers).toHaveBeenCalledTimes(1);
    expect(bodies).not.toHaveBeenCalled();
    expect(receipts).not.toHaveBeenCalled();
    expect(records.mock.calls.map(([n]) => n)).toEqual([1n, 2n, 3n, 4n, 5n, 6n, 7n, 8n]);
  });

  it("over a long range with few blocks of logs, names the blocks with records in one key read per chunk", async () => {
    const chain = await openChain();
    // Blocks 2..201, logs in 100 and 180 only.
    await emitting(
      chain,
      Array.from({ length: 200 }, (_, i) => (i === 98 || i === 178 ? [1] : [])),
    );
    const reader = new ChainReader(chain, executor, { coinbase: () => MINER });
    const records = vi.spyOn(chain.logIndex, "logRecord");
    const named = vi.spyOn(chain.logIndex, "logRecordNumbers");
    const logs = await reader.getLogs({
      addresses: [],
      topics: [],
      range: range(byNumber(0n), byTag(BlockTag.LATEST)),
    });
    expect(logs.map((l) => l.blockNumber)).toEqual([100n, 180n]);
    // Blocks 1 to 64 one by one: none has a record, so 65 to 192 and 193 to 201 are named.
    const first = Array.from({ length: 64 }, (_, i) => BigInt(i + 1));
    expect(records.mock.calls.map(([n]) => n)).toEqual([...first, 100n, 180n]);
    expect(named.mock.calls.map(([from, to]) => [from, to])).toEqual([
      [65n, 192n],
      [193n, 201n],
    ]);
  });

  it("without log records, reads receipts of the blocks whose bloom matches only, bodies of those and of the block after each", async () => {
    const first = await openChain();
    const nonce = await emitting(first, [[1], [0], [0], [0], [0], [0]]);
    await first.mine([sign({ nonce, to: EMITTER_B, data: word(2) })], {
      coinbase: MINER,
      timestamp: 1_100n,
    });
    const db = databaseOf(first);
    await forgetLogRecords(db);
    const chain = await openChain({ db });
    const reader = new ChainReader(chain, executor, { coinbase: () => MINER });
    const bodies = vi.spyOn(chain, "getBlockByHash");
    const byNumberReads = vi.spyOn(chain, "getBlockByNumber");
    const receipts = vi.spyOn(chain, "getReceipts");
    const logs = await reader.getLogs({
      addresses: [EMITTER_B],
      topics: [],
      range: range(byNumber(0n), byTag(BlockTag.LATEST)),
    });
    expect(logs).toHaveLength(2);
    expect(logs.every((l) => l.blockNumber === 8n && l.block?.block.header.number === 8n)).toBe(
      true,
    );
    expect(byNumberReads).not.toHaveBeenCalled();
    expect(bodies).toHaveBeenCalledTimes(1);
    expect(receipts).toHaveBeenCalledTimes(1);

    // After a match the next block is read whole at once (runs of matches are common): block 2
    // matches A, so block 3 is read whole; its bloom does not, so 4 to 8 go by headers again.
    const headers = vi.spyOn(chain, "getHeaderByHash");
    bodies.mockClear();
    receipts.mockClear();
    const ofA = await reader.getLogs({
      addresses: [EMITTER_A],
      topics: [],
      range: range(byNumber(0n), byTag(BlockTag.LATEST)),
    });
    expect(ofA.map((l) => l.blockNumber)).toEqual([2n]);
    expect(bodies.mock.calls.length).toBe(2);
    expect(headers.mock.calls.length).toBe(8);
    expect(receipts).toHaveBeenCalledTimes(1);
  });
});
