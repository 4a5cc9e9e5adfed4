import { JsonRpcProvider } from "ethers";
import { createPublicClient, http } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Web3 } from "web3";
import { type RunningNode, startNode } from "../helpers/node.js";

// The node through the clients people use, unmodified.
let node: RunningNode;
beforeAll(async () => {
  node = await startNode();
});
afterAll(async () => {
  await node?.stop();
});

describe("ethers", () => {
  it("detects the network and reads the chain status", async () => {
    const provider = new JsonRpcProvider(node.url, undefined, { staticNetwork: false });
    try {
      const network = await provider.getNetwork();
      expect(network.chainId).toBe(33n);
      expect(await provider.getBlockNumber()).toBe(0);
      const accounts = await provider.listAccounts();
      expect(accounts[0]?.address).toBe("0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266");
      expect(await provider.send("web3_clientVersion", [])).toMatch(/^Nodex\/v0\.1\.0\//);
    } finally {
      provider.destroy();
    }
  });

  it("batches requests", async () => {
    const provider = new JsonRpcProvider(node.url, 33, { staticNetwork: true, batchMaxCount: 100 });
    try {
      const [chainId, block, version] = await Promise.all([
        provider.send("eth_chainId", []),
        provider.send("eth_blockNumber", []),
        provider.send("net_version", []),
      ]);
      expect([chainId, block, version]).toEqual(["0x21", "0x0", "33"]);
    } finally {
      provider.destroy();
    }
  });

  it("surfaces JSON-RPC errors with their code", async () => {
    const provider = new JsonRpcProvider(node.url, 33, { staticNetwork: true });
    try {
      await expect(provider.send("eth_compileSolidity", [])).rejects.toMatchObject({
        error: { code: -32601 },
      });
    } finally {
      provider.destroy();
    }
  });
});

describe("viem", () => {
  it("reads chain id, block number and gas price", async () => {
    const client = createPublicClient({ transport: http(node.url) });
    expect(await client.getChainId()).toBe(33);
    expect(await client.getBlockNumber()).toBe(0n);
    expect(await client.getGasPrice()).toBe(0n);
  });

  it("works with batching on", async () => {
    const client = createPublicClient({ transport: http(node.url, { batch: true }) });
    const [chainId, blockNumber] = await Promise.all([
      client.getChainId(),
      client.getBlockNumber(),
    ]);
    expect(chainId).toBe(33);
    expect(blockNumber).toBe(0n);
  });
});

describe("web3.js", () => {
  it("reads chain id, network id, accounts and node info", async () => {
    const web3 = new Web3(node.url);
    expect(await web3.eth.getChainId()).toBe(33n);
    expect(await web3.eth.net.getId()).toBe(33n);
    expect(await web3.eth.getBlockNumber()).toBe(0n);
    const accounts = await web3.eth.getAccounts();
    expect(accounts).toHaveLength(20);
    expect(await web3.eth.getNodeInfo()).toMatch(/^Nodex\//);
    expect(await web3.eth.isMining()).toBe(true);
    expect(await web3.eth.isSyncing()).toBe(false);
  });
});
