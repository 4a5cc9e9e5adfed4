import { Wallet } from "ethers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, type RunningNode, startNode } from "../helpers/node.js";

// `blockTimestamp` (execution-apis) on every transaction object: the including block's
// `timestamp` once mined, `null` while pending.

const KEY3 = "0x7c852118294e51e653712a81e05800f419141751be58f605c371e15141b007a6";
const TO = "0x000000000000000000000000000000000000abcd";
const wallet = new Wallet(KEY3);
/** Two block times far apart from each other and from now. */
const T1 = 2_000_000_000;
const T2 = 2_000_100_000;
const hexTime = (t: number) => `0x${t.toString(16)}`;

type Tx = Record<string, unknown> & { hash: string };
type Block = { hash: string; number: string; timestamp: string; transactions: Tx[] };

let node: RunningNode;
beforeAll(async () => {
  node = await startNode();
  expect((await call(node.url, "evm_stopMining", [])).error).toBeUndefined();
});
afterAll(async () => {
  await node?.stop();
});

async function result(method: string, params: unknown[] = []): Promise<unknown> {
  const res = await call(node.url, method, params);
  expect(res.error, `${method}: ${JSON.stringify(res.error)}`).toBeUndefined();
  return res.result;
}

const send = async (nonce: number) =>
  (await result("eth_sendRawTransaction", [
    await wallet.signTransaction({
      to: TO,
      value: 1n,
      gasLimit: 21_000n,
      gasPrice: 0n,
      nonce,
      chainId: 33,
      type: 0,
    }),
  ])) as string;

/** `tx` carries a `blockTimestamp` key whose value is `expected`. */
function expectTimestamp(tx: unknown, expected: string | null) {
  expect(tx).toHaveProperty("blockTimestamp");
  expect((tx as Tx).blockTimestamp).toBe(expected);
}

let first: string[];
let second: string;
let block1: Block;
let block2: Block;

describe("blockTimestamp", () => {
  it("is null on a pending transaction in every form", async () => {
    first = [await send(0), await send(1)];
    for (const hash of first) {
      const tx = await result("eth_getTransactionByHash", [hash]);
      expect(tx).toMatchObject({ hash, blockHash: null, blockNumber: null });
      expectTimestamp(tx, null);
    }
    const pending = (await result("eth_getBlockByNumber", ["pending", true])) as Block;
    expect(pending.transactions.map((t) => t.hash)).toEqual(first);
    for (const tx of pending.transactions) expectTimestamp(tx, null);
    const own = (await result("eth_pendingTransactions")) as Tx[];
    expect(own.map((t) => t.hash)).toEqual(first);
    for (const tx of own) expectTimestamp(tx, null);
  });

  it("is the block's timestamp by transaction hash once mined", async () => {
    expect(await result("evm_mine", [T1])).toBeNull();
    second = await send(2);
    expect(await result("evm_mine", [T2])).toBeNull();
    block1 = (await result("eth_getBlockByNumber", ["0x1", true])) as Block;
    block2 = (await result("eth_getBlockByNumber", ["0x2", true])) as Block;
    expect(block1.timestamp).toBe(hexTime(T1));
    expect(block2.timestamp).toBe(hexTime(T2));
    for (const hash of first) {
      const tx = await result("eth_getTransactionByHash", [hash]);
      expect(tx).toMatchObject({ hash, blockHash: block1.hash, blockNumber: "0x1" });
      expectTimestamp(tx, block1.timestamp);
    }
    expectTimestamp(await result("eth_getTransactionByHash", [second]), block2.timestamp);
  });

  it("is the block's timestamp by block hash and index, and by block number and index", async () => {
    for (const [block, hashes] of [
      [block1, first],
      [block2, [second]],
    ] as const) {
      for (const [i, hash] of hashes.entries()) {
        const index = `0x${i.toString(16)}`;
        const byHash = await result("eth_getTransactionByBlockHashAndIndex", [block.hash, index]);
        expect((byHash as Tx).hash).toBe(hash);
        expectTimestamp(byHash, block.timestamp);
        const byNumber = await result("eth_getTransactionByBlockNumberAndIndex", [
          block.number,
          index,
        ]);
        expect((byNumber as Tx).hash).toBe(hash);
        expectTimestamp(byNumber, block.timestamp);
      }
    }
    const latest = await result("eth_getTransactionByBlockNumberAndIndex", ["latest", "0x0"]);
    expectTimestamp(latest, hexTime(T2));
  });

  it("is the block's timestamp on the full transactions of a block by number and by hash", async () => {
    expect(block1.transactions.map((t) => t.hash)).toEqual(first);
    for (const tx of block1.transactions) expectTimestamp(tx, hexTime(T1));
    for (const tx of block2.transactions) expectTimestamp(tx, hexTime(T2));
    const byHash = (await result("eth_getBlockByHash", [block1.hash, true])) as Block;
    expect(byHash.transactions.map((t) => t.hash)).toEqual(first);
    for (const tx of byHash.transactions) expectTimestamp(tx, hexTime(T1));
    const latest = (await result("eth_getBlockByNumber", ["latest", true])) as Block;
    expect(latest.transactions.map((t) => t.hash)).toEqual([second]);
    expectTimestamp(latest.transactions[0], hexTime(T2));
  });

  it("is null again on what waits after blocks were mined", async () => {
    const hash = await send(3);
    expectTimestamp(await result("eth_getTransactionByHash", [hash]), null);
    const pending = (await result("eth_getBlockByNumber", ["pending", true])) as Block;
    expect(pending.transactions.map((t) => t.hash)).toEqual([hash]);
    expectTimestamp(pending.transactions[0], null);
    const own = (await result("eth_pendingTransactions")) as Tx[];
    expect(own.map((t) => t.hash)).toEqual([hash]);
    expectTimestamp(own[0], null);
  });
});
