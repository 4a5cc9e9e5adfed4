import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Wallet } from "ethers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, type RunningNode, startNode } from "../helpers/node.js";

// The transaction pool over JSON-RPC: gaps filled out of order, replacement by price bump,
// refusals, the txpool_ methods in the reference node's formats, eth_pendingTransactions, and
// the operator's own transactions across a restart.

const KEY0 = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80";
const TO = "0x000000000000000000000000000000000000abcd";
const wallet = new Wallet(KEY0);
const sender = wallet.address.toLowerCase();

let node: RunningNode;
beforeAll(async () => {
  node = await startNode();
  expect((await call(node.url, "evm_stopMining", [])).error).toBeUndefined();
});
afterAll(async () => {
  await node?.stop();
});

const sign = (nonce: number, gasPrice = 0n, value = 1n) =>
  wallet.signTransaction({
    to: TO,
    value,
    gasLimit: 21_000n,
    gasPrice,
    nonce,
    chainId: 33,
    type: 0,
  });

async function result(method: string, params: unknown[] = []): Promise<unknown> {
  const res = await call(node.url, method, params);
  expect(res.error, `${method}: ${JSON.stringify(res.error)}`).toBeUndefined();
  return res.result;
}

describe("the pool", () => {
  it("queues a nonce gap and promotes in nonce order when it fills, whatever the arrival order", async () => {
    const h2 = await result("eth_sendRawTransaction", [await sign(2)]);
    expect(await result("txpool_status")).toEqual({ pending: 0, queued: 1 });
    const h1 = await result("eth_sendRawTransaction", [await sign(1)]);
    expect(await result("txpool_status")).toEqual({ pending: 0, queued: 2 });
    const h0 = await result("eth_sendRawTransaction", [await sign(0)]);
    expect(await result("txpool_status")).toEqual({ pending: 3, queued: 0 });
    expect(await result("eth_getTransactionCount", [sender, "pending"])).toBe("0x3");
    const pendingBlock = (await result("eth_getBlockByNumber", ["pending", false])) as {
      transactions: string[];
    };
    expect(pendingBlock.transactions).toEqual([h0, h1, h2]);
  });

  it("shows the pool in the reference node's formats", async () => {
    const content = (await result("txpool_content")) as {
      pending: Record<string, Record<string, Record<string, unknown>[]>>;
      queued: Record<string, unknown>;
    };
    expect(content.queued).toEqual({});
    const mine = content.pending[sender.slice(2)]!;
    expect(Object.keys(mine).sort()).toEqual(["0", "1", "2"]);
    expect(mine["0"]![0]).toMatchObject({
      blockHash: `0x${"00".repeat(32)}`,
      blockNumber: null,
      transactionIndex: null,
      from: sender,
      gas: "0x5208",
      gasPrice: "0x00",
      nonce: "0x0",
      to: TO,
      value: "0x01",
      input: "0x",
    });
    const inspect = (await result("txpool_inspect")) as {
      pending: Record<string, Record<string, string[]>>;
    };
    expect(inspect.pending[sender.slice(2)]!["1"]).toEqual([`${TO}: 1 wei + 21000 x 0 gas`]);
    const own = (await result("eth_pendingTransactions")) as Record<string, unknown>[];
    expect(own).toHaveLength(3);
    expect(own[0]).toMatchObject({
      from: sender,
      blockHash: `0x${"00".repeat(32)}`,
      blockNumber: null,
    });
  });

  it("replaces a waiting transaction only for a gas price 40% higher", async () => {
    const first = await result("eth_sendRawTransaction", [await sign(3, 100n)]);
    const cheap = await call(node.url, "eth_sendRawTransaction", [await sign(3, 139n, 2n)]);
    expect(cheap.error?.code).toBe(-32010);
    expect(cheap.error?.message).toMatch(/^gas price not enough to bump transaction/);
    const better = await result("eth_sendRawTransaction", [await sign(3, 140n, 2n)]);
    expect(await result("eth_getTransactionByHash", [first])).toBeNull();
    expect(
      ((await result("eth_getTransactionByHash", [better])) as { blockHash: null }).blockHash,
    ).toBeNull();
    expect(await result("txpool_status")).toEqual({ pending: 4, queued: 0 });
  });

  it("refuses what can never run, each with its reason", async () => {
    const poor = Wallet.createRandom();
    const cases: [string, string | RegExp][] = [
      [await sign(500), /^transaction nonce too high/],
      [
        await poor.signTransaction({
          to: TO,
          value: 1n,
          gasLimit: 21_000n,
          gasPrice: 1n,
          nonce: 0,
          chainId: 33,
          type: 0,
        }),
        /^insufficient funds/,
      ],
      [
        await wallet.signTransaction({
          to: TO,
          value: 1n,
          // Above regtest's block gas limit (30,000,000 after genesis).
          gasLimit: 40_000_000n,
          gasPrice: 0n,
          nonce: 4,
          chainId: 33,
          type: 0,
        }),
        /gas limit/,
      ],
    ];
    for (const [raw, reason] of cases) {
      const res = await call(node.url, "eth_sendRawTransaction", [raw]);
      expect(res.error?.code).toBe(-32010);
      expect(res.error?.message).toMatch(reason);
    }
  });

  it("a block takes the pool's transactions in nonce order and the pool empties", async () => {
    const before = Number(await result("eth_blockNumber"));
    await result("evm_mine");
    expect(Number(await result("eth_blockNumber"))).toBe(before + 1);
    const block = (await result("eth_getBlockByNumber", ["latest", true])) as {
      transactions: { nonce: string; gasPrice: string }[];
    };
    expect(block.transactions.map((t) => t.nonce)).toEqual(["0x0", "0x1", "0x2", "0x3"]);
    expect(block.transactions[3]!.gasPrice).toBe("0x8c");
    expect(await result("txpool_status")).toEqual({ pending: 0, queued: 0 });
    expect(await result("eth_pendingTransactions")).toEqual([]);
    // Mined nonces are used up.
    const used = await call(node.url, "eth_sendRawTransaction", [await sign(0, 1n)]);
    expect(used.error?.code).toBe(-32010);
    expect(used.error?.message).toMatch(/^transaction nonce too low/);
  });
});

describe("the operator's transactions across a restart", () => {
  it("are still waiting after the node restarts", async () => {
    const datadir = mkdtempSync(join(tmpdir(), "nodex-journal-"));
    try {
      let second = await startNode({ datadir, args: ["--mine-interval", "3600"] });
      const hash = (
        await call(second.url, "eth_sendTransaction", [{ from: sender, to: TO, value: "0x7" }])
      ).result as string;
      expect(hash).toMatch(/^0x[0-9a-f]{64}$/);
      await second.stop();
      second = await startNode({ datadir, args: ["--mine-interval", "3600"] });
      try {
        expect((await call(second.url, "txpool_status", [])).result).toEqual({
          pending: 1,
          queued: 0,
        });
        const tx = (await call(second.url, "eth_getTransactionByHash", [hash])).result as {
          blockNumber: null;
          value: string;
        };
        expect(tx).toMatchObject({ blockNumber: null, value: "0x7" });
      } finally {
        await second.stop();
      }
      // Started with automine, the node mines them at once.
      second = await startNode({ datadir });
      try {
        const receipt = (await call(second.url, "eth_getTransactionReceipt", [hash])).result as {
          status: string;
        };
        expect(receipt.status).toBe("0x1");
      } finally {
        await second.stop();
      }
    } finally {
      rmSync(datadir, { recursive: true, force: true });
    }
  });
});
