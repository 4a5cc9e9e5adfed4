import { JsonRpcProvider, Wallet } from "ethers";
import { createPublicClient, createWalletClient, defineChain, http, parseEther } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Web3 } from "web3";
import { call, type RunningNode, startNode } from "../helpers/node.js";

// Typed transactions (RSKIP546) and the fee methods, through ethers, viem and web3.js with their
// defaults, and as raw JSON; and a network where they are not active.
const KEY7 = "0x55e1a8b8d1b1a4a5c2e9a5e8f3d0e6d0a7e9c6d5b6a3f2e1d0c9b8a7f6e5d4c3";
const DEV = [
  "0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a",
  "0x7c852118294e51e653712a81e05800f419141751be58f605c371e15141b007a6",
  "0x47e179ec197488593b187f80a00eb0da91f1b9d0b13f8733639f19c30a34926a",
];

let node: RunningNode;
let provider: JsonRpcProvider;
beforeAll(async () => {
  node = await startNode();
  provider = new JsonRpcProvider(node.url, 33, { staticNetwork: true, cacheTimeout: -1 });
});
afterAll(async () => {
  provider?.destroy();
  await node?.stop();
});

describe("the fee methods", () => {
  it("answer eth_maxPriorityFeePerGas as the gas price, and blocks show a zero base fee", async () => {
    const gasPrice = (await call(node.url, "eth_gasPrice", [])).result;
    expect((await call(node.url, "eth_maxPriorityFeePerGas", [])).result).toBe(gasPrice);
    const block = (await call(node.url, "eth_getBlockByNumber", ["latest", false])).result as {
      baseFeePerGas?: string;
    };
    expect(block.baseFeePerGas).toBe("0x0");
  });

  it("answer eth_feeHistory with zero base fees, gas ratios and the prices paid", async () => {
    const wallet = new Wallet(DEV[0]!, provider);
    for (const price of [3n, 7n]) {
      await (await wallet.sendTransaction({ to: wallet.address, gasPrice: price, type: 0 })).wait();
    }
    const head = await provider.getBlockNumber();
    const out = (await call(node.url, "eth_feeHistory", ["0x3", "latest", [0, 50, 100]]))
      .result as Record<string, unknown>;
    expect(out.oldestBlock).toBe(`0x${(head - 2).toString(16)}`);
    expect(out.baseFeePerGas).toEqual(["0x0", "0x0", "0x0", "0x0"]);
    expect((out.gasUsedRatio as number[]).slice(1)).toEqual([
      // Blocks after genesis have regtest's --block-gas-limit, 30,000,000 by default.
      21_000 / 30_000_000,
      21_000 / 30_000_000,
    ]);
    expect((out.reward as string[][]).slice(1)).toEqual([
      ["0x3", "0x3", "0x3"],
      ["0x7", "0x7", "0x7"],
    ]);
    // A decimal block count, as geth takes it; no percentiles, no rewards.
    const plain = (await call(node.url, "eth_feeHistory", [1, "latest"])).result as Record<
      string,
      unknown
    >;
    expect(plain.reward).toBeUndefined();
    expect(plain.gasUsedRatio).toHaveLength(1);
    for (const [params, message] of [
      [["0x1", "latest", [50, 10]], "invalid reward percentile: #0:50 > #1:10"],
      [["0x1", "latest", [101]], "invalid reward percentile 101: want 0 to 100"],
      [["0x1", "0xffff"], "block 0xffff not found"],
    ] as const) {
      const bad = await call(node.url, "eth_feeHistory", params as unknown as unknown[]);
      expect(bad.error?.code).toBe(-32602);
      expect(bad.error?.message).toContain(message);
    }
  });
});

describe("ethers v6", () => {
  it("sends type 2 and type 1 transactions (80 gas a byte of the access list)", async () => {
    const wallet = new Wallet(DEV[1]!, provider);
    const to = "0x000000000000000000000000000000000000bEEF";
    const sent = await wallet.sendTransaction({
      to,
      value: 5n,
      type: 2,
      maxFeePerGas: 9n,
      maxPriorityFeePerGas: 4n,
    });
    const receipt = await sent.wait();
    expect(receipt?.status).toBe(1);
    expect(receipt?.type).toBe(2);
    // An empty access list is one byte of RLP (0xc0): 80 gas, counted in the estimate.
    expect(receipt?.gasUsed).toBe(21_080n);
    expect(sent.gasLimit).toBe(21_080n);
    const fetched = (await call(node.url, "eth_getTransactionByHash", [sent.hash]))
      .result as Record<string, unknown>;
    expect(fetched).toMatchObject({
      type: "0x2",
      maxFeePerGas: "0x9",
      maxPriorityFeePerGas: "0x4",
      // RSKIP546: the gas price is the lower of the two fees.
      gasPrice: "0x4",
      accessList: [],
      chainId: "0x21",
    });
    expect(fetched.yParity).toMatch(/^0x[01]$/);
    const fetchedReceipt = (await call(node.url, "eth_getTransactionReceipt", [sent.hash]))
      .result as Record<string, unknown>;
    expect(fetchedReceipt).toMatchObject({ type: "0x2", effectiveGasPrice: "0x4" });

    const accessList = [{ address: to, storageKeys: [`0x${"00".repeat(31)}01`] }];
    const typed1 = await wallet.sendTransaction({ to, type: 1, accessList });
    const r1 = await typed1.wait();
    expect(r1?.type).toBe(1);
    // The list's RLP, [[address, [key]]]: the address 21 bytes, the keys 1 + 33, the entry
    // 1 + 55, the list 2 + 56 (a payload of 56 bytes takes a long-list header): 58 bytes.
    expect(r1?.gasUsed).toBe(21_000n + 80n * 58n);
  });

  it("sends with its defaults: legacy, since a zero base fee reads to it as none", async () => {
    const wallet = new Wallet(DEV[1]!, provider);
    const sent = await wallet.sendTransaction({ to: wallet.address });
    expect((await sent.wait())?.status).toBe(1);
    expect([0, 2]).toContain(sent.type);
  });
});

