import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { JsonRpcProvider, Wallet } from "ethers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, type RunningNode, startNode } from "../helpers/node.js";

// How blocks are made and how long their state is kept: interval mining and the state window.
const KEY0 = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80";
const KEY1 = "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d";
const TO = "0x000000000000000000000000000000000000beef";

const quantity = (n: number | bigint) => `0x${n.toString(16)}`;

async function result(url: string, method: string, params: unknown[]): Promise<unknown> {
  const res = await call(url, method, params);
  expect(res.error).toBeUndefined();
  return res.result;
}

describe("interval mining (--mine-interval)", () => {
  let node: RunningNode;
  let provider: JsonRpcProvider;
  beforeAll(async () => {
    node = await startNode({ args: ["--mine-interval", "1"] });
    provider = new JsonRpcProvider(node.url, 33, {
      staticNetwork: true,
      cacheTimeout: -1,
      pollingInterval: 100,
    });
  });
  afterAll(async () => {
    provider?.destroy();
    await node?.stop();
  });

  it("keeps transactions until the next block, then mines them together", async () => {
    const wallet = new Wallet(KEY0, provider);
    const other = new Wallet(KEY1, provider);
    // Two transactions of one sender in a row: the second takes its nonce from `pending`.
    const first = await wallet.sendTransaction({ to: TO, value: 1n });
    const second = await wallet.sendTransaction({ to: TO, value: 2n });
    const third = await other.sendTransaction({ to: TO, value: 3n });
    expect([first.nonce, second.nonce]).toEqual([0, 1]);

    // Waiting: visible by hash without a block, no receipt yet (unless the tick came between).
    const seen = (await result(node.url, "eth_getTransactionByHash", [second.hash])) as Record<
      string,
      unknown
    >;
    expect(seen.hash).toBe(second.hash);
    if (seen.blockHash === null) {
      expect(seen.blockNumber).toBeNull();
      expect(seen.transactionIndex).toBeNull();
      expect(await result(node.url, "eth_getTransactionReceipt", [second.hash])).toBeNull();
    }

    const receipts = await Promise.all([first.wait(), second.wait(), third.wait()]);
    expect(receipts.map((r) => r?.status)).toEqual([1, 1, 1]);
    const firstBlock = receipts[0]!.blockNumber;
    expect(receipts[1]!.blockNumber).toBe(firstBlock);
    expect(await provider.getBalance(TO)).toBe(6n);
  });

  it("mines empty blocks at each interval", async () => {
    const start = Number(await result(node.url, "eth_blockNumber", []));
    const deadline = Date.now() + 10_000;
    let now = start;
    while (now < start + 2 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 200));
      now = Number(await result(node.url, "eth_blockNumber", []));
    }
    expect(now).toBeGreaterThanOrEqual(start + 2);
  });

  it("refuses a transaction that can never run, at once", async () => {
    const wallet = new Wallet(KEY1);
    const raw = await wallet.signTransaction({
      to: TO,
      value: 1n,
      gasLimit: 20_000n,
      gasPrice: 0n,
      nonce: 5,
      chainId: 33,
      type: 0,
    });
    const res = await call(node.url, "eth_sendRawTransaction", [raw]);
    expect(res.error).toEqual({
      code: -32010,
      message:
        "transaction's basic cost is above the gas limit (intrinsic gas too low): gas limit 20000, intrinsic gas 21000",
    });
    const used = await wallet.signTransaction({
      to: TO,
      value: 1n,
      gasLimit: 21_000n,
      gasPrice: 0n,
      nonce: 0,
      chainId: 33,
      type: 0,
    });
    const reused = await call(node.url, "eth_sendRawTransaction", [used]);
    expect(reused.error?.code).toBe(-32010);
    expect(reused.error?.message).toMatch(/^transaction nonce too low: /);
  });
});

