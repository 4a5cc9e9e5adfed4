import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Bucket, Database } from "@nodex/state";
import {
  type Address,
  type Block,
  type BlockSelector,
  bytesToHex,
  contractAddress,
  deriveDevAccounts,
  type Hash32,
  nullLogger,
  signTransaction,
  type UnsignedTransaction,
} from "@nodex/types";
import { afterEach, describe, expect, it, vi } from "vitest";
import { blockLogs, Chain, ChainReader, type LogQuery } from "../../src/index.js";
import { LOG_INDEX_START_KEY, LogIndexKind } from "../../src/logIndex.js";
import { LOG_RECORD_KIND, LOG_RECORD_START_KEY } from "../../src/logRecords.js";
import { executor, MINER, network } from "./fixtures.js";

const [alice] = deriveDevAccounts();

const dirs: string[] = [];
const dbs: Database[] = [];
afterEach(async () => {
  for (const db of dbs.splice(0)) await db.close().catch(() => {});
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

async function open(): Promise<{ chain: Chain; db: Database }> {
  const dir = mkdtempSync(join(tmpdir(), "nodex-log-index-test-"));
  dirs.push(dir);
  const db = await Database.open(join(dir, "db"));
  dbs.push(db);
  return { chain: await Chain.open(network, { db, executor, logger: nullLogger }), db };
}

/** Runtime that emits LOG1 with the first calldata word as its topic. */
const TOPIC_RUNTIME = new Uint8Array([0x60, 0x00, 0x35, 0x60, 0x00, 0x80, 0xa1, 0x00]);
const DEPLOY = new Uint8Array([
  ...[0x61, 0x00, TOPIC_RUNTIME.length, 0x80, 0x60, 12, 0x60, 0, 0x39, 0x60, 0, 0xf3],
  ...TOPIC_RUNTIME,
]);
const EMITTERS = [0n, 1n, 2n].map((n) => contractAddress(alice!.address, n));
const topic = (n: number) => {
  const out = new Uint8Array(32);
  out[31] = n;
  out[0] = 0xee;
  return out as Hash32;
};

const sign = (fields: Partial<UnsignedTransaction> & { nonce: bigint }) =>
  signTransaction(
    { gasPrice: 1n, gasLimit: 200_000n, to: null, value: 0n, data: new Uint8Array(), ...fields },
    alice!.privateKey,
    33,
  );

/** Mines a block of calls: each [emitter, topic] emits one log. */
class Miner {
  nonce = 0n;
  timestamp: bigint;
  constructor(
    readonly chain: Chain,
    start = 1_000n,
  ) {
    this.timestamp = start;
  }
  async deploy(): Promise<Block> {
    const txs = EMITTERS.map(() => sign({ nonce: this.nonce++, data: DEPLOY }));
    return (await this.chain.mine(txs, { coinbase: MINER, timestamp: this.timestamp++ })).block;
  }
  async block(calls: readonly [number, number][]): Promise<Block> {
    const txs = calls.map(([e, t]) =>
      sign({ nonce: this.nonce++, to: EMITTERS[e]!, data: topic(t) }),
    );
    const mined = await this.chain.mine(txs, { coinbase: MINER, timestamp: this.timestamp++ });
    expect(mined.receipts.every((r) => r.status === 1)).toBe(true);
    return mined.block;
  }
}

const byNumber = (number: bigint): BlockSelector => ({ kind: "number", number });

/** The index's entries as `kind:value@number`. */
async function entries(db: Database): Promise<string[]> {
  const out: string[] = [];
  for await (const key of db.keys(Bucket.LOG_INDEX)) {
    if (key[0] === LOG_RECORD_KIND) continue;
    const number = new DataView(key.buffer, key.byteOffset + key.length - 8).getBigUint64(0);
    out.push(`${key[0]}:${bytesToHex(key.subarray(1, key.length - 8))}@${number}`);
  }
  return out.sort();
}
const entry = (kind: number, value: Uint8Array, number: bigint) =>
  `${kind}:${bytesToHex(value)}@${number}`;

/** Every matching log by reading every block: what the index must agree with. */
async function everyBlock(chain: Chain, query: LogQuery, from: bigint, to: bigint) {
  const out = [];
  for (let n = from; n <= to; n++) {
    const block = (await chain.getBlockByNumber(n))!;
    out.push(...blockLogs(block, (await chain.getReceipts(block.hash))!, query));
  }
  return out;
}

const summary = (logs: Awaited<ReturnType<ChainReader["getLogs"]>>) =>
  logs.map((l) => `${l.blockNumber}/${l.logIndex}`);

describe("log index", () => {
  it("reads only the blocks with a rare topic over a long range", async () => {
    const { chain } = await open();
    const miner = new Miner(chain);
    await miner.deploy();
    for (let i = 0; i < 60; i++)
      await miner.block(
        i === 17 || i === 41
          ? [
              [0, 1],
              [1, 9],
            ]
          : [[0, 1]],
      );
    const reader = new ChainReader(chain, executor, {
      coinbase: () => MINER,
      logIndexMinRange: 1n,
    });
    const headers = vi.spyOn(chain, "getHeaderByHash");
    const bodies = vi.spyOn(chain, "getBlockByHash");
    const receipts = vi.spyOn(chain, "getReceipts");
    const records = vi.spyOn(chain.logIndex, "logRecord");
    const logs = await reader.getLogs({
      range: { from: byNumber(1n), to: byNumber(61n) },
      addresses: [],
      topics: [[topic(9)]],
    });
    expect(summary(logs)).toEqual(["19/1", "43/1"]);
    // The log records of the blocks the index names are read, and no other; never a header,
    // a body or a receipt.
    expect(records.mock.calls.map(([n]) => n)).toEqual([19n, 43n]);
    // The address and the topic together: the blocks where both occur.
    records.mockClear();
    const both = await reader.getLogs({
      range: { from: byNumber(20n), to: byNumber(61n) },
      addresses: [EMITTERS[1]!],
      topics: [[topic(9), topic(4)]],
    });
    expect(summary(both)).toEqual(["43/1"]);
    expect(records.mock.calls.map(([n]) => n)).toEqual([43n]);
    // A topic of every block: the index would save nothing, the record of every block is
    // looked up (block 1 has none).
    records.mockClear();
    const common = await reader.getLogs({
      range: { from: byNumber(1n), to: byNumber(61n) },
      addresses: [],
      topics: [[topic(1)]],
    });
    expect(common).toHaveLength(60);
    expect(records).toHaveBeenCalledTimes(61);
    expect(headers).not.toHaveBeenCalled();
    expect(bodies).not.toHaveBeenCalled();
    expect(receipts).not.toHaveBeenCalled();
  });

  it("reads every constraint up to 64 entries first: a rare one is found without reading a common one to its limit", async () => {
    const { chain } = await open();
    const miner = new Miner(chain);
    await miner.deploy();
    for (let i = 0; i < 600; i++)
      await miner.block(
        i === 100 || i === 500
          ? [
              [0, 1],
              [1, 1],
            ]
          : [[0, 1]],
      );
    const reader = new ChainReader(chain, executor, { coinbase: () => MINER });
    const walks = vi.spyOn(chain.logIndex, "logIndexBlocks");
    const logs = await reader.getLogs({
      range: { from: byNumber(1n), to: byNumber(601n) },
      addresses: [EMITTERS[1]!],
      topics: [[topic(1)]],
    });
    expect(summary(logs)).toEqual(["102/1", "502/1"]);
    // The topic (in every block) and the address (in two) up to 64 entries. The topic is not
    // read again: more than 64 entries is more than four times the two blocks named.
    expect(walks.mock.calls.map(([kind, , , , most]) => [kind, most])).toEqual([
      [LogIndexKind.TOPIC, 64],
      [LogIndexKind.ADDRESS, 64],
    ]);
  }, 30_000);

  it("does not read again a constraint it found too common over a range the query's contains", async () => {
    const { chain } = await open();
    const miner = new Miner(chain);
    await miner.deploy();
    for (let i = 0; i < 40; i++) await miner.block(i === 30 ? [[1, 9]] : [[0, 1]]);
    const reader = new ChainReader(chain, executor, {
      coinbase: () => MINER,
      logIndexMinRange: 1n,
    });
    const walks = vi.spyOn(chain.logIndex, "logIndexBlocks");
    const common = { addresses: [EMITTERS[0]!], topics: [[topic(1)]] };
    const range = (from: bigint, to: bigint) => ({ from: byNumber(from), to: byNumber(to) });
    expect(await reader.getLogs({ ...common, range: range(5n, 30n) })).toHaveLength(26);
    expect(walks).toHaveBeenCalledTimes(2);
    // The same range, a longer one with the same limit (an eighth of its blocks): known too
    // common. A range with a higher limit, or one that does not contain it: read again.
    expect(await reader.getLogs({ ...common, range: range(5n, 30n) })).toHaveLength(26);
    expect(await reader.getLogs({ ...common, range: range(5n, 31n) })).toHaveLength(27);
    expect(walks).toHaveBeenCalledTimes(2);
    expect(await reader.getLogs({ ...common, range: range(2n, 41n) })).toHaveLength(39);
    expect(walks).toHaveBeenCalledTimes(4);
    expect(await reader.getLogs({ ...common, range: range(6n, 30n) })).toHaveLength(25);
    expect(walks).toHaveBeenCalledTimes(6);
    // Another value is read; the rare one still names its block.
    expect(
      summary(await reader.getLogs({ addresses: [], topics: [[topic(9)]], range: range(2n, 41n) })),
    ).toEqual(["32/0"]);
    expect(walks).toHaveBeenCalledTimes(7);
  });

  it("does not read again a constraint over windows that slide, each containing where an earlier read passed its limit", async () => {
    const { chain } = await open();
    const miner = new Miner(chain);
    await miner.deploy();
    for (let i = 0; i < 40; i++) await miner.block(i === 30 ? [[1, 9]] : [[0, 1]]);
    const reader = new ChainReader(chain, executor, {
      coinbase: () => MINER,
      logIndexMinRange: 1n,
    });
    const walks = vi.spyOn(chain.logIndex, "logIndexBlocks");
    const common = { addresses: [EMITTERS[0]!], topics: [[topic(1)]] };
    const range = (from: bigint, to: bigint) => ({ from: byNumber(from), to: byNumber(to) });
    const everyOne = async (from: bigint, to: bigint) =>
      summary(await everyBlock(chain, { ...common, range: range(from, to) }, from, to));
    // Blocks 5 to 30, a limit of 3: each constraint passes it by block 8.
    expect(summary(await reader.getLogs({ ...common, range: range(5n, 30n) }))).toEqual(
      await everyOne(5n, 30n),
    );
    expect(walks).toHaveBeenCalledTimes(2);
    // An earlier window with the same limit contains blocks 5 to 8: not read.
    expect(summary(await reader.getLogs({ ...common, range: range(4n, 29n) }))).toEqual(
      await everyOne(4n, 29n),
    );
    expect(walks).toHaveBeenCalledTimes(2);
    // A later one does not: read, passing the limit by block 13; then a window containing 10 to
    // 13 is not read, nor one containing 5 to 8 (both are remembered).
    expect(summary(await reader.getLogs({ ...common, range: range(10n, 35n) }))).toEqual(
      await everyOne(10n, 35n),
    );
    expect(walks).toHaveBeenCalledTimes(4);
    expect(summary(await reader.getLogs({ ...common, range: range(9n, 34n) }))).toEqual(
      await everyOne(9n, 34n),
    );
    expect(summary(await reader.getLogs({ ...common, range: range(3n, 28n) }))).toEqual(
      await everyOne(3n, 28n),
    );
    expect(walks).toHaveBeenCalledTimes(4);
  });

  it("writes entries with a block, deletes them on a rewind and follows a reorganization", async () => {
    const a = await open();
    const c = await open();
    const minerA = new Miner(a.chain, 1_000n);
    const minerC = new Miner(c.chain, 2_000n);
    const branchA = [await minerA.deploy(), await minerA.block([[0, 1]])];
    const branchC = [
      await minerC.deploy(),
      await minerC.block([[1, 2]]),
      await minerC.block([
        [2, 3],
        [2, 3],
      ]),
    ];
    const node = await open();
    for (const block of branchA) await node.chain.importBlock(block);
    expect(await entries(node.db)).toEqual(
      [
        entry(LogIndexKind.ADDRESS, EMITTERS[0]!, 2n),
        entry(LogIndexKind.TOPIC, topic(1), 2n),
      ].sort(),
    );
    const start = await node.db.get(Bucket.META, LOG_INDEX_START_KEY);
    expect(start && bytesToHex(start)).toBe("0x0000000000000001");
    // C's blocks 1 and 2 stay on the side; its block 3 makes C canonical from block 1 on.
    for (const block of branchC) await node.chain.importBlock(block);
    expect(bytesToHex(node.chain.head.hash)).toBe(bytesToHex(c.chain.head.hash));
    expect(await entries(node.db)).toEqual(
      [
        entry(LogIndexKind.ADDRESS, EMITTERS[1]!, 2n),
        entry(LogIndexKind.TOPIC, topic(2), 2n),
        entry(LogIndexKind.ADDRESS, EMITTERS[2]!, 3n),
        entry(LogIndexKind.TOPIC, topic(3), 3n),
      ].sort(),
    );
    const reader = new ChainReader(node.chain, executor, {
      coinbase: () => MINER,
      logIndexMinRange: 1n,
    });
    const range = { from: byNumber(0n), to: byNumber(3n) };
    expect(await reader.getLogs({ range, addresses: [EMITTERS[0]!], topics: [] })).toEqual([]);
    expect(summary(await reader.getLogs({ range, addresses: [], topics: [[topic(3)]] }))).toEqual([
      "3/0",
      "3/1",
    ]);

    // Back to block 1: the entries of 2 and 3 go with them.
    await node.chain.rewindTo(1n);
    expect(await entries(node.db)).toEqual([]);
    // A new block 2 is indexed again.
    const again = new Miner(node.chain, 5_000n);
    again.nonce = 3n;
    await again.block([[0, 7]]);
    expect(await entries(node.db)).toEqual(
      [
        entry(LogIndexKind.ADDRESS, EMITTERS[0]!, 2n),
        entry(LogIndexKind.TOPIC, topic(7), 2n),
      ].sort(),
    );
    // The index survives a restart.
    const reopened = await Chain.open(network, { db: node.db, executor, logger: nullLogger });
    const fresh = new ChainReader(reopened, executor, {
      coinbase: () => MINER,
      logIndexMinRange: 1n,
    });
    expect(summary(await fresh.getLogs({ range, addresses: [], topics: [[topic(7)]] }))).toEqual([
      "2/0",
    ]);
  });

  it("agrees with reading every block on random queries, before and after where the index starts", async () => {
    const { chain, db } = await open();
    const miner = new Miner(chain);
    await miner.deploy();
    let seed = 7;
    const random = (n: number) => {
      seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
      return (seed >>> 12) % n;
    };
    const randomBlock = () =>
      Array.from({ length: random(3) }, () => [random(3), random(4)] as [number, number]);
    for (let i = 0; i < 15; i++) await miner.block(randomBlock());
    // Blocks 1..16 as a database from before the index and the log records: no entries, no
    // records, no starts.
    const old: { type: "del"; bucket: typeof Bucket.LOG_INDEX; key: Uint8Array }[] = [];
    for await (const key of db.keys(Bucket.LOG_INDEX))
      old.push({ type: "del", bucket: Bucket.LOG_INDEX, key: key.slice() });
    await db.write([
      ...old,
      { type: "del", bucket: Bucket.META, key: LOG_INDEX_START_KEY },
      { type: "del", bucket: Bucket.META, key: LOG_RECORD_START_KEY },
    ]);
    const reopened = await Chain.open(network, { db, executor, logger: nullLogger });
    const later = new Miner(reopened, 9_000n);
    later.nonce = miner.nonce;
    for (let i = 0; i < 15; i++) await later.block(randomBlock());
    const start = await db.get(Bucket.META, LOG_INDEX_START_KEY);
    expect(start && bytesToHex(start)).toBe("0x0000000000000011");
    const head = reopened.head.block.header.number;
    expect(head).toBe(31n);

    const reader = new ChainReader(reopened, executor, {
      coinbase: () => MINER,
      logIndexMinRange: 1n,
    });
    /** A non-empty random subset of `values`. */
    const pick = <T>(values: readonly T[]): T[] => {
      const some = values.filter(() => random(2) === 0);
      return some.length > 0 ? some : [values[random(values.length)]!];
    };
    const walks = vi.spyOn(reopened.logIndex, "logIndexBlocks");
    let matched = 0;
    for (let i = 0; i < 60; i++) {
      const from = BigInt(random(32));
      const to = from + BigInt(random(Number(head - from) + 1));
      const topics = Array.from({ length: random(3) }, () =>
        random(2) === 0 ? null : pick([0, 1, 2, 3, 5].map(topic)),
      );
      const query = { addresses: random(3) === 0 ? [] : (pick(EMITTERS) as Address[]), topics };
      const found = await reader.getLogs({
        ...query,
        range: { from: byNumber(from), to: byNumber(to) },
      });
      expect(summary(found), `query ${i}: ${from}..${to}`).toEqual(
        summary(await everyBlock(reopened, query, from, to)),
      );
      if (found.length > 0 && query.addresses.length + topics.length > 0) matched++;
    }
    expect(matched).toBeGreaterThan(5);
    const used = await Promise.all(walks.mock.results.map((r) => r.value));
    expect(used.filter((blocks) => blocks !== undefined).length).toBeGreaterThan(5);
    expect(used.filter((blocks) => blocks === undefined).length).toBeGreaterThan(5);
  });
});
