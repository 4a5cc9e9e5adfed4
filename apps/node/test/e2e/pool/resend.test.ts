import { JsonRpcProvider, Wallet } from "ethers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, type RunningNode, startNode } from "../helpers/node.js";

// A transaction sent again: once mined it is `nonce too low` (geth's and Anvil's words, which
// ethers reads as NONCE_EXPIRED); while it waits in the pool it is `already known`.
const KEY = "0x47e179ec197488593b187f80a00eb0da91f1b9d0b13f8733639f19c30a34926a";
const TO = "0x000000000000000000000000000000000000beef";

let node: RunningNode;
beforeAll(async () => {
  node = await startNode();
});
afterAll(async () => {
  await node?.stop();
});

async function signed(wallet: Wallet, nonce: number): Promise<string> {
  return wallet.signTransaction({
    to: TO,
    value: 1n,
    gasLimit: 21_000n,
    gasPrice: 0n,
    nonce,
    chainId: 33,
    type: 0,
  });
}

describe("eth_sendRawTransaction of a transaction sent before", () => {
  it("answers -32010 `nonce too low` for a mined one, which ethers reads as NONCE_EXPIRED", async () => {
    const wallet = new Wallet(KEY);
    const raw = await signed(wallet, 0);
    const first = await call(node.url, "eth_sendRawTransaction", [raw]);
    expect(first.error).toBeUndefined();
    const receipt = (await call(node.url, "eth_getTransactionReceipt", [first.result])).result as {
      blockHash: string;
    };
    const again = await call(node.url, "eth_sendRawTransaction", [raw]);
    expect(again.error).toEqual({
      code: -32010,
      message: `nonce too low: transaction ${first.result} is already in block ${receipt.blockHash}`,
    });
    const provider = new JsonRpcProvider(node.url, 33, { staticNetwork: true });
    try {
      await expect(provider.broadcastTransaction(raw)).rejects.toMatchObject({
        code: "NONCE_EXPIRED",
      });
    } finally {
      provider.destroy();
    }
  });

  it("answers `already known` for one still waiting in the pool", async () => {
    expect((await call(node.url, "evm_stopMining", [])).error).toBeUndefined();
    try {
      const raw = await signed(new Wallet(KEY), 1);
      expect((await call(node.url, "eth_sendRawTransaction", [raw])).error).toBeUndefined();
      const again = await call(node.url, "eth_sendRawTransaction", [raw]);
      expect(again.error?.code).toBe(-32010);
      expect(again.error?.message).toMatch(/already known/);
    } finally {
      expect((await call(node.url, "evm_startMining", [])).error).toBeUndefined();
    }
  });
});
