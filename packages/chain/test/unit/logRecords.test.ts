import { Bucket, type Database } from "@nodex/state";
import {
  type Address,
  type Block,
  type BlockSelector,
  bytesToHex,
  contractAddress,
  deriveDevAccounts,
  type Hash32,
  headerHash,
  type Log,
  type Receipt,
  signTransaction,
  type UnsignedTransaction,
} from "@nodex/types";
import fc from "fast-check";
import { describe, expect, it, vi } from "vitest";
import {
  blockLogs,
  type Chain,
  ChainErrorCode,
  ChainReader,
  type FoundLog,
  type LogQuery,
  type StoredBlock,
} from "../../src/index.js";
import {
  decodeLogRecord,
  encodeLogRecord,
  LOG_RECORD_KIND,
  LOG_RECORD_START_KEY,
  type LocatedLog,
  matchLogs,
} from "../../src/logRecords.js";
import { chainFactory, databaseOf, executor, forgetLogRecords, MINER } from "./fixtures.js";

const openChain = chainFactory();
const [alice] = deriveDevAccounts();

/** What a query answers with, without the block object: comparable between both paths. */
const located = (logs: readonly LocatedLog[]) =>
  logs.map((l) => ({
    blockHash: bytesToHex(l.blockHash),
    blockNumber: l.blockNumber,
    transactionHash: bytesToHex(l.transactionHash),
    transactionIndex: l.transactionIndex,
    logIndex: l.logIndex,
    address: bytesToHex(l.log.address),
    topics: l.log.topics.map(bytesToHex),
    data: bytesToHex(l.log.data),
  }));

describe("log records", () => {
  const bytes = (n: number) => fc.uint8Array({ minLength: n, maxLength: n });
  // Few distinct values, so that queries match often.
  const address = fc.constantFrom(...[1, 2, 3].map((n) => new Uint8Array(20).fill(n) as Address));
  const topic = fc.constantFrom(...[1, 2, 3, 4].map((n) => new Uint8Array(32).fill(n) as Hash32));
  const log: fc.Arbitrary<Log> = fc.record({
    address,
    topics: fc.array(topic, { maxLength: 4 }),
    data: fc.uint8Array({ maxLength: 80 }),
  });
  const receipt: fc.Arbitrary<Receipt> = fc.record({
    status: fc.constant(1 as const),
    cumulativeGasUsed: fc.constant(21_000n),
    logsBloom: fc.constant(new Uint8Array(256)),
    logs: fc.array(log, { maxLength: 4 }),
  });
  const query: fc.Arbitrary<Pick<LogQuery, "addresses" | "topics">> = fc.record({
    addresses: fc.array(address, { maxLength: 2 }),
    topics: fc.array(fc.option(fc.array(topic, { minLength: 1, maxLength: 2 })), {
      maxLength: 5,
    }),
  });

  it("give what reading the block and its receipts gives, for any logs and query", () => {
    fc.assert(
      fc.property(
        fc.array(receipt, { maxLength: 6 }),
        bytes(32),
        fc.bigInt({ min: 0n, max: 2n ** 64n - 1n }),
        query,
        (receipts, hash, number, q) => {
          const transactions = receipts.map((_, i) => ({
            hash: new Uint8Array(32).fill(0x80 + i),
          }));
          const block = {
            hash,
            totalDifficulty: 1n,
            block: { header: { number }, transactions, uncles: [] },
          } as unknown as StoredBlock;
          const expected = blockLogs(block, receipts, q);
          const record = encodeLogRecord(hash, transactions, receipts);
          if (receipts.every((r) => r.logs.length === 0)) {
            expect(record).toBeUndefined();
            return;
          }
          const all = decodeLogRecord(record!, number);
          expect(located(all)).toEqual(
            located(blockLogs(block, receipts, { addresses: [], topics: [] })),
          );
          const out: LocatedLog[] = [];
          matchLogs(all, q, out);
          expect(located(out)).toEqual(located(expected));
        },
      ),
      { numRuns: 500 },
    );
    // Bounded by its cases: 1.4 s on a quiet 2-core machine, ten times that on a busy one.
  }, 60_000);
});

