import { JsonRpcProvider, keccak256, toUtf8Bytes, Wallet } from "ethers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { deployCode } from "../helpers/bytecode.js";
import { call, type RunningNode, startNode } from "../helpers/node.js";

// The spec's topic matching rules, row by row, on one transaction's three logs: an anonymous
// event (no topics), an event with topics [A, B], and one with four topics [A, B, C, D].
const KEY0 = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80";
const [A, B, C, D] = ["A()", "B()", "C()", "D()"].map((s) => keccak256(toUtf8Bytes(s)));
const push32 = (topic: string) => `7f${topic!.slice(2)}`;
/** mstore(0, 7); log0(0, 32); log2(0, 32, A, B); log4(0, 32, A, B, C, D); stop. */
const RUNTIME = `0x6007600052${"60206000a0"}${push32(B!)}${push32(A!)}60206000a2${push32(D!)}${push32(C!)}${push32(B!)}${push32(A!)}60206000a400`;

let node: RunningNode;
let provider: JsonRpcProvider;
let block: string;
beforeAll(async () => {
  node = await startNode();
  provider = new JsonRpcProvider(node.url, 33, { staticNetwork: true, cacheTimeout: -1 });
  const wallet = new Wallet(KEY0, provider);
  const contract = (await (await wallet.sendTransaction({ data: deployCode(RUNTIME) })).wait())!
    .contractAddress!;
  const receipt = await (await wallet.sendTransaction({ to: contract, gasLimit: 100_000n })).wait();
  block = `0x${receipt!.blockNumber.toString(16)}`;
});
afterAll(async () => {
  provider?.destroy();
  await node?.stop();
});

/** Which of the three logs (by their topic count: 0, 2, 4) a topics filter selects. */
async function selected(topics: unknown[]): Promise<number[]> {
  const res = await call(node.url, "eth_getLogs", [{ fromBlock: block, toBlock: block, topics }]);
  expect(res.error).toBeUndefined();
  return (res.result as { topics: string[] }[]).map((log) => log.topics.length);
}

describe("topic matching", () => {
  it("reads the three logs as emitted", async () => {
    const res = await call(node.url, "eth_getLogs", [{ fromBlock: block, toBlock: block }]);
    expect((res.result as { topics: string[] }[]).map((l) => l.topics)).toEqual([
      [],
      [A, B],
      [A, B, C, D],
    ]);
  });

  it.each([
    ["[] matches anything", [], [0, 2, 4]],
    ["[A] matches A first, anything after", [A], [2, 4]],
    ["[null, B] matches anything first and B second", [null, B], [2, 4]],
    ["[A, B] matches both positions", [A, B], [2, 4]],
    [
      "[[A, B], [A, B]] matches A or B in each position",
      [
        [A, B],
        [A, B],
      ],
      [2, 4],
    ],
    ["[B] does not match B in the second position", [B], []],
    ["[[B, C]] matches neither first topic", [[B, C]], []],
    ["[A, B, C] needs a third topic", [A, B, C], [4]],
    ["[null, null, null, D] matches the fourth topic", [null, null, null, D], [4]],
    ["[A, null, null, [C, D]]", [A, null, null, [C, D]], [4]],
    // A null position is no constraint, even past a log's last topic, as in Anvil (geth
    // requires the topic to exist).
    ["[null] is no constraint, the anonymous event included", [null], [0, 2, 4]],
    ["[A, null, null, null] matches A first, whatever follows", [A, null, null, null], [2, 4]],
  ])("%s", async (_name, topics, logs) => {
    expect(await selected(topics)).toEqual(logs);
  });
});
