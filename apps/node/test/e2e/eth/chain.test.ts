import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { JsonRpcProvider, keccak256, toUtf8Bytes, Wallet } from "ethers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { deployCode, revertingRuntime } from "../helpers/bytecode.js";
import { call, type RunningNode, startNode } from "../helpers/node.js";

// The chain through ethers and raw JSON: transfers, contracts, calls, reverts, restarts.
const KEY0 = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80";
/** A key with no funds: calls and gas price 0 need none. */
const KEY1 = "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a7412f4603b6b78690d";
const RECIPIENT = "0x000000000000000000000000000000000000bEEF";

/** Runtime: mstore(0, 7); log1(0, 32, keccak("Ping()")); return 0x2a. */
const PING_TOPIC = keccak256(toUtf8Bytes("Ping()"));
const PING_RUNTIME = `0x60076000527f${PING_TOPIC.slice(2)}60206000a1602a60005260206000f3`;
/** Revert data Error("nope") and a runtime that reverts with it. */
const NOPE = `0x08c379a0${"20".padStart(64, "0")}${"4".padStart(64, "0")}${Buffer.from("nope").toString("hex").padEnd(64, "0")}`;

let node: RunningNode;
let provider: JsonRpcProvider;
beforeAll(async () => {
  node = await startNode();
  // cacheTimeout -1: ethers otherwise reuses a nonce it read in the last 250 ms, and blocks here come that fast.
  provider = new JsonRpcProvider(node.url, 33, { staticNetwork: true, cacheTimeout: -1 });
});
afterAll(async () => {
  provider?.destroy();
  await node?.stop();
});

describe("regtest chain with ethers", () => {
  it("prints the development accounts with their keys", async () => {
    // standard output arrives on its own pipe: wait for it
    for (let i = 0; i < 100 && !node.stdout().includes("Account #19"); i++) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    expect(node.stdout()).toContain(
      "Account #0: 0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266 (10000 units)",
    );
    expect(node.stdout()).toContain(`Private Key: ${KEY0}`);
  });

  it("funds the development accounts with 10,000 units", async () => {
    expect(await provider.getBalance("0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266")).toBe(
      10_000n * 10n ** 18n,
    );
    expect(await provider.getBalance("0xcd2a3d9f938e13cd947ec05abc7fe734df8dd826")).toBe(
      10_000n * 10n ** 18n,
    );
  });

  it("sends a transfer that is mined at once, with a receipt", async () => {
    const wallet = new Wallet(KEY0, provider);
    const before = await provider.getBlockNumber();
    const tx = await wallet.sendTransaction({ to: RECIPIENT, value: 10n ** 18n });
    const receipt = await tx.wait();
    expect(receipt?.status).toBe(1);
    expect(receipt?.gasUsed).toBe(21_000n);
    expect(receipt?.blockNumber).toBe(before + 1);
    expect(await provider.getBalance(RECIPIENT)).toBe(10n ** 18n);
    const fetched = await provider.getTransaction(tx.hash);
    expect(fetched?.from).toBe(wallet.address);
    expect(fetched?.blockNumber).toBe(before + 1);
  });

  it("serves every field of the spec's block object", async () => {
    const res = await call(node.url, "eth_getBlockByNumber", ["latest", true]);
    const block = res.result as Record<string, unknown>;
    for (const field of [
      "number",
      "hash",
      "parentHash",
      "nonce",
      "sha3Uncles",
      "logsBloom",
      "transactionsRoot",
      "stateRoot",
      "receiptsRoot",
      "miner",
      "difficulty",
      "cumulativeDifficulty",
      "totalDifficulty",
      "extraData",
      "size",
      "gasLimit",
      "gasUsed",
      "timestamp",
      "transactions",
      "uncles",
      "minimumGasPrice",
      "bitcoinMergedMiningHeader",
      "bitcoinMergedMiningCoinbaseTransaction",
      "bitcoinMergedMiningMerkleProof",
      "hashForMergedMining",
      "paidFees",
    ]) {
      expect(block, field).toHaveProperty(field);
    }
    expect(block.nonce).toBe("0x0000000000000000");
    expect(block.logsBloom).toMatch(/^0x[0-9a-f]{512}$/);
    expect(block.hashForMergedMining).toMatch(/^0x[0-9a-f]{64}$/);
    expect((block.transactions as { from: string }[])[0]?.from).toMatch(/^0x[0-9a-f]{40}$/);
    const byHash = await call(node.url, "eth_getBlockByHash", [block.hash, false]);
    expect((byHash.result as { number: string }).number).toBe(block.number);
  });

  it("deploys a contract, calls it and reads its logs", async () => {
    const wallet = new Wallet(KEY1, provider);
    const deploy = await wallet.sendTransaction({ data: deployCode(PING_RUNTIME) });
    const deployed = await deploy.wait();
    const address = deployed?.contractAddress;
    expect(address).toMatch(/^0x[0-9a-fA-F]{40}$/);
    expect(await provider.getCode(address!)).toBe(PING_RUNTIME);
    expect(await provider.call({ to: address! })).toBe(`0x${"00".repeat(31)}2a`);
    const gas = await provider.estimateGas({ to: address!, from: wallet.address });
    const run = await (await wallet.sendTransaction({ to: address!, gasLimit: gas })).wait();
    expect(run?.status).toBe(1);
    expect(run?.logs).toHaveLength(1);
    expect(run?.logs[0]?.topics).toEqual([PING_TOPIC]);
    expect(run?.logs[0]?.address).toBe(address);
  });

  it("answers a reverting eth_call with -32015, the reason and the revert data", async () => {
    const wallet = new Wallet(KEY1, provider);
    const deployed = await (
      await wallet.sendTransaction({ data: deployCode(revertingRuntime(NOPE)) })
    ).wait();
    const res = await call(node.url, "eth_call", [{ to: deployed?.contractAddress }, "latest"]);
    expect(res.error).toEqual({
      code: -32015,
      message: "VM Exception while processing transaction: revert nope",
      data: NOPE,
    });
  });
});

