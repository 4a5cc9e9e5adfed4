import { Wallet } from "ethers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, type RunningNode, startNode } from "../helpers/node.js";

// Automine answers a send once its block is sealed, while the block is written; every request
// after the answer must still see that block.
const KEY0 = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80";
const TO = "0x000000000000000000000000000000000000beef";

let node: RunningNode;
beforeAll(async () => {
  node = await startNode();
});
afterAll(async () => {
  await node?.stop();
});

describe("automine", () => {
  it("shows a sent transaction's block to the very next request: receipt, nonce, number, balance", async () => {
    const wallet = new Wallet(KEY0);
    const start = Number((await call(node.url, "eth_blockNumber")).result);
    for (let i = 0; i < 40; i++) {
      const raw = await wallet.signTransaction({
        to: TO,
        value: BigInt(i + 1),
        nonce: i,
        gasLimit: 21_000n,
        gasPrice: 0n,
        chainId: 33n,
        type: 0,
      });
      const sent = await call(node.url, "eth_sendRawTransaction", [raw]);
      expect(sent.error).toBeUndefined();
      const res = await fetch(node.url, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify([
          { jsonrpc: "2.0", id: 1, method: "eth_getTransactionReceipt", params: [sent.result] },
          {
            jsonrpc: "2.0",
            id: 2,
            method: "eth_getTransactionCount",
            params: [wallet.address, "latest"],
          },
          { jsonrpc: "2.0", id: 3, method: "eth_blockNumber", params: [] },
          { jsonrpc: "2.0", id: 4, method: "eth_getBalance", params: [TO, "latest"] },
        ]),
      });
      const [receipt, nonce, number, balance] = (await res.json()) as { result: unknown }[];
      expect((receipt!.result as { status: string } | null)?.status).toBe("0x1");
      expect(nonce!.result).toBe(`0x${(i + 1).toString(16)}`);
      expect(Number(number!.result)).toBe(start + i + 1);
      expect(BigInt(balance!.result as string)).toBe(BigInt(((i + 1) * (i + 2)) / 2));
    }
  });
});
