import { createPublicClient, createWalletClient, defineChain, http, parseEther } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Web3 } from "web3";
import { type RunningNode, startNode } from "../helpers/node.js";

// Transfers and reads on the chain through viem and web3.js, unmodified.
const KEY2 = "0x5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a";
const KEY3 = "0x7c852118294e51e653712a81e05800f419141751be58f605c371e15141b007a6";

let node: RunningNode;
beforeAll(async () => {
  node = await startNode();
});
afterAll(async () => {
  await node?.stop();
});

describe("viem", () => {
  it("sends a transfer and reads it back", async () => {
    const chain = defineChain({
      id: 33,
      name: "Nodex regtest",
      nativeCurrency: { name: "Bitcoin", symbol: "RBTC", decimals: 18 },
      rpcUrls: { default: { http: [node.url] } },
    });
    const account = privateKeyToAccount(KEY2);
    const wallet = createWalletClient({ account, chain, transport: http(node.url) });
    const client = createPublicClient({ chain, transport: http(node.url) });
    const to = "0x000000000000000000000000000000000000cafe";
    const hash = await wallet.sendTransaction({ to, value: parseEther("2") });
    const receipt = await client.waitForTransactionReceipt({ hash, pollingInterval: 50 });
    expect(receipt.status).toBe("success");
    expect(receipt.from).toBe(account.address.toLowerCase());
    expect(await client.getBalance({ address: to })).toBe(parseEther("2"));
    const block = await client.getBlock({
      blockNumber: receipt.blockNumber,
      includeTransactions: true,
    });
    expect(block.transactions[0]?.hash).toBe(hash);
    expect(await client.getTransactionCount({ address: account.address })).toBe(1);
  });
});

describe("web3.js", () => {
  it("sends a signed transfer and reads the receipt", async () => {
    const web3 = new Web3(node.url);
    const account = web3.eth.accounts.privateKeyToAccount(KEY3);
    const to = "0x000000000000000000000000000000000000d00d";
    const signed = await account.signTransaction({
      to,
      value: 12345n,
      gas: 21_000n,
      gasPrice: await web3.eth.getGasPrice(),
      nonce: await web3.eth.getTransactionCount(account.address),
      chainId: 33n,
      type: 0n,
    });
    const receipt = await web3.eth.sendSignedTransaction(signed.rawTransaction);
    expect(receipt.status).toBe(1n);
    expect(await web3.eth.getBalance(to)).toBe(12345n);
    const tx = await web3.eth.getTransaction(receipt.transactionHash);
    expect(tx.from).toBe(account.address.toLowerCase());
  });
});