/** Runtime that emits LOG1 with the first calldata word as its topic and data. */
const TOPIC_RUNTIME = new Uint8Array([
  ...[0x60, 0x00, 0x35], // calldataload(0)
  ...[0x80, 0x60, 0x00, 0x52], // mstore(0, word), the word kept
  ...[0x60, 0x20, 0x60, 0x00, 0xa1], // log1(0, 32, word)
  0x00,
]);
const DEPLOY = new Uint8Array([
  ...[0x61, 0x00, TOPIC_RUNTIME.length, 0x80, 0x60, 12, 0x60, 0, 0x39, 0x60, 0, 0xf3],
  ...TOPIC_RUNTIME,
]);
const EMITTER = contractAddress(alice!.address, 0n);
const topicOf = (n: number) => {
  const out = new Uint8Array(32);
  out[31] = n;
  return out as Hash32;
};
const byNumber = (number: bigint): BlockSelector => ({ kind: "number", number });

/** Mines blocks of calls to the emitter, one log per entry. */
class Miner {
  nonce = 0n;
  constructor(
    readonly chain: Chain,
    public timestamp: bigint,
  ) {}
  #sign(fields: Partial<UnsignedTransaction> & { nonce: bigint }) {
    return signTransaction(
      { gasPrice: 1n, gasLimit: 200_000n, to: null, value: 0n, data: new Uint8Array(), ...fields },
      alice!.privateKey,
      33,
    );
  }
  async deploy(): Promise<Block> {
    const tx = this.#sign({ nonce: this.nonce++, data: DEPLOY });
    return (await this.chain.mine([tx], { coinbase: MINER, timestamp: this.timestamp++ })).block;
  }
  async block(topics: readonly number[]): Promise<Block> {
    const txs = topics.map((t) =>
      this.#sign({ nonce: this.nonce++, to: EMITTER, data: topicOf(t) }),
    );
    const mined = await this.chain.mine(txs, { coinbase: MINER, timestamp: this.timestamp++ });
    expect(mined.receipts.every((r) => r.status === 1)).toBe(true);
    return mined.block;
  }
}

/** The records in the database: `number:blockHash:logs`. */
async function records(db: Database): Promise<string[]> {
  const out: string[] = [];
  for await (const key of db.keys(Bucket.LOG_INDEX)) {
    if (key[0] !== LOG_RECORD_KIND) continue;
    const number = new DataView(key.buffer, key.byteOffset + 1, 8).getBigUint64(0);
    const value = (await db.get(Bucket.LOG_INDEX, key))!;
    const logs = decodeLogRecord(value, number);
    out.push(`${number}:${bytesToHex(value.subarray(1, 33))}:${logs.length}`);
  }
  return out;
}
const recordOf = (block: Block, logs: number) =>
  `${block.header.number}:${bytesToHex(headerHash(block.header))}:${logs}`;

/** Every matching log by reading every block whole. */
async function everyBlock(chain: Chain, query: LogQuery, from: bigint, to: bigint) {
  const out: FoundLog[] = [];
  for (let n = from; n <= to; n++) {
    const block = (await chain.getBlockByNumber(n))!;
    out.push(...blockLogs(block, (await chain.getReceipts(block.hash))!, query));
  }
  return out;
}

describe("decodeLogRecord", () => {
  it("refuses a record of another version as CORRUPT", () => {
    const record = encodeLogRecord(
      new Uint8Array(32),
      [{ hash: new Uint8Array(32) }],
      [
        {
          status: 1,
          cumulativeGasUsed: 1n,
          logsBloom: new Uint8Array(256),
          logs: [{ address: new Uint8Array(20) as Address, topics: [], data: new Uint8Array() }],
        },
      ],
    )!;
    expect(decodeLogRecord(record, 5n)).toHaveLength(1);
    record[0] = 2;
    expect(() => decodeLogRecord(record, 5n)).toThrow(
      expect.objectContaining({ code: ChainErrorCode.CORRUPT }),
    );
  });
});

