import { JsonRpcProvider, Wallet } from "ethers";
import { createPublicClient, defineChain, http } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, type RunningNode, startNode } from "../helpers/node.js";

// The `safe` and `finalized` block tags: the block safeDepth and finalizedDepth below the head
// (devnet 0 and 10, regtest 0 and 0), never below genesis; through raw JSON, ethers and viem.

const KEY0 = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80";
const wallet = new Wallet(KEY0);
const TO = "0x000000000000000000000000000000000000f1a1";
const FINALIZED_DEPTH = 10;
const hex = (n: number) => `0x${n.toString(16)}`;
/** Block k pays TO k wei: after block k TO holds 1 + 2 + … + k. */
const paidBy = (k: number) => (k * (k + 1)) / 2;

type Block = { number: string; hash: string; timestamp: string };

async function result(node: RunningNode, method: string, params: unknown[] = []) {
  const res = await call(node.url, method, params);
  expect(res.error, `${method}: ${JSON.stringify(res.error)}`).toBeUndefined();
  return res.result;
}

/** Sends the transfer of block `k` (automine: one block per transaction). */
async function mineTransfer(node: RunningNode, chainId: number, k: number) {
  const hash = await result(node, "eth_sendRawTransaction", [
    await wallet.signTransaction({
      to: TO,
      value: BigInt(k),
      gasLimit: 21_000n,
      gasPrice: 0n,
      nonce: k - 1,
      chainId,
      type: 0,
    }),
  ]);
  const receipt = (await result(node, "eth_getTransactionReceipt", [hash])) as {
    blockNumber: string;
  };
  expect(receipt.blockNumber).toBe(hex(k));
}

const block = async (node: RunningNode, tag: string) =>
  (await result(node, "eth_getBlockByNumber", [tag, false])) as Block;

describe("on devnet", () => {
  let node: RunningNode;
  let mined = 0;
  const mineTo = async (k: number) => {
    while (mined < k) await mineTransfer(node, 32, ++mined);
  };
  beforeAll(async () => {
    node = await startNode({ network: "--devnet" });
    expect(await result(node, "eth_chainId")).toBe("0x20");
  });
  afterAll(async () => {
    await node?.stop();
  });

  it("names genesis as finalized and the head as safe before 10 blocks", async () => {
    expect((await block(node, "finalized")).number).toBe("0x0");
    expect((await block(node, "safe")).number).toBe("0x0");
    await mineTo(4);
    const genesis = await block(node, "earliest");
    expect(await block(node, "finalized")).toEqual(genesis);
    expect(await block(node, "safe")).toEqual(await block(node, "latest"));
    expect((await block(node, "safe")).number).toBe("0x4");
    expect(await result(node, "eth_getBalance", [TO, "finalized"])).toBe("0x0");
    expect(await result(node, "eth_getBalance", [TO, "safe"])).toBe(hex(paidBy(4)));
  });

  it("stays at genesis with the head at 10, and moves to 1 with the head at 11", async () => {
    await mineTo(10);
    expect((await block(node, "finalized")).number).toBe("0x0");
    await mineTo(11);
    expect(await block(node, "finalized")).toEqual(await block(node, "0x1"));
    expect(await result(node, "eth_getBalance", [TO, "finalized"])).toBe(hex(paidBy(1)));
  });

  it("names the block 10 below the head as finalized, and the head as safe, at 15", async () => {
    await mineTo(15);
    expect(await result(node, "eth_blockNumber")).toBe("0xf");
    const finalized = await block(node, "finalized");
    expect(finalized.number).toBe(hex(15 - FINALIZED_DEPTH));
    expect(finalized).toEqual(await block(node, hex(5)));
    expect(await block(node, "safe")).toEqual(await block(node, "latest"));
    expect(await result(node, "eth_getBalance", [TO, "finalized"])).toBe(hex(paidBy(5)));
    expect(await result(node, "eth_getBalance", [TO, "safe"])).toBe(hex(paidBy(15)));
    expect(await result(node, "eth_getBalance", [TO, "latest"])).toBe(hex(paidBy(15)));
    expect(await result(node, "eth_getTransactionCount", [wallet.address, "finalized"])).toBe(
      "0x5",
    );
  });

  it("answers the same blocks through ethers", async () => {
    const provider = new JsonRpcProvider(node.url, 32, { staticNetwork: true, cacheTimeout: -1 });
    try {
      const finalized = await provider.getBlock("finalized");
      expect(finalized?.number).toBe(15 - FINALIZED_DEPTH);
      expect(finalized?.hash).toBe((await block(node, hex(5))).hash);
      const safe = await provider.getBlock("safe");
      expect(safe?.number).toBe(15);
      expect(safe?.hash).toBe((await block(node, "latest")).hash);
      expect(await provider.getBalance(TO, "finalized")).toBe(BigInt(paidBy(5)));
    } finally {
      provider.destroy();
    }
  });

  it("answers the same blocks through viem", async () => {
    const chain = defineChain({
      id: 32,
      name: "Nodex devnet",
      nativeCurrency: { name: "Bitcoin", symbol: "RBTC", decimals: 18 },
      rpcUrls: { default: { http: [node.url] } },
    });
    const client = createPublicClient({ chain, transport: http(node.url) });
    const finalized = await client.getBlock({ blockTag: "finalized" });
    expect(finalized.number).toBe(5n);
    expect(finalized.hash).toBe((await block(node, hex(5))).hash);
    const safe = await client.getBlock({ blockTag: "safe" });
    expect(safe.number).toBe(15n);
    expect(await client.getBalance({ address: TO, blockTag: "finalized" })).toBe(BigInt(paidBy(5)));
  });
});

describe("on regtest", () => {
  it("names the head as both safe and finalized", async () => {
    const node = await startNode();
    try {
      expect((await block(node, "finalized")).number).toBe("0x0");
      await mineTransfer(node, 33, 1);
      await mineTransfer(node, 33, 2);
      const head = await block(node, "latest");
      expect(head.number).toBe("0x2");
      expect(await block(node, "finalized")).toEqual(head);
      expect(await block(node, "safe")).toEqual(head);
      expect(await result(node, "eth_getBalance", [TO, "finalized"])).toBe(hex(paidBy(2)));
    } finally {
      await node.stop();
    }
  });
});
