import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, type RunningNode, startNode } from "../helpers/node.js";

// eth_netHashrate over blocks mined after a genesis whose timestamp is 0: the genesis does not
// open the span (it would make it decades long, and the answer 0).
let node: RunningNode;
beforeAll(async () => {
  node = await startNode({ args: ["--no-automine"] });
});
afterAll(async () => {
  await node?.stop();
});

async function result(method: string, params: unknown[] = []): Promise<unknown> {
  const res = await call(node.url, method, params);
  expect(res.error, `${method} ${JSON.stringify(res.error)}`).toBeUndefined();
  return res.result;
}

describe("eth_netHashrate", () => {
  it("is the work of the blocks after the oldest one over the seconds from it to the head", async () => {
    const genesis = (await result("eth_getBlockByNumber", ["0x0", false])) as {
      timestamp: string;
    };
    expect(genesis.timestamp).toBe("0x0");
    const start = 1_700_000_000;
    for (let i = 0; i < 4; i++) await result("evm_mine", [start + i]);
    let work = 0n;
    for (let n = 2; n <= 4; n++) {
      const block = (await result("eth_getBlockByNumber", [`0x${n.toString(16)}`, false])) as {
        difficulty: string;
      };
      work += BigInt(block.difficulty);
    }
    const expected = work / 3n;
    expect(expected).toBeGreaterThan(0n);
    expect(await result("eth_netHashrate")).toBe(`0x${expected.toString(16)}`);
  });
});
