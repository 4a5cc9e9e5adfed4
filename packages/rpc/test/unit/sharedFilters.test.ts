import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Chain, ChainReader, type LogQuery } from "@nodex/chain";
import { Executor } from "@nodex/evm";
import { Database } from "@nodex/state";
import {
  type Address,
  type Block,
  bytesToHex,
  contractAddress,
  deriveDevAccounts,
  type Hash32,
  headerHash,
  hexToBytes,
  keccak256,
  NETWORKS,
  nullLogger,
  type SignedTransaction,
  signTransaction,
} from "@nodex/types";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { type RunningRedis, startRedis } from "../../../../apps/node/test/e2e/helpers/services.js";
import type { FilterChanges, LogChange } from "../../src/filters.js";
import { keepLogs, MAX_TRAIL_LOGS, SharedFilterManager } from "../../src/shared/filters.js";
import { RedisStore } from "../../src/shared/redis.js";

// Filters shared through a real Redis by "replicas": managers over chains of their own (each
// its own database), as replicas that follow each other over the network have. One replica's
// chain takes a light branch, another's only the heavier one: a filter polled through the
// second gives back as removed the logs the first delivered, from what Redis remembers.
const network = NETWORKS.regtest;
const executor = new Executor(network);
const MINER = hexToBytes("0x00000000000000000000000000000000000000aa") as Address;
const [alice] = deriveDevAccounts();
const PING = keccak256(new TextEncoder().encode("Ping()"));
/** Runtime: mstore(0, 7); log1(0, 32, Ping()); stop. Init code: copy it and return it. */
const RUNTIME = `60076000527f${bytesToHex(PING).slice(2)}60206000a100`;
const INIT = hexToBytes(
  `0x61${(RUNTIME.length / 2).toString(16).padStart(4, "0")}80600c6000396000f3${RUNTIME}`,
);
const CONTRACT = contractAddress(alice!.address, 0n);
const QUERY: LogQuery = {
  range: { from: { kind: "tag", tag: "earliest" }, to: { kind: "tag", tag: "latest" } },
  addresses: [CONTRACT],
  topics: [[PING as Hash32]],
};

let redis: RunningRedis;
const dirs: string[] = [];
const dbs: Database[] = [];
const closers: (() => unknown)[] = [];
beforeAll(async () => {
  redis = await startRedis();
}, 30_000);
afterAll(async () => {
  await redis?.stop();
});
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
  for (const db of dbs.splice(0)) await db.close().catch(() => {});
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

async function newChain(): Promise<Chain> {
  const dir = mkdtempSync(join(tmpdir(), "nodex-shared-filters-"));
  dirs.push(dir);
  const db = await Database.open(join(dir, "db"));
  dbs.push(db);
  return Chain.open(network, { db, executor, logger: nullLogger });
}

let networkSeq = 0;

/** A store on the test's Redis under a network name of this test's own (a clean prefix). */
async function store(name: string, opts: { url?: string; commandTimeoutMs?: number } = {}) {
  const s = new RedisStore(
    {
      url: opts.url ?? redis.url,
      network: name,
      ...(opts.commandTimeoutMs === undefined ? {} : { commandTimeoutMs: opts.commandTimeoutMs }),
    },
    nullLogger,
  );
  await s.connect();
  closers.push(() => s.close());
  return s;
}

/** A replica: its own chain, and filters on the shared store. */
async function replica(
  net: string,
  opts: { timeoutMs?: number; maxFilters?: number; chain?: Chain } = {},
) {
  const chain = opts.chain ?? (await newChain());
  const reader = new ChainReader(chain, executor, { coinbase: () => MINER });
  const txs = new Set<(tx: SignedTransaction) => void>();
  const filters = new SharedFilterManager(
    reader,
    {
      onHeadChange: (l) => chain.onHeadChange(l),
      onNewTransaction: (l) => {
        txs.add(l);
        return () => txs.delete(l);
      },
    },
    await store(net),
    nullLogger,
    { timeoutMs: opts.timeoutMs ?? 60_000, maxFilters: opts.maxFilters ?? 100 },
  );
  closers.push(() => filters.close());
  const poolTakes = (hash: number) => {
    for (const l of txs) l({ hash: new Uint8Array(32).fill(hash) } as SignedTransaction);
  };
  return { chain, filters, poolTakes };
}