describe("viem with its defaults", () => {
  it("estimates fees and sends an EIP-1559 transaction", async () => {
    const chain = defineChain({
      id: 33,
      name: "Nodex regtest",
      nativeCurrency: { name: "Bitcoin", symbol: "RBTC", decimals: 18 },
      rpcUrls: { default: { http: [node.url] } },
    });
    const account = privateKeyToAccount(DEV[2] as `0x${string}`);
    const wallet = createWalletClient({ account, chain, transport: http(node.url) });
    const client = createPublicClient({ chain, transport: http(node.url) });
    const fees = await client.estimateFeesPerGas();
    expect(typeof fees.maxFeePerGas).toBe("bigint");
    const hash = await wallet.sendTransaction({
      to: "0x000000000000000000000000000000000000cafe",
      value: parseEther("1"),
    });
    const receipt = await client.waitForTransactionReceipt({ hash, pollingInterval: 50 });
    expect(receipt.status).toBe("success");
    expect(receipt.type).toBe("eip1559");
  });
});

describe("web3.js v4 with its defaults", () => {
  it("sends a type 2 transaction from a local account", async () => {
    const web3 = new Web3(node.url);
    const account = web3.eth.accounts.wallet.add(KEY7).get(0)!;
    // Fund the fresh account from a development account (legacy, raw).
    const funder = new Wallet(DEV[0]!, provider);
    await (
      await funder.sendTransaction({ to: account.address, value: 10n ** 18n, type: 0 })
    ).wait();
    const receipt = await web3.eth.sendTransaction({
      from: account.address,
      to: "0x000000000000000000000000000000000000d00d",
      value: 777n,
    });
    expect(receipt.status).toBe(1n);
    expect(receipt.type).toBe(2n);
  });
});

describe("eth_sendTransaction from the node's accounts", () => {
  it("signs type 2 with maxFeePerGas, type 1 with an access list, and refuses mixed fields", async () => {
    const [from] = (await call(node.url, "eth_accounts", [])).result as string[];
    const h2 = (
      await call(node.url, "eth_sendTransaction", [
        { from, to: from, maxFeePerGas: "0x9", maxPriorityFeePerGas: "0x2" },
      ])
    ).result as string;
    const t2 = (await call(node.url, "eth_getTransactionByHash", [h2])).result as Record<
      string,
      unknown
    >;
    expect([t2.type, t2.gasPrice, t2.maxFeePerGas]).toEqual(["0x2", "0x2", "0x9"]);
    const h1 = (await call(node.url, "eth_sendTransaction", [{ from, to: from, accessList: [] }]))
      .result as string;
    expect(
      ((await call(node.url, "eth_getTransactionByHash", [h1])).result as { type: string }).type,
    ).toBe("0x1");
    const bad = await call(node.url, "eth_sendTransaction", [
      { from, to: from, gasPrice: "0x1", maxFeePerGas: "0x2" },
    ]);
    expect(bad.error?.code).toBe(-32602);
    expect(bad.error?.message).toContain(
      "a type 2 transaction has maxFeePerGas and maxPriorityFeePerGas instead",
    );
  });
});

describe("a network where typed transactions are not active (testnet)", () => {
  it("refuses them with -32602 and shows no base fee, so tools send legacy ones", async () => {
    const testnet = await startNode({ network: "--testnet" });
    try {
      const block = (await call(testnet.url, "eth_getBlockByNumber", ["latest", false]))
        .result as Record<string, unknown>;
      expect(block.baseFeePerGas).toBeUndefined();
      const signed = await new Wallet(DEV[0]!).signTransaction({
        type: 2,
        chainId: 31,
        nonce: 0,
        to: "0x000000000000000000000000000000000000cafe",
        gasLimit: 21_000n,
        maxFeePerGas: 1n,
        maxPriorityFeePerGas: 1n,
      });
      const out = await call(testnet.url, "eth_sendRawTransaction", [signed]);
      expect(out.error).toEqual({
        code: -32602,
        message:
          "typed transactions (EIP-2718 type 2) are not active on this network: send a legacy transaction",
      });
      expect((await call(testnet.url, "eth_maxPriorityFeePerGas", [])).result).toMatch(/^0x/);
    } finally {
      await testnet.stop();
    }
  }, 60_000);
});
