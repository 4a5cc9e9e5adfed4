import { Wallet } from "ethers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, type RunningNode, startNode } from "../helpers/node.js";

// --no-automine: a development node that makes no blocks of its own (it follows another node,
// or a test drives it with evm_mine); transactions wait in the pool.
const KEY0 = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80";

let node: RunningNode;
beforeAll(async () => {
  node = await startNode({ args: ["--no-automine"] });
});
afterAll(async () => {
  await node?.stop();
});

async function ok(method: string, params: unknown[] = []): Promise<unknown> {
  const res = await call(node.url, method, params);
  expect(res.error).toBeUndefined();
  return res.result;
}

describe("--no-automine", () => {
  it("keeps a transaction pending until a block is asked for", async () => {
    const raw = await new Wallet(KEY0).signTransaction({
      to: "0x00000000000000000000000000000000000000aa",
      value: 1n,
      nonce: 0,
      gasLimit: 21_000n,
      gasPrice: 100_000_000n,
      chainId: 33n,
      type: 0,
    });
    const hash = await ok("eth_sendRawTransaction", [raw]);
    await new Promise((r) => setTimeout(r, 300));
    expect(await ok("eth_blockNumber")).toBe("0x0");
    expect(await ok("eth_getTransactionReceipt", [hash])).toBeNull();
    expect(await ok("txpool_status")).toEqual({ pending: 1, queued: 0 });
    expect(await ok("eth_mining")).toBe(false);
    await ok("evm_mine");
    expect(await ok("eth_getTransactionReceipt", [hash])).toMatchObject({ blockNumber: "0x1" });
  });
});