describe("bad input and lookups that find nothing", () => {
  it.each([
    ["eth_getBlockByNumber", ["0x99999", false]],
    ["eth_getBlockByHash", [`0x${"11".repeat(32)}`, false]],
    ["eth_getTransactionByHash", [`0x${"22".repeat(32)}`]],
    ["eth_getTransactionReceipt", [`0x${"22".repeat(32)}`]],
    ["eth_getBlockTransactionCountByHash", [`0x${"33".repeat(32)}`]],
  ])("%s of something unknown is null", async (method, params) => {
    const res = await call(node.url, method, params);
    expect(res).toEqual({ jsonrpc: "2.0", id: 1, result: null });
  });

  it.each([
    [
      "eth_getBalance",
      ["0x1234", "latest"],
      "invalid argument 0: hex string has length 4, want 40 for address",
    ],
    ["eth_getBalance", [RECIPIENT, "0x999999"], "block 0x999999 not found"],
    [
      "eth_sendRawTransaction",
      ["0x83616263"],
      "invalid transaction: expected a list, got a byte string",
    ],
    ["eth_sendRawTransaction", ["0xdeadbeef"], "invalid transaction: "],
    ["eth_sendRawTransaction", ["0x02f8"], "invalid type 2 transaction: invalid RLP"],
  ])("%s %j answers -32602", async (method, params, message) => {
    const res = await call(node.url, method, params);
    expect(res.error).toMatchObject({ code: -32602, message: expect.stringContaining(message) });
  });

  it("refuses a transaction signed for another chain, and one with a used nonce", async () => {
    const wallet = new Wallet(KEY0);
    const other = await wallet.signTransaction({
      to: RECIPIENT,
      value: 1n,
      gasLimit: 21_000n,
      gasPrice: 0n,
      nonce: 0,
      chainId: 30,
      type: 0,
    });
    expect((await call(node.url, "eth_sendRawTransaction", [other])).error).toEqual({
      code: -32602,
      message: "invalid chain id: transaction signed for chain 30, this network is 33",
    });
    const reused = await wallet.signTransaction({
      to: RECIPIENT,
      value: 1n,
      gasLimit: 21_000n,
      gasPrice: 0n,
      nonce: 0,
      chainId: 33,
      type: 0,
    });
    const res = await call(node.url, "eth_sendRawTransaction", [reused]);
    expect(res.error?.code).toBe(-32010);
    expect(res.error?.message).toMatch(/^(transaction nonce too low|nonce too low)/);
  });
});

describe("restarts", () => {
  it("keeps blocks, balances and receipts across a clean restart and a kill -9", async () => {
    const datadir = mkdtempSync(join(tmpdir(), "nodex-restart-"));
    try {
      let running = await startNode({ datadir });
      let p = new JsonRpcProvider(running.url, 33, { staticNetwork: true });
      const wallet = new Wallet(KEY0, p);
      const hashes: string[] = [];
      for (let i = 0; i < 5; i++) {
        const tx = await wallet.sendTransaction({
          to: RECIPIENT,
          value: 1000n,
          nonce: i,
          gasLimit: 21_000n,
          gasPrice: 0n,
        });
        hashes.push(tx.hash);
      }
      p.destroy();
      expect(await running.stop()).toBe(0);

      running = await startNode({ datadir });
      p = new JsonRpcProvider(running.url, 33, { staticNetwork: true });
      expect(await p.getBlockNumber()).toBe(5);
      expect(await p.getBalance(RECIPIENT)).toBe(5000n);
      for (const hash of hashes) expect((await p.getTransactionReceipt(hash))?.status).toBe(1);

      // A stream of blocks, killed without warning part-way.
      const w2 = new Wallet(KEY0, p);
      const sent: Promise<unknown>[] = [];
      for (let i = 5; i < 40; i++) {
        sent.push(
          w2
            .sendTransaction({
              to: RECIPIENT,
              value: 1000n,
              nonce: i,
              gasLimit: 21_000n,
              gasPrice: 0n,
            })
            .catch(() => undefined),
        );
        if (i === 20) running.process.kill("SIGKILL");
      }
      await Promise.allSettled(sent);
      p.destroy();
      await running.stop();

      running = await startNode({ datadir });
      p = new JsonRpcProvider(running.url, 33, { staticNetwork: true });
      const head = await p.getBlockNumber();
      expect(head).toBeGreaterThanOrEqual(5);
      expect(await p.getBalance(RECIPIENT)).toBe(BigInt(head) * 1000n);
      expect(await p.getTransactionCount("0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266")).toBe(head);
      for (let n = 1; n <= head; n++) {
        const block = await p.getBlock(n);
        expect(block?.transactions).toHaveLength(1);
        expect((await p.getTransactionReceipt(block!.transactions[0]!))?.status).toBe(1);
      }
      p.destroy();
      await running.stop();
    } finally {
      rmSync(datadir, { recursive: true, force: true });
    }
  });
});