describe("log records of the canonical chain", () => {
  it("are written in the block's batch, follow a reorganization and a rewind, and survive a restart", async () => {
    const a = await openChain();
    const c = await openChain();
    const minerA = new Miner(a, 1_000n);
    const minerC = new Miner(c, 2_000n);
    const branchA = [await minerA.deploy(), await minerA.block([1]), await minerA.block([])];
    const branchC = [
      await minerC.deploy(),
      await minerC.block([2]),
      await minerC.block([3, 3]),
      await minerC.block([4]),
    ];
    const node = await openChain();
    const db = databaseOf(node);
    const writes = vi.spyOn(db, "write");
    for (const block of branchA) await node.importBlock(block);
    // Block 2's record went in the batch that wrote block 2; block 3 has no logs, no record.
    const batchOf2 = writes.mock.calls[1]![0];
    expect(batchOf2.some((op) => op.bucket === Bucket.HEADER && op.type === "put")).toBe(true);
    expect(
      batchOf2.some(
        (op) =>
          op.bucket === Bucket.LOG_INDEX && op.type === "put" && op.key[0] === LOG_RECORD_KIND,
      ),
    ).toBe(true);
    expect(await records(db)).toEqual([recordOf(branchA[1]!, 1)]);
    const start = await db.get(Bucket.META, LOG_RECORD_START_KEY);
    expect(start && bytesToHex(start)).toBe("0x0000000000000001");

    // The reader's queries go through the store's cache of records: it must follow too.
    const reader = new ChainReader(node, executor, { coinbase: () => MINER });
    const everything = { addresses: [], topics: [] };
    const summary = async (to: bigint) =>
      (
        await reader.getLogs({ ...everything, range: { from: byNumber(0n), to: byNumber(to) } })
      ).map((l) => `${l.blockNumber}/${l.logIndex}:${bytesToHex(l.blockHash).slice(0, 10)}`);
    const hashOf = (block: Block) => bytesToHex(headerHash(block.header)).slice(0, 10);
    expect(await summary(3n)).toEqual([`2/0:${hashOf(branchA[1]!)}`]);

    // C's blocks 1 to 3 stay on the side (no records); its block 4 makes C canonical.
    for (const block of branchC.slice(0, 3)) await node.importBlock(block);
    expect(await records(db)).toEqual([recordOf(branchA[1]!, 1)]);
    await node.importBlock(branchC[3]!);
    expect(bytesToHex(node.head.hash)).toBe(bytesToHex(c.head.hash));
    expect(await records(db)).toEqual([
      recordOf(branchC[1]!, 1),
      recordOf(branchC[2]!, 2),
      recordOf(branchC[3]!, 1),
    ]);
    const range = { from: byNumber(0n), to: byNumber(4n) };
    const found = await reader.getLogs({ ...everything, range });
    expect(located(found)).toEqual(located(await everyBlock(node, everything, 0n, 4n)));
    expect(await summary(4n)).toEqual([
      `2/0:${hashOf(branchC[1]!)}`,
      `3/0:${hashOf(branchC[2]!)}`,
      `3/1:${hashOf(branchC[2]!)}`,
      `4/0:${hashOf(branchC[3]!)}`,
    ]);

    // Back to block 2: the records of 3 and 4 go with them.
    await node.rewindTo(2n);
    expect(await records(db)).toEqual([recordOf(branchC[1]!, 1)]);
    expect(await summary(2n)).toEqual([`2/0:${hashOf(branchC[1]!)}`]);
    const again = new Miner(node, 5_000n);
    again.nonce = 2n;
    const block3 = await again.block([7, 8]);
    expect(await records(db)).toEqual([recordOf(branchC[1]!, 1), recordOf(block3, 2)]);
    expect(await summary(3n)).toEqual([
      `2/0:${hashOf(branchC[1]!)}`,
      `3/0:${hashOf(block3)}`,
      `3/1:${hashOf(block3)}`,
    ]);

    // A restart reads the same.
    const reopened = await openChain({ db });
    const fresh = new ChainReader(reopened, executor, { coinbase: () => MINER });
    const logs = await fresh.getLogs({
      ...everything,
      range: { from: byNumber(0n), to: byNumber(3n) },
    });
    expect(logs.map((l) => [l.blockNumber, bytesToHex(l.log.topics[0]!)])).toEqual([
      [2n, bytesToHex(topicOf(2))],
      [3n, bytesToHex(topicOf(7))],
      [3n, bytesToHex(topicOf(8))],
    ]);
  });

  it("start with the first block written after a database from before them; older blocks are read whole", async () => {
    const first = await openChain();
    const miner = new Miner(first, 1_000n);
    await miner.deploy();
    for (let i = 0; i < 6; i++) await miner.block([i, i + 10]);
    const db = databaseOf(first);
    // Blocks 1..7 as a node from before the records left them (the log index stays).
    await forgetLogRecords(db);
    const chain = await openChain({ db });
    const later = new Miner(chain, 9_000n);
    later.nonce = miner.nonce;
    for (let i = 0; i < 6; i++) await later.block([i, 20 + i]);
    const start = await db.get(Bucket.META, LOG_RECORD_START_KEY);
    expect(start && bytesToHex(start)).toBe("0x0000000000000008");
    expect((await records(db)).map((r) => r.split(":")[0])).toEqual([
      "8",
      "9",
      "10",
      "11",
      "12",
      "13",
    ]);
    const reader = new ChainReader(chain, executor, {
      coinbase: () => MINER,
      logIndexMinRange: 1n,
    });
    const bodies = vi.spyOn(chain, "getBlockByHash");
    const queries: LogQuery[] = [
      { range: { from: byNumber(0n), to: byNumber(13n) }, addresses: [], topics: [] },
      { range: { from: byNumber(3n), to: byNumber(10n) }, addresses: [EMITTER], topics: [] },
      { range: { from: byNumber(0n), to: byNumber(13n) }, addresses: [], topics: [[topicOf(2)]] },
      {
        range: { from: byNumber(5n), to: byNumber(12n) },
        addresses: [],
        topics: [[topicOf(3), topicOf(22)]],
      },
    ];
    for (const query of queries) {
      const range = query.range as { from: { number: bigint }; to: { number: bigint } };
      const found = await reader.getLogs(query);
      expect(found.length).toBeGreaterThan(0);
      expect(located(found)).toEqual(
        located(await everyBlock(chain, query, range.from.number, range.to.number)),
      );
    }
    // Only the blocks from before the records are read whole.
    bodies.mockClear();
    await reader.getLogs(queries[0]!);
    const whole = await Promise.all(
      bodies.mock.calls.map(async ([hash]) => (await chain.getHeaderByHash(hash))!.number),
    );
    expect(whole.every((n) => n < 8n)).toBe(true);
    expect(whole.length).toBeGreaterThan(0);
  });
  it("are read from the database each time when the cache holds none", async () => {
    const first = await openChain();
    const miner = new Miner(first, 1_000n);
    await miner.deploy();
    for (let i = 0; i < 5; i++) await miner.block([i, i + 1]);
    const db = databaseOf(first);
    const chain = await openChain({ db, caches: { logRecordBytes: 1 } });
    const reader = new ChainReader(chain, executor, { coinbase: () => MINER });
    const query: LogQuery = {
      range: { from: byNumber(0n), to: byNumber(6n) },
      addresses: [],
      topics: [[topicOf(2)]],
    };
    const reads = vi.spyOn(db, "get");
    const once = await reader.getLogs(query);
    const recordReads = () =>
      reads.mock.calls.filter(
        ([bucket, key]) => bucket === Bucket.LOG_INDEX && key[0] === LOG_RECORD_KIND,
      ).length;
    const firstReads = recordReads();
    expect(firstReads).toBeGreaterThan(0);
    expect(located(await reader.getLogs(query))).toEqual(located(once));
    // Blocks 1 (no logs) to 6 the first time, and again: none fits in 1 byte.
    expect(firstReads).toBe(6);
    expect(recordReads()).toBe(firstReads + 6);
    expect(located(once)).toEqual(located(await everyBlock(chain, query, 0n, 6n)));
  });
});
