import { JsonRpcProvider, keccak256, toUtf8Bytes, Wallet } from "ethers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { deployCode } from "../helpers/bytecode.js";
import { call, type RunningNode, startNode } from "../helpers/node.js";

// eth_getLogs with the spec's filter object, through raw JSON and ethers.
const KEY0 = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80";
const PING = keccak256(toUtf8Bytes("Ping()"));
const OTHER = keccak256(toUtf8Bytes("Other()"));
/** Runtime: mstore(0, 7); log1(0, 32, Ping()); stop. */
const RUNTIME = `0x60076000527f${PING.slice(2)}60206000a100`;

let node: RunningNode;
let provider: JsonRpcProvider;
let contract: string;
let pingBlocks: number[];
beforeAll(async () => {
  node = await startNode();
  provider = new JsonRpcProvider(node.url, 33, { staticNetwork: true, cacheTimeout: -1 });
  const wallet = new Wallet(KEY0, provider);
  contract = (await (await wallet.sendTransaction({ data: deployCode(RUNTIME) })).wait())!
    .contractAddress!;
  pingBlocks = [];
  for (let i = 0; i < 3; i++) {
    const receipt = await (
      await wallet.sendTransaction({ to: contract, gasLimit: 60_000n })
    ).wait();
    pingBlocks.push(receipt!.blockNumber);
  }
  // a block without logs at the head
  await (await wallet.sendTransaction({ to: wallet.address, value: 1n })).wait();
});
afterAll(async () => {
  provider?.destroy();
  await node?.stop();
});

const logs = async (filter: Record<string, unknown>) => {
  const res = await call(node.url, "eth_getLogs", [filter]);
  expect(res.error).toBeUndefined();
  return res.result as {
    blockNumber: string;
    topics: string[];
    address: string;
    removed: boolean;
    logIndex: string;
    data: string;
  }[];
};
const hex = (n: number) => `0x${n.toString(16)}`;

describe("eth_getLogs", () => {
  it("returns the logs of a block range, each a full log object", async () => {
    const found = await logs({ fromBlock: "0x0", toBlock: "latest" });
    expect(found.map((l) => l.blockNumber)).toEqual(pingBlocks.map(hex));
    expect(found[0]).toEqual({
      removed: false,
      logIndex: "0x0",
      transactionIndex: "0x0",
      transactionHash: expect.stringMatching(/^0x[0-9a-f]{64}$/),
      blockHash: expect.stringMatching(/^0x[0-9a-f]{64}$/),
      blockNumber: hex(pingBlocks[0]!),
      address: contract.toLowerCase(),
      data: `0x${"00".repeat(31)}07`,
      topics: [PING],
    });
  });

  it("defaults to the latest block", async () => {
    expect(await logs({})).toEqual([]);
    expect(await logs({ fromBlock: hex(pingBlocks[2]!) })).toHaveLength(1);
  });

  it.each([
    [{ topics: [PING] }, 3],
    [{ topics: [null] }, 3],
    [{ topics: [[OTHER, PING]] }, 3],
    [{ topics: [OTHER] }, 0],
    [{ topics: [PING, null] }, 3],
    [{ topics: [null, PING] }, 0],
    [{ address: "0x00000000000000000000000000000000000000aa" }, 0],
  ])("matches %j to %i logs", async (extra, count) => {
    expect(await logs({ fromBlock: "earliest", toBlock: "latest", ...extra })).toHaveLength(count);
  });

  it("filters by address, single or a list", async () => {
    expect(await logs({ fromBlock: "0x0", address: contract })).toHaveLength(3);
    expect(
      await logs({
        fromBlock: "0x0",
        address: [contract, "0x00000000000000000000000000000000000000aa"],
      }),
    ).toHaveLength(3);
  });

  it("selects one block by blockHash", async () => {
    const block = await provider.getBlock(pingBlocks[1]!);
    const found = await logs({ blockHash: block!.hash });
    expect(found.map((l) => l.blockNumber)).toEqual([hex(pingBlocks[1]!)]);
  });

  it("works through ethers", async () => {
    const found = await provider.getLogs({
      fromBlock: 0,
      toBlock: "latest",
      address: contract,
      topics: [PING],
    });
    expect(found.map((l) => l.blockNumber)).toEqual(pingBlocks);
  });

  it.each([
    [
      { blockHash: `0x${"00".repeat(32)}`, fromBlock: "0x1" },
      "invalid argument 0: cannot specify both blockHash and fromBlock/toBlock",
    ],
    [
      { fromBlock: "0x3", toBlock: "0x1" },
      "invalid block range: fromBlock 0x3 is after toBlock 0x1",
    ],
    [{ topics: "nope" }, "invalid argument 0: topics: expected an array, got string"],
    [
      { address: "0x12" },
      "invalid argument 0: address: hex string has length 2, want 40 for address",
    ],
    [{ blockHash: `0x${"ab".repeat(32)}` }, `block 0x${"ab".repeat(32)} not found`],
  ])("answers %j with -32602", async (filter, message) => {
    const res = await call(node.url, "eth_getLogs", [filter]);
    expect(res.error).toEqual({ code: -32602, message });
  });
});

describe("eth_getLogs across a reorganization", () => {
  it("never answers the logs of blocks evm_revert took out, whichever thread answers", async () => {
    const wallet = new Wallet(KEY0, provider);
    const head = Number((await call(node.url, "eth_blockNumber")).result);
    const snapshot = (await call(node.url, "evm_snapshot")).result as string;
    const first = await (await wallet.sendTransaction({ to: contract, gasLimit: 60_000n })).wait();
    const range = { fromBlock: hex(head + 1), toBlock: hex(head + 1), address: contract };
    // Answered (and its records read) before the revert.
    const before = await logs(range);
    expect(before.map((l) => l.transactionHash)).toEqual([first!.hash]);
    expect((await call(node.url, "evm_revert", [snapshot])).result).toBe(true);
    // The block is gone: the range is past the head now.
    expect((await call(node.url, "eth_getLogs", [range])).error).toEqual({
      code: -32602,
      message: "block range extends beyond current head block",
    });
    // Another transaction in a block at the same height: its log, not the reverted one.
    const second = await (
      await wallet.sendTransaction({ to: contract, gasLimit: 60_000n, value: 0n, data: "0x01" })
    ).wait();
    expect(second!.blockNumber).toBe(head + 1);
    expect(second!.hash).not.toBe(first!.hash);
    const after = await logs(range);
    expect(after.map((l) => [l.transactionHash, l.blockNumber])).toEqual([
      [second!.hash, hex(head + 1)],
    ]);
    // Over the whole chain too (the ping blocks and this one), in order.
    const all = await logs({ fromBlock: "0x0", toBlock: "latest", topics: [PING] });
    expect(all.map((l) => l.blockNumber)).toEqual([...pingBlocks, head + 1].map(hex));
    expect(all.at(-1)!.transactionHash).toBe(second!.hash);
  });
});
