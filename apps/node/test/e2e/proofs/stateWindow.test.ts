import { deriveDevAccounts } from "@nodex/types";
import { hexlify, Wallet } from "ethers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, type RunningNode, send, startNode } from "../helpers/node.js";
import { type AccountProof, verifyAccount } from "./verify.js";

// eth_getProof on a node that keeps the state of its last 4 blocks: a block inside the window is
// proven against its own root; one outside is -32000, never a proof from another state.

const [alice] = deriveDevAccounts();
const wallet = new Wallet(hexlify(alice!.privateKey));
const PAYEE = "0x0000000000000000000000000000000000c0ffee";

let node: RunningNode;
beforeAll(async () => {
  node = await startNode({ args: ["--state-window", "4"] });
  for (let nonce = 0; nonce < 10; nonce++) {
    const raw = await wallet.signTransaction({
      to: PAYEE,
      value: BigInt(nonce + 1),
      gasLimit: 21_000n,
      gasPrice: 0n,
      nonce,
      chainId: 33,
      type: 0,
    });
    await result("eth_sendRawTransaction", [raw]);
  }
  expect(await result("eth_blockNumber")).toBe("0xa");
});
afterAll(async () => {
  await node?.stop();
});

async function result(method: string, params: unknown[] = []): Promise<unknown> {
  const res = await call(node.url, method, params);
  expect(res.error, `${method}: ${JSON.stringify(res.error)}`).toBeUndefined();
  return res.result;
}

describe("eth_getProof and the state window", () => {
  it("proves the payee's balance at each retained block against that block's root", async () => {
    for (const n of [10, 9, 8, 7]) {
      const tag = `0x${n.toString(16)}`;
      const { stateRoot } = (await result("eth_getBlockByNumber", [tag, false])) as {
        stateRoot: string;
      };
      const answer = (await result("eth_getProof", [PAYEE, [], tag])) as AccountProof;
      expect(await verifyAccount(answer, stateRoot)).toBe(true);
      // 1 + 2 + … + n
      expect(BigInt(answer.balance)).toBe(BigInt((n * (n + 1)) / 2));
    }
  });

  it("answers -32000 for a block whose state is pruned, earliest included", async () => {
    for (const [tag, n] of [
      ["0x6", 6],
      ["0x1", 1],
      ["earliest", 0],
    ] as const) {
      const res = await send(node.url, {
        jsonrpc: "2.0",
        id: 1,
        method: "eth_getProof",
        params: [PAYEE, [], tag],
      });
      expect(res.json).toEqual({
        jsonrpc: "2.0",
        id: 1,
        error: {
          code: -32000,
          message: `state of block ${n} is pruned: this node keeps the state of the last 4 blocks (archive mode keeps all)`,
        },
      });
    }
  });
});
