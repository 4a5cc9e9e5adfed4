import { afterAll, describe, expect, it } from "vitest";
import { call, type RunningNode, runCli, startNode } from "../helpers/node.js";
import { p2pAddress } from "../helpers/p2p.js";

// Testnet nodes at a test difficulty: the reference miner mines on one, the other follows it
// over the network, checking every merged-mining proof, to the same head and state root.
const TEST_CHAIN = ["--min-difficulty", "1"];

const nodes: RunningNode[] = [];
afterAll(async () => {
  await Promise.all(nodes.map((n) => n.stop()));
});

const head = async (node: RunningNode) =>
  (await call(node.url, "eth_getBlockByNumber", ["latest", false])).result as {
    number: string;
    hash: string;
    stateRoot: string;
  };

describe("merged-mined blocks over the network", () => {
  it("the reference miner mines on A; B follows over the network to the same head", async () => {
    const a = await startNode({
      network: "--testnet",
      args: ["--miner", ...TEST_CHAIN, "--p2p-host", "127.0.0.30", "--p2p-port", "0"],
    });
    nodes.push(a);
    const b = await startNode({
      network: "--testnet",
      args: [
        ...TEST_CHAIN,
        "--p2p-host",
        "127.0.0.31",
        "--p2p-port",
        "0",
        "--bootnodes",
        p2pAddress(a),
      ],
    });
    nodes.push(b);
    const run = await runCli([
      "mine",
      "--rpc",
      a.url,
      "--threads",
      "2",
      "--max-blocks",
      "3",
      "--poll-ms",
      "300",
    ]);
    expect(run.code).toBe(0);
    const mined = await head(a);
    expect(Number(mined.number)).toBeGreaterThanOrEqual(3);
    const deadline = Date.now() + 30_000;
    let followed = await head(b);
    while (followed.hash !== mined.hash && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 100));
      followed = await head(b);
    }
    expect(followed).toEqual(mined);
    const block = (await call(b.url, "eth_getBlockByNumber", ["0x1", false])).result as Record<
      string,
      string
    >;
    expect(block.bitcoinMergedMiningHeader).toMatch(/^0x[0-9a-f]{160}$/);
    expect(b.logs()).toMatch(/"msg":"(Imported block|Synced)"/);
  }, 90_000);
});