describe("state window (--state-window)", () => {
  let node: RunningNode;
  beforeAll(async () => {
    node = await startNode({ network: "--devnet", args: ["--state-window", "4"] });
    const provider = new JsonRpcProvider(node.url, 32, { staticNetwork: true, cacheTimeout: -1 });
    const wallet = new Wallet(KEY0, provider);
    for (let i = 0; i < 10; i++) await (await wallet.sendTransaction({ to: TO, value: 1n })).wait();
    provider.destroy();
  });
  afterAll(async () => {
    await node?.stop();
  });

  it("answers state reads and calls of the last blocks of the window", async () => {
    // Head 10: blocks 7 to 10 keep their state.
    expect(await result(node.url, "eth_blockNumber", [])).toBe("0xa");
    expect(await result(node.url, "eth_getBalance", [TO, "0x7"])).toBe("0x7");
    expect(await result(node.url, "eth_getBalance", [TO, "latest"])).toBe("0xa");
    expect(await result(node.url, "eth_call", [{ to: TO }, "0x7"])).toBe("0x");
  });

  it("answers -32000 with the reason for the state of older blocks, and keeps their blocks", async () => {
    const message =
      "state of block 6 is pruned: this node keeps the state of the last 4 blocks (archive mode keeps all)";
    for (const [method, params] of [
      ["eth_getBalance", [TO, "0x6"]],
      ["eth_getTransactionCount", [TO, "0x6"]],
      ["eth_getCode", [TO, "0x6"]],
      ["eth_getStorageAt", [TO, "0x0", "0x6"]],
      ["eth_getProof", [TO, [], "0x6"]],
      ["eth_call", [{ to: TO }, "0x6"]],
      ["eth_estimateGas", [{ to: TO }, "0x6"]],
    ] as const) {
      const res = await call(node.url, method, [...params]);
      expect(res.error, method).toEqual({ code: -32000, message });
    }
    const earliest = await call(node.url, "eth_getBalance", [TO, "earliest"]);
    expect(earliest.error?.message).toMatch(/^state of block 0 is pruned/);
    const block = (await result(node.url, "eth_getBlockByNumber", [quantity(1), true])) as {
      transactions: unknown[];
    };
    expect(block.transactions).toHaveLength(1);
  });

  it("keeps the state of every block with --archive", async () => {
    const archive = await startNode({ network: "--devnet", args: ["--archive"] });
    try {
      const provider = new JsonRpcProvider(archive.url, 32, {
        staticNetwork: true,
        cacheTimeout: -1,
      });
      const wallet = new Wallet(KEY0, provider);
      for (let i = 0; i < 3; i++)
        await (await wallet.sendTransaction({ to: TO, value: 1n })).wait();
      provider.destroy();
      expect(await result(archive.url, "eth_getBalance", [TO, "earliest"])).toBe("0x0");
      expect(await result(archive.url, "eth_getBalance", [TO, "0x1"])).toBe("0x1");
    } finally {
      await archive.stop();
    }
  });
});

describe("kill -9 during a stream of blocks with a state window", () => {
  it("restarts at the last complete block with its state, receipts and the window's states", async () => {
    const datadir = mkdtempSync(join(tmpdir(), "nodex-kill-"));
    const wallet = new Wallet(KEY0);
    const raws: string[] = [];
    for (let nonce = 0; nonce < 400; nonce++) {
      raws.push(
        await wallet.signTransaction({
          to: TO,
          value: 1n,
          gasLimit: 21_000n,
          gasPrice: 0n,
          nonce,
          chainId: 32,
          type: 0,
        }),
      );
    }
    let node: RunningNode | undefined;
    try {
      const first = await startNode({
        network: "--devnet",
        datadir,
        args: ["--state-window", "3"],
      });
      node = first;
      // Send one by one, without waiting for anything but each answer, until the node dies.
      const stream = (async () => {
        for (const raw of raws) {
          try {
            await call(first.url, "eth_sendRawTransaction", [raw]);
          } catch {
            return;
          }
        }
      })();
      let head = 0;
      while (head < 40) {
        await new Promise((r) => setTimeout(r, 20));
        head = Number((await call(first.url, "eth_blockNumber")).result);
      }
      first.process.kill("SIGKILL");
      await stream;
      await first.stop();

      const restarted = await startNode({
        network: "--devnet",
        datadir,
        args: ["--state-window", "3"],
      });
      node = restarted;
      const number = Number(await result(restarted.url, "eth_blockNumber", []));
      expect(number).toBeGreaterThanOrEqual(40);
      // Each block's transactions, all with receipts. A send is answered once its block is
      // built: the journal can hold the transaction of a block that had not reached the disk
      // and the next one, and the restart mines both in one block.
      const upTo: number[] = [0];
      for (let n = 1; n <= number; n++) {
        const block = (await result(restarted.url, "eth_getBlockByNumber", [
          quantity(n),
          false,
        ])) as {
          transactions: string[];
        };
        expect(block.transactions.length).toBeGreaterThanOrEqual(1);
        upTo.push(upTo[n - 1]! + block.transactions.length);
        for (const hash of block.transactions) {
          const receipt = (await result(restarted.url, "eth_getTransactionReceipt", [hash])) as {
            status: string;
          };
          expect(receipt.status).toBe("0x1");
        }
      }
      const sent = upTo[number]!;
      expect(sent).toBeLessThanOrEqual(number + 1);
      expect(await result(restarted.url, "eth_getBalance", [TO, "latest"])).toBe(quantity(sent));
      expect(
        await result(restarted.url, "eth_getTransactionCount", [wallet.address, "latest"]),
      ).toBe(quantity(sent));
      // Every state of the window is whole.
      for (let n = number - 2; n <= number; n++)
        expect(await result(restarted.url, "eth_getBalance", [TO, quantity(n)])).toBe(
          quantity(upTo[n]!),
        );
      // And the chain goes on from there.
      const next = await call(restarted.url, "eth_sendRawTransaction", [raws[sent]]);
      expect(next.error).toBeUndefined();
      expect(await result(restarted.url, "eth_getBalance", [TO, "latest"])).toBe(
        quantity(sent + 1),
      );
    } finally {
      // Also when a check failed: no node is left running.
      await node?.stop();
      rmSync(datadir, { recursive: true, force: true });
    }
  });
});

