import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { JsonRpcProvider, Wallet } from "ethers";
import { afterAll, describe, expect, it } from "vitest";
import { call, runCli, startNode } from "../helpers/node.js";

// Two nodes build competing branches from the same genesis; a third imports both as chain files
// and follows the heavier one: blocks by number, transactions and receipts switch over.

const KEY0 = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80";
const X = "0x00000000000000000000000000000000000000a1";
const Y = "0x00000000000000000000000000000000000000b2";

const dirs: string[] = [];
const tempDir = (name: string) => {
  const dir = mkdtempSync(join(tmpdir(), `nodex-reorg-${name}-`));
  dirs.push(dir);
  return dir;
};
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** Runs a regtest node on `datadir`, sends one transfer per value, stops it; the hashes. */
async function branch(datadir: string, to: string, values: bigint[]): Promise<string[]> {
  const node = await startNode({ datadir });
  const provider = new JsonRpcProvider(node.url, 33, { staticNetwork: true, cacheTimeout: -1 });
  const wallet = new Wallet(KEY0, provider);
  const hashes: string[] = [];
  try {
    for (const [nonce, value] of values.entries()) {
      const tx = await wallet.sendTransaction({ to, value, nonce, gasLimit: 21_000n });
      hashes.push(tx.hash);
    }
  } finally {
    provider.destroy();
    await node.stop();
  }
  return hashes;
}

async function exportTo(datadir: string): Promise<string> {
  const file = join(tempDir("file"), "chain.rlp");
  const res = await runCli(["export", file, "--regtest", "--datadir", datadir]);
  expect(res.code, res.stderr).toBe(0);
  return file;
}

async function rpc(url: string, method: string, params: unknown[]): Promise<unknown> {
  const res = await call(url, method, params);
  expect(res.error).toBeUndefined();
  return res.result;
}

describe("reorganization", () => {
  it("switches to the heavier of two imported branches", async () => {
    const light = tempDir("light");
    const heavy = tempDir("heavy");
    // The branches are built, and then exported, side by side: each on its own datadir.
    const [[lightTx], heavyTxs] = await Promise.all([
      branch(light, X, [5n]),
      branch(heavy, Y, [7n, 8n]),
    ]);
    const [lightFile, heavyFile] = await Promise.all([exportTo(light), exportTo(heavy)]);

    const datadir = tempDir("node");
    let res = await runCli(["import", lightFile, "--regtest", "--datadir", datadir]);
    expect(res.code, res.stderr).toBe(0);
    let node = await startNode({ datadir });
    try {
      expect(await rpc(node.url, "eth_blockNumber", [])).toBe("0x1");
      expect(
        ((await rpc(node.url, "eth_getTransactionReceipt", [lightTx])) as { status: string })
          .status,
      ).toBe("0x1");
      expect(await rpc(node.url, "eth_getBalance", [X, "latest"])).toBe("0x5");
    } finally {
      await node.stop();
    }

    res = await runCli(["import", heavyFile, "--regtest", "--datadir", datadir]);
    expect(res.code, res.stderr).toBe(0);
    node = await startNode({ datadir });
    try {
      expect(await rpc(node.url, "eth_blockNumber", [])).toBe("0x2");
      for (const [i, hash] of heavyTxs.entries()) {
        const block = (await rpc(node.url, "eth_getBlockByNumber", [
          `0x${(i + 1).toString(16)}`,
          false,
        ])) as {
          transactions: string[];
        };
        expect(block.transactions).toEqual([hash]);
        const receipt = (await rpc(node.url, "eth_getTransactionReceipt", [hash])) as {
          status: string;
          blockNumber: string;
        };
        expect(receipt).toMatchObject({ status: "0x1", blockNumber: `0x${(i + 1).toString(16)}` });
      }
      // The light branch's transaction left the chain with its block.
      expect(await rpc(node.url, "eth_getTransactionReceipt", [lightTx])).toBeNull();
      expect(await rpc(node.url, "eth_getTransactionByHash", [lightTx])).toBeNull();
      expect(await rpc(node.url, "eth_getBalance", [X, "latest"])).toBe("0x0");
      expect(await rpc(node.url, "eth_getBalance", [Y, "latest"])).toBe("0xf");
      // Logs and counts follow the canonical chain too.
      expect(
        await rpc(node.url, "eth_getTransactionCount", [new Wallet(KEY0).address, "latest"]),
      ).toBe("0x2");
    } finally {
      await node.stop();
    }
  }, 60_000);
});
