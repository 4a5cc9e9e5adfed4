import { JsonRpcProvider, Wallet } from "ethers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, type RunningNode, startNode } from "../helpers/node.js";

// The evm_ methods as test frameworks drive them: snapshot before each test, revert after;
// time travel; mining on demand.

const KEY0 = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80";
const TO = "0x000000000000000000000000000000000000c0de";

let node: RunningNode;
let provider: JsonRpcProvider;
let wallet: Wallet;
beforeAll(async () => {
  node = await startNode();
  provider = new JsonRpcProvider(node.url, 33, { staticNetwork: true, cacheTimeout: -1 });
  wallet = new Wallet(KEY0, provider);
});
afterAll(async () => {
  provider?.destroy();
  await node?.stop();
});

async function result(method: string, params: unknown[] = []): Promise<unknown> {
  const res = await call(node.url, method, params);
  expect(res.error, `${method}: ${JSON.stringify(res.error)}`).toBeUndefined();
  return res.result;
}
const blockNumber = async () => Number(await result("eth_blockNumber"));
const balance = async () => BigInt((await result("eth_getBalance", [TO, "latest"])) as string);

describe("evm_snapshot and evm_revert", () => {
  it("restore chain and state, with single-use ids, as in a before/after-each test loop", async () => {
    const start = await blockNumber();
    for (let round = 0; round < 3; round++) {
      const id = (await result("evm_snapshot")) as string;
      expect(id).toMatch(/^0x[0-9a-f]+$/);
      await (await wallet.sendTransaction({ to: TO, value: 5n })).wait();
      await (await wallet.sendTransaction({ to: TO, value: 6n })).wait();
      expect(await balance()).toBe(11n);
      expect(await blockNumber()).toBe(start + 2);
      expect(await result("evm_revert", [id])).toBe(true);
      expect(await blockNumber()).toBe(start);
      expect(await balance()).toBe(0n);
      // Used: the same id cannot be reverted to again.
      expect(await result("evm_revert", [id])).toBe(false);
    }
    // The nonce came back too: the next transaction from the wallet goes through.
    await (await wallet.sendTransaction({ to: TO, value: 1n })).wait();
    expect(await balance()).toBe(1n);
  });

  it("reverting to an older snapshot discards the newer ones", async () => {
    const older = (await result("evm_snapshot")) as string;
    await (await wallet.sendTransaction({ to: TO, value: 2n })).wait();
    const newer = (await result("evm_snapshot")) as string;
    expect(BigInt(newer)).toBeGreaterThan(BigInt(older));
    expect(await result("evm_revert", [older])).toBe(true);
    expect(await result("evm_revert", [newer])).toBe(false);
    expect(await result("evm_revert", ["0x999"])).toBe(false);
    const bad = await call(node.url, "evm_revert", ["zz"]);
    expect(bad.error?.code).toBe(-32602);
  });
});

describe("time and mining", () => {
  it("evm_increaseTime moves the next block's timestamp forward", async () => {
    const before = (await provider.getBlock("latest"))!.timestamp;
    expect(await result("evm_increaseTime", [3600])).toMatch(/^0x[0-9a-f]+$/);
    expect(await result("evm_mine")).toBeNull();
    const after = (await provider.getBlock("latest"))!.timestamp;
    expect(after - before).toBeGreaterThanOrEqual(3600);
  });

  it("evm_mine takes a timestamp, and refuses one not after the head's", async () => {
    const head = (await provider.getBlock("latest"))!.timestamp;
    await result("evm_mine", [head + 1000]);
    expect((await provider.getBlock("latest"))!.timestamp).toBe(head + 1000);
    await result("evm_mine", [{ timestamp: head + 2000 }]);
    expect((await provider.getBlock("latest"))!.timestamp).toBe(head + 2000);
    const res = await call(node.url, "evm_mine", [head]);
    expect(res.error?.code).toBe(-32602);
    // Later blocks go on from the new time.
    await result("evm_mine");
    expect((await provider.getBlock("latest"))!.timestamp).toBeGreaterThan(head + 2000);
  });

  it("evm_stopMining keeps transactions waiting; evm_startMining mines them", async () => {
    const start = await blockNumber();
    expect(await result("evm_stopMining")).toBeNull();
    const nonce = await provider.getTransactionCount(wallet.address, "latest");
    const a = await wallet.sendTransaction({ to: TO, value: 3n, nonce });
    const b = await wallet.sendTransaction({ to: TO, value: 4n, nonce: nonce + 1 });
    expect(await blockNumber()).toBe(start);
    expect(await result("eth_getTransactionReceipt", [a.hash])).toBeNull();
    expect(await provider.getTransactionCount(wallet.address, "pending")).toBe(nonce + 2);
    // evm_mine mines what waits, while automatic mining stays off.
    await result("evm_mine");
    expect(await blockNumber()).toBe(start + 1);
    const block = (await result("eth_getBlockByNumber", ["latest", false])) as {
      transactions: string[];
    };
    expect(block.transactions).toEqual([a.hash, b.hash]);
    const c = await wallet.sendTransaction({ to: TO, value: 5n, nonce: nonce + 2 });
    expect(await result("evm_startMining")).toBeNull();
    expect(
      ((await result("eth_getTransactionReceipt", [c.hash])) as { status: string }).status,
    ).toBe("0x1");
    expect(await blockNumber()).toBe(start + 2);
  });

  it("evm_reset goes back to genesis", async () => {
    expect(await result("evm_reset")).toBeNull();
    expect(await blockNumber()).toBe(0);
    expect(await balance()).toBe(0n);
    expect(await provider.getTransactionCount(wallet.address)).toBe(0);
  });
});

describe("evm_ elsewhere", () => {
  it("is off on testnet unless enabled, and then cannot mine: merged miners make the blocks", async () => {
    const testnet = await startNode({ network: "--testnet" });
    try {
      expect((await call(testnet.url, "evm_snapshot", [])).error?.code).toBe(-32601);
    } finally {
      await testnet.stop();
    }
    const enabled = await startNode({
      network: "--testnet",
      args: ["--rpc-modules", "eth,net,web3,rpc,evm"],
    });
    try {
      expect((await call(enabled.url, "evm_snapshot", [])).result).toBe("0x1");
      expect((await call(enabled.url, "evm_increaseTime", [60])).result).toBe("0x3c");
      const mine = await call(enabled.url, "evm_mine", []);
      expect(mine.error).toEqual({
        code: -32000,
        message:
          "evm_mine works on regtest and devnet only: blocks of testnet are made by merged miners",
      });
      expect((await call(enabled.url, "evm_stopMining", [])).error?.code).toBe(-32000);
      expect((await call(enabled.url, "evm_revert", ["0x1"])).result).toBe(true);
    } finally {
      await enabled.stop();
    }
  });
});
