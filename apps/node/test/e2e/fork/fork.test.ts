import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Contract, ContractFactory, JsonRpcProvider, Wallet } from "ethers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, type RunningNode, startNode } from "../helpers/node.js";
import { compile } from "../helpers/solidity.js";

// A development chain forked from another Nodex node (devnet) through --fork-url: reads equal the
// upstream's at the fork block, history up to it comes from the upstream, and what happens on
// the fork stays there.
const KEY0 = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80";
const HOLDERS = Array.from(
  { length: 12 },
  (_, i) => `0x${(0xf0e1d2c30000n + BigInt(i)).toString(16).padStart(40, "0")}`,
);

let upstream: RunningNode;
let fork: RunningNode;
let forkDir: string;
let token: string;
let forkBlock: number;
let transferBlocks: number[];
const { Token } = compile("Token.sol");

async function ok(url: string, method: string, params: unknown[] = []) {
  const res = await call(url, method, params);
  if (res.error !== undefined) throw new Error(`${method}: ${JSON.stringify(res.error)}`);
  return res.result;
}

beforeAll(async () => {
  upstream = await startNode({ network: "--devnet" });
  const provider = new JsonRpcProvider(upstream.url, 32, { staticNetwork: true, cacheTimeout: -1 });
  const owner = new Wallet(KEY0, provider);
  const deployed = await new ContractFactory(Token!.abi, Token!.bytecode, owner).deploy(1_000_000n);
  await deployed.waitForDeployment();
  token = await deployed.getAddress();
  const erc20 = new Contract(token, Token!.abi, owner);
  transferBlocks = [];
  for (const [i, holder] of HOLDERS.entries()) {
    const receipt = await (await erc20.getFunction("transfer")(holder, 100n + BigInt(i))).wait();
    transferBlocks.push(receipt!.blockNumber);
  }
  forkBlock = Number(await ok(upstream.url, "eth_blockNumber"));
  provider.destroy();
  forkDir = mkdtempSync(join(tmpdir(), "nodex-fork-"));
  fork = await startNode({
    datadir: forkDir,
    args: ["--fork-url", upstream.url, "--fork-block", String(forkBlock)],
  });
}, 120_000);

afterAll(async () => {
  await fork?.stop();
  await upstream?.stop();
  if (forkDir !== undefined) rmSync(forkDir, { recursive: true, force: true });
});

describe("a fork of a Nodex devnet", () => {
  it("goes on from the fork block, on the upstream's state", async () => {
    expect(Number(await ok(fork.url, "eth_blockNumber"))).toBe(forkBlock);
    const theirs = await ok(upstream.url, "eth_getBlockByNumber", [
      `0x${forkBlock.toString(16)}`,
      false,
    ]);
    const ours = await ok(fork.url, "eth_getBlockByNumber", [`0x${forkBlock.toString(16)}`, false]);
    // Said as Hardhat's and Anvil's forks say it; the URL never as given.
    const fork_ = { chainId: 32, forkBlockNumber: forkBlock, forkBlockHash: theirs.hash };
    expect((await ok(fork.url, "hardhat_metadata")).forkedNetwork).toEqual(fork_);
    expect((await ok(fork.url, "anvil_metadata")).forkedNetwork).toEqual(fork_);
    expect((await ok(fork.url, "anvil_nodeInfo")).forkConfig).toMatchObject({
      forkBlockNumber: forkBlock,
    });
    expect(ours.hash).toBe(theirs.hash);
    expect(ours.stateRoot).toBe(theirs.stateRoot);
    for (const [i, holder] of HOLDERS.entries()) {
      const data = `0x70a08231${holder.slice(2).padStart(64, "0")}`;
      expect(BigInt(await ok(fork.url, "eth_call", [{ to: token, data }, "latest"]))).toBe(
        100n + BigInt(i),
      );
    }
    expect(await ok(fork.url, "eth_getCode", [token, "latest"])).toBe(
      await ok(upstream.url, "eth_getCode", [token, "latest"]),
    );
    const proof = await ok(fork.url, "eth_getProof", [token, ["0x0"], "latest"]);
    expect(proof).toEqual(
      await ok(upstream.url, "eth_getProof", [token, ["0x0"], `0x${forkBlock.toString(16)}`]),
    );
  });

  it("answers the history up to the fork block from the upstream", async () => {
    const at = `0x${transferBlocks[3]!.toString(16)}`;
    expect(await ok(fork.url, "eth_getBlockByNumber", [at, true])).toEqual(
      await ok(upstream.url, "eth_getBlockByNumber", [at, true]),
    );
    const logs = await ok(fork.url, "eth_getLogs", [{ fromBlock: "earliest", address: token }]);
    expect(logs).toEqual(
      await ok(upstream.url, "eth_getLogs", [{ fromBlock: "earliest", address: token }]),
    );
    expect(logs).toHaveLength(HOLDERS.length + 1);
    const tx = (await ok(upstream.url, "eth_getBlockByNumber", [at, false])).transactions[0];
    expect(await ok(fork.url, "eth_getTransactionReceipt", [tx])).toEqual(
      await ok(upstream.url, "eth_getTransactionReceipt", [tx]),
    );
  });

  it("keeps what happens on the fork to the fork", async () => {
    const provider = new JsonRpcProvider(fork.url, 33, { staticNetwork: true, cacheTimeout: -1 });
    const erc20 = new Contract(token, Token!.abi, new Wallet(KEY0, provider));
    const receipt = await (await erc20.getFunction("transfer")(HOLDERS[0], 5n)).wait();
    expect(receipt!.blockNumber).toBe(forkBlock + 1);
    // The fork block is the upstream's own header (a Nodex upstream's JSON names all its fields):
    // the first local block's parent is the upstream's block.
    const first = await ok(fork.url, "eth_getBlockByNumber", [
      `0x${(forkBlock + 1).toString(16)}`,
      false,
    ]);
    const theirs = await ok(upstream.url, "eth_getBlockByNumber", [
      `0x${forkBlock.toString(16)}`,
      false,
    ]);
    expect(first.parentHash).toBe(theirs.hash);
    expect(fork.logs()).toContain(`"header":"the upstream's"`);
    expect(await erc20.getFunction("balanceOf")(HOLDERS[0])).toBe(105n);
    const data = `0x70a08231${HOLDERS[0]!.slice(2).padStart(64, "0")}`;
    expect(BigInt(await ok(upstream.url, "eth_call", [{ to: token, data }, "latest"]))).toBe(100n);
    // Logs across the fork block: the upstream's, then the fork's own.
    const logs = await ok(fork.url, "eth_getLogs", [{ fromBlock: "earliest", address: token }]);
    expect(logs).toHaveLength(HOLDERS.length + 2);
    expect(Number(logs.at(-1).blockNumber)).toBe(forkBlock + 1);
    // An installed filter's logs cross the fork block too.
    const filter = await ok(fork.url, "eth_newFilter", [{ fromBlock: "earliest", address: token }]);
    expect(await ok(fork.url, "eth_getFilterLogs", [filter])).toEqual(logs);
    provider.destroy();
  });
});