describe("the pending block", () => {
  let node: RunningNode;
  beforeAll(async () => {
    // Blocks an hour apart: what is sent stays pending for the whole test.
    node = await startNode({ args: ["--mine-interval", "3600"] });
  });
  afterAll(async () => {
    await node?.stop();
  });

  it("holds the waiting transactions, and every block-selector method reads it", async () => {
    const wallet = new Wallet(KEY0);
    const raw = await wallet.signTransaction({
      to: TO,
      value: 42n,
      gasLimit: 21_000n,
      gasPrice: 0n,
      nonce: 0,
      chainId: 33,
      type: 0,
    });
    const hash = (await result(node.url, "eth_sendRawTransaction", [raw])) as string;

    const block = (await result(node.url, "eth_getBlockByNumber", ["pending", true])) as Record<
      string,
      unknown
    > & { transactions: Record<string, unknown>[] };
    expect(block).toMatchObject({ number: null, hash: null, nonce: null, logsBloom: null });
    expect(block.parentHash).toBe(
      ((await result(node.url, "eth_getBlockByNumber", ["latest", false])) as { hash: string })
        .hash,
    );
    expect(block.transactions).toHaveLength(1);
    expect(block.transactions[0]).toMatchObject({
      hash,
      blockHash: null,
      blockNumber: null,
      transactionIndex: null,
    });
    expect(block.gasUsed).toBe("0x5208");

    expect(await result(node.url, "eth_getBalance", [TO, "pending"])).toBe("0x2a");
    expect(await result(node.url, "eth_getBalance", [TO, "latest"])).toBe("0x0");
    expect(await result(node.url, "eth_getTransactionCount", [wallet.address, "pending"])).toBe(
      "0x1",
    );
    expect(await result(node.url, "eth_getTransactionCount", [wallet.address, "latest"])).toBe(
      "0x0",
    );
    expect(await result(node.url, "eth_getBlockTransactionCountByNumber", ["pending"])).toBe("0x1");
    expect(
      (
        (await result(node.url, "eth_getTransactionByBlockNumberAndIndex", ["pending", "0x0"])) as {
          hash: string;
        }
      ).hash,
    ).toBe(hash);
    expect(await result(node.url, "eth_getUncleCountByBlockNumber", ["pending"])).toBe("0x0");
    expect(
      await result(node.url, "eth_getUncleByBlockNumberAndIndex", ["pending", "0x0"]),
    ).toBeNull();
    expect(await result(node.url, "eth_getCode", [TO, "pending"])).toBe("0x");
    expect(await result(node.url, "eth_call", [{ to: TO }, "pending"])).toBe("0x");
    // The sender spent 42 in the pending state: a call moving its whole latest balance fails.
    const balance = BigInt(
      (await result(node.url, "eth_getBalance", [wallet.address, "latest"])) as string,
    );
    const pendingBalance = BigInt(
      (await result(node.url, "eth_getBalance", [wallet.address, "pending"])) as string,
    );
    expect(balance - pendingBalance).toBe(42n);
    // 21,000, and 80 for the empty access list of the typed transaction it may be sent as.
    expect(
      await result(node.url, "eth_estimateGas", [
        { from: wallet.address, to: TO, value: "0x1" },
        "pending",
      ]),
    ).toBe("0x5258");
    expect(await result(node.url, "eth_getTransactionReceipt", [hash])).toBeNull();
  });
});
