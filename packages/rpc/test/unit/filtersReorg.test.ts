import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Chain, ChainReader } from "@nodex/chain";
import { Executor } from "@nodex/evm";
import { Database } from "@nodex/state";
import {
  type Address,
  type Block,
  bytesToHex,
  contractAddress,
  deriveDevAccounts,
  headerHash,
  hexToBytes,
  keccak256,
  NETWORKS,
  nullLogger,
  signTransaction,
} from "@nodex/types";
import { afterEach, describe, expect, it } from "vitest";
import { FilterManager, type LogChange } from "../../src/filters.js";
import { type NotificationSink, SubscriptionManager } from "../../src/subscriptions.js";

// Removed logs across a reorganization: two competing branches built on two chains, then
// imported into a third whose filters and subscriptions follow the head event.
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

const dirs: string[] = [];
const dbs: Database[] = [];
afterEach(async () => {
  for (const db of dbs.splice(0)) await db.close().catch(() => {});
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

async function newChain(): Promise<Chain> {
  const dir = mkdtempSync(join(tmpdir(), "nodex-filters-reorg-"));
  dirs.push(dir);
  const db = await Database.open(join(dir, "db"));
  dbs.push(db);
  return Chain.open(network, { db, executor, logger: nullLogger });
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

describe("log filters across a reorganization", () => {
  it("give the logs of the blocks that left with removed: true, then the new branch's", async () => {
    const light = await branch(1, 1_000n);
    const heavy = await branch(3, 2_000n);
    const chain = await newChain();
    const reader = new ChainReader(chain, executor, { coinbase: () => MINER });
    const filters = new FilterManager(reader, {
      onHeadChange: (listener) => chain.onHeadChange(listener),
      onNewTransaction: () => () => {},
    });
    const id = filters.newLogFilter({
      range: { from: { kind: "tag", tag: "earliest" }, to: { kind: "tag", tag: "latest" } },
      addresses: [CONTRACT],
      topics: [[PING]],
    });
    for (const block of light) await chain.importBlock(block);
    const first = await filters.changes(id);
    const hashOf = (block: Block) => bytesToHex(headerHash(block.header));
    const seen = (changes: readonly LogChange[]) =>
      changes.map((c) => ({ block: bytesToHex(c.found.blockHash), removed: c.removed }));
    expect(first.kind === "logs" && seen(first.changes)).toEqual([
      { block: hashOf(light[1]!), removed: false },
    ]);
    for (const block of heavy) await chain.importBlock(block);
    expect(bytesToHex(chain.head.hash)).toBe(hashOf(heavy.at(-1)!));
    const second = await filters.changes(id);
    expect(second.kind === "logs" && seen(second.changes)).toEqual([
      { block: hashOf(light[1]!), removed: true },
      { block: hashOf(heavy[1]!), removed: false },
      { block: hashOf(heavy[2]!), removed: false },
      { block: hashOf(heavy[3]!), removed: false },
    ]);
    filters.close();
  });
});

describe("subscriptions across a reorganization", () => {
  it("send the new branch's heads lowest first, and removed logs before the new branch's", async () => {
    const light = await branch(1, 1_000n);
    const heavy = await branch(3, 2_000n);
    const chain = await newChain();
    const subscriptions = new SubscriptionManager(
      {
        onHeadChange: (listener) => chain.onHeadChange(listener),
        onNewTransaction: () => () => {},
      },
      nullLogger,
    );
    const sent: { subscription: string; result: Record<string, unknown> }[] = [];
    const sink: NotificationSink = {
      notify: (_id, text) => sent.push((JSON.parse(text) as { params: (typeof sent)[0] }).params),
    };
    const heads = subscriptions.subscribe(sink, { kind: "newHeads" });
    const logs = subscriptions.subscribe(sink, {
      kind: "logs",
      query: {
        range: { from: { kind: "tag", tag: "latest" }, to: { kind: "tag", tag: "latest" } },
        addresses: [CONTRACT],
        topics: [[PING]],
      },
    });
    const of = (id: string) => sent.filter((n) => n.subscription === id).map((n) => n.result);
    const until = async (id: string, count: number) => {
      for (let i = 0; i < 200 && of(id).length < count; i++)
        await new Promise((r) => setTimeout(r, 5));
      return of(id);
    };
    const hashOf = (block: Block) => bytesToHex(headerHash(block.header));
    for (const block of light) await chain.importBlock(block);
    expect((await until(logs, 1)).map((l) => [l.blockHash, l.removed])).toEqual([
      [hashOf(light[1]!), false],
    ]);
    for (const block of heavy) await chain.importBlock(block);
    expect(of(heads).map((h) => h.hash)).toEqual([...light, ...heavy].map(hashOf));
    expect((await until(logs, 5)).map((l) => [l.blockHash, l.removed])).toEqual([
      [hashOf(light[1]!), false],
      [hashOf(light[1]!), true],
      [hashOf(heavy[1]!), false],
      [hashOf(heavy[2]!), false],
      [hashOf(heavy[3]!), false],
    ]);
    expect(subscriptions.unsubscribe(sink, heads)).toBe(true);
    subscriptions.closeSink(sink);
    expect(subscriptions.size).toBe(0);
    subscriptions.close();
  });
});