const tx = (nonce: bigint, to: Address | null, data = new Uint8Array()) =>
  signTransaction(
    { nonce, gasPrice: 1n, gasLimit: 200_000n, to, value: 0n, data },
    alice!.privateKey,
    33,
  );

/** A branch: the contract deployed, then `pings` blocks each calling it once (one log each). */
async function branch(pings: number, time: bigint): Promise<Block[]> {
  const chain = await newChain();
  const blocks = [
    (await chain.mine([tx(0n, null, INIT)], { coinbase: MINER, timestamp: time })).block,
  ];
  for (let i = 1; i <= pings; i++) {
    const mined = await chain.mine([tx(BigInt(i), CONTRACT)], {
      coinbase: MINER,
      timestamp: time + BigInt(i),
    });
    blocks.push(mined.block);
  }
  return blocks;
}

const hashOf = (block: Block) => bytesToHex(headerHash(block.header));
const logs = (taken: FilterChanges) =>
  (taken.changes as readonly LogChange[]).map((c) => ({
    block: bytesToHex(c.found.blockHash),
    removed: c.removed,
  }));
const hashes = (taken: FilterChanges) => (taken.changes as Uint8Array[]).map(bytesToHex);

describe("filters shared through Redis", () => {
  it("a poll through a replica that never saw the delivered branch gives its logs back as removed", async () => {
    const net = `reorg${++networkSeq}`;
    const light = await branch(1, 1_000n);
    const heavy = await branch(3, 2_000n);
    const a = await replica(net);
    const b = await replica(net);
    const behind = await replica(net);
    const logFilter = await a.filters.newLogFilter(QUERY);
    const blockFilter = await a.filters.newBlockFilter();

    for (const block of light) await a.chain.importBlock(block);
    expect(logs(await a.filters.changes(logFilter))).toEqual([
      { block: hashOf(light[1]!), removed: false },
    ]);
    expect(hashes(await a.filters.changes(blockFilter))).toEqual(light.map(hashOf));
    // A replica still at genesis knows nothing newer: nothing, and nothing removed.
    expect(logs(await behind.filters.changes(logFilter))).toEqual([]);
    expect(hashes(await behind.filters.changes(blockFilter))).toEqual([]);

    for (const block of heavy) await b.chain.importBlock(block);
    expect(logs(await b.filters.changes(logFilter))).toEqual([
      { block: hashOf(light[1]!), removed: true },
      { block: hashOf(heavy[1]!), removed: false },
      { block: hashOf(heavy[2]!), removed: false },
      { block: hashOf(heavy[3]!), removed: false },
    ]);
    // A block filter gives the new branch's blocks (no removal in its answer, as on one node).
    expect(hashes(await b.filters.changes(blockFilter))).toEqual(heavy.map(hashOf));

    // A, still on the light branch, is behind what was delivered: nothing again.
    expect(logs(await a.filters.changes(logFilter))).toEqual([]);
    // Once A reorganizes too, nothing is delivered twice.
    for (const block of heavy) await a.chain.importBlock(block);
    expect(logs(await a.filters.changes(logFilter))).toEqual([]);
    expect(hashes(await a.filters.changes(blockFilter))).toEqual([]);
    // eth_getFilterLogs through any replica: the filter's logs on that replica's chain.
    expect((await behind.filters.logs(logFilter)).length).toBe(0);
    expect((await b.filters.logs(logFilter)).map((l) => bytesToHex(l.blockHash))).toEqual(
      heavy.slice(1).map(hashOf),
    );
  }, 60_000);

  it("a replica whose own chain reorganized gives the removed logs from its own walk back", async () => {
    const net = `ownreorg${++networkSeq}`;
    const light = await branch(2, 1_000n);
    const heavy = await branch(3, 2_000n);
    const a = await replica(net);
    const id = await a.filters.newLogFilter(QUERY);
    for (const block of light) await a.chain.importBlock(block);
    expect(logs(await a.filters.changes(id))).toEqual([
      { block: hashOf(light[1]!), removed: false },
      { block: hashOf(light[2]!), removed: false },
    ]);
    for (const block of heavy) await a.chain.importBlock(block);
    expect(logs(await a.filters.changes(id))).toEqual([
      { block: hashOf(light[1]!), removed: true },
      { block: hashOf(light[2]!), removed: true },
      { block: hashOf(heavy[1]!), removed: false },
      { block: hashOf(heavy[2]!), removed: false },
      { block: hashOf(heavy[3]!), removed: false },
    ]);
  }, 60_000);

  it("two polls at once through two replicas deliver each change once", async () => {
    const net = `race${++networkSeq}`;
    const heavy = await branch(3, 2_000n);
    const a = await replica(net);
    const b = await replica(net);
    const logFilter = await b.filters.newLogFilter(QUERY);
    const blockFilter = await a.filters.newBlockFilter();
    for (const block of heavy) {
      await a.chain.importBlock(block);
      await b.chain.importBlock(block);
    }
    for (let round = 0; round < 3; round++) {
      const polls = await Promise.all([
        a.filters.changes(logFilter),
        b.filters.changes(logFilter),
        a.filters.changes(blockFilter),
        b.filters.changes(blockFilter),
      ]);
      const got = polls.slice(0, 2).flatMap(logs);
      const blocks = polls.slice(2).flatMap(hashes);
      if (round === 0) {
        expect(got.map((l) => l.block).sort()).toEqual(heavy.slice(1).map(hashOf).sort());
        expect(blocks.sort()).toEqual(heavy.map(hashOf).sort());
      } else {
        expect(got).toEqual([]);
        expect(blocks).toEqual([]);
      }
    }
  }, 60_000);

  it("uninstall, expiry and the limit on filters hold across replicas; ids are 128-bit", async () => {
    const net = `expiry${++networkSeq}`;
    // Long enough for the steps before the expiry to run well within it on a busy machine.
    const a = await replica(net, { timeoutMs: 4_000, maxFilters: 2 });
    const b = await replica(net, { timeoutMs: 4_000, maxFilters: 2 });
    const first = await a.filters.newBlockFilter();
    const second = await b.filters.newPendingTransactionFilter();
    expect(first.toString(16).length).toBeGreaterThan(24);
    await expect(a.filters.newBlockFilter()).rejects.toMatchObject({
      code: -32011,
      message: expect.stringMatching(/at most 2/),
    });
    expect(await b.filters.uninstall(first)).toBe(true);
    expect(await a.filters.uninstall(first)).toBe(false);
    await expect(a.filters.changes(first)).rejects.toMatchObject({
      code: -32000,
      message: "filter not found",
    });
    const third = await a.filters.newLogFilter(QUERY);
    await expect(b.filters.newBlockFilter()).rejects.toMatchObject({ code: -32011 });
    // Not polled, both expire (polling would keep them): their room is free again, and
    // neither replica knows them any more.
    let fourth: bigint | undefined;
    const deadline = Date.now() + 30_000;
    while (fourth === undefined && Date.now() < deadline) {
      fourth = await b.filters.newBlockFilter().catch(() => undefined);
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(fourth).toBeTypeOf("bigint");
    await expect(a.filters.changes(second)).rejects.toMatchObject({ message: "filter not found" });
    await expect(b.filters.logQuery(third)).rejects.toMatchObject({ message: "filter not found" });
    expect(await a.filters.changes(fourth!)).toEqual({ kind: "blocks", changes: [] });
  }, 60_000);

  it("pending-transaction filters see each transaction the replicas' pools took in, once", async () => {
    const net = `pending${++networkSeq}`;
    const a = await replica(net);
    const b = await replica(net);
    a.poolTakes(1);
    await until(async () => (await redisLength(net)) === 1);
    const id = await b.filters.newPendingTransactionFilter();
    // Transaction 2 reaches both pools (gossip); 3 only B's.
    a.poolTakes(2);
    b.poolTakes(2);
    b.poolTakes(3);
    await until(async () => (await redisLength(net)) === 3);
    const taken = await a.filters.changes(id);
    expect(taken.kind).toBe("transactions");
    expect(hashes(taken)).toEqual([2, 3].map((n) => bytesToHex(new Uint8Array(32).fill(n))));
    expect(hashes(await b.filters.changes(id))).toEqual([]);
  }, 30_000);

  it("keeps mainnet's and testnet's keys apart on one Redis", async () => {
    const mainnet = await store("mainnet-sep");
    const testnet = await store("testnet-sep");
    await mainnet.set("k", "main");
    expect(await testnet.get("k")).toBeNull();
    expect(await mainnet.get("k")).toBe("main");
  });
});

describe("a filter's trail", () => {
  it("keeps the logs of its newest blocks up to MAX_TRAIL_LOGS, the blocks' numbers and hashes all", () => {
    const log = { a: "0x", t: [], d: "0x", tx: "0x", ti: 0, li: 0 };
    const per = MAX_TRAIL_LOGS / 4;
    const trail = Array.from({ length: 6 }, (_, i) => ({
      n: String(i),
      h: `0x0${i}`,
      logs: Array.from({ length: per }, () => log),
    }));
    const kept = keepLogs(trail);
    expect(kept.map((e) => e.n)).toEqual(["0", "1", "2", "3", "4", "5"]);
    expect(kept.map((e) => e.logs?.length)).toEqual([undefined, undefined, per, per, per, per]);
  });
});

describe("the shared store", () => {
  it("gets and sets with expiry, counts with a window, takes tokens, publishes", async () => {
    const s = await store(`store${++networkSeq}`);
    await s.set("a", "1", 60_000);
    expect(await s.get("a")).toBe("1");
    expect(await s.setIfAbsent("a", "2", 60_000)).toBe(false);
    expect(await s.setIfAbsent("b", "2", 60_000)).toBe(true);
    expect(await s.del("a", "b", "c")).toBe(2);
    expect(await s.incr("n", 2, 60_000)).toBe(2);
    expect(await s.incr("n", 3, 60_000)).toBe(5);
    // A bucket of 3 that refills one token every 1000 s: 3 taken, then a wait.
    const bucket = { capacity: 3, refillPerSecond: 0.001 };
    const taken = [];
    for (let i = 0; i < 4; i++) taken.push(await s.takeTokens("bucket", bucket));
    expect(taken.map((t) => t.allowed)).toEqual([true, true, true, false]);
    expect(taken[2]!.remaining).toBe(0);
    expect(taken[3]!.retryAfterMs).toBeGreaterThan(900_000);
    const got: string[] = [];
    const stop = await s.subscribe("invalidate", (m) => got.push(m));
    const other = await store(s.prefix.split(":")[1]!);
    expect(await other.publish("invalidate", "key-1")).toBe(1);
    await until(async () => got.length === 1);
    expect(got).toEqual(["key-1"]);
    await stop();
    // A script's own error is a fault of the node (-32603 once answered), not an outage.
    const failed = await s
      .run({ name: "broken", lua: "return redis.call('NOSUCHCOMMAND')" }, [], [])
      .catch((err: unknown) => err);
    expect(failed).toBeInstanceOf(Error);
    expect(failed).not.toHaveProperty("code", -32002);
  }, 30_000);

  it("answers -32002 at once when Redis is not reachable, and when it does not answer", async () => {
    const nowhere = await store("down", { url: "redis://127.0.0.1:1" });
    await expect(nowhere.get("x")).rejects.toMatchObject({
      code: -32002,
      message: expect.stringMatching(/Redis at redis:\/\/127\.0\.0\.1:1 is not reachable/),
    });
    const s = await store(`pause${++networkSeq}`, { commandTimeoutMs: 300 });
    await s.set("x", "1");
    redis.pause();
    try {
      await expect(s.get("x")).rejects.toMatchObject({
        code: -32002,
        message: expect.stringMatching(/not answering/),
      });
    } finally {
      redis.resume();
    }
    await until(async () => (await s.get("x").catch(() => null)) === "1");
  }, 30_000);
});

async function redisLength(net: string): Promise<number> {
  const s = await store(net);
  return Number(
    await s.run({ name: "len", lua: "return redis.call('XLEN', KEYS[1])" }, ["pending"], []),
  );
}

async function until(probe: () => Promise<boolean>, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`not so after ${ms} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
