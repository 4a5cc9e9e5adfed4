import { Contract, JsonRpcProvider, keccak256, toUtf8Bytes, Wallet } from "ethers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { deployCode } from "../helpers/bytecode.js";
import { call, type RunningNode, startNode } from "../helpers/node.js";
import { type RunningRedis, startRedis } from "../helpers/services.js";

// The spec's filter lifecycle (install, poll, uninstall, unknown ids), by kind, with removed
// logs when evm_revert takes blocks out of the chain; and ethers polling a filter for events.
const KEY0 = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80";
const PING = keccak256(toUtf8Bytes("Ping()"));
/** Runtime: mstore(0, 7); log1(0, 32, Ping()); stop. */
const RUNTIME = `0x60076000527f${PING.slice(2)}60206000a100`;

let node: RunningNode;
let provider: JsonRpcProvider;
let wallet: Wallet;
let contract: string;
let redis: RunningRedis | undefined;
afterAll(async () => {
  await redis?.stop();
});

async function ok(method: string, params: unknown[] = []): Promise<unknown> {
  const res = await call(node.url, method, params);
  expect(res.error).toBeUndefined();
  return res.result;
}

const ping = async () =>
  (await (await wallet.sendTransaction({ to: contract, gasLimit: 60_000n })).wait())!;

// The same, for a node alone and for one whose filters live in Redis (--redis): a replica of
// an endpoint answers as a node alone does.
describe.each(["alone", "sharing its filters through Redis"])("filters of a node %s", (mode) => {
  beforeAll(async () => {
    const args: string[] = [];
    if (mode !== "alone") {
      redis ??= await startRedis();
      args.push("--redis", redis.url);
    }
    node = await startNode({ args });
    provider = new JsonRpcProvider(node.url, 33, {
      staticNetwork: true,
      cacheTimeout: -1,
      pollingInterval: 50,
    });
    wallet = new Wallet(KEY0, provider);
    contract = (await (await wallet.sendTransaction({ data: deployCode(RUNTIME) })).wait())!
      .contractAddress!;
  }, 30_000);
  afterAll(async () => {
    provider?.destroy();
    await node?.stop();
  });

  it("a block filter gives each new block's hash once, then [] until the next", async () => {
    const id = (await ok("eth_newBlockFilter")) as string;
    expect(id).toMatch(/^0x[1-9a-f][0-9a-f]*$/);
    expect(await ok("eth_getFilterChanges", [id])).toEqual([]);
    await ok("evm_mine");
    await ok("evm_mine");
    const latest = (await ok("eth_getBlockByNumber", ["latest", false])) as { hash: string };
    const parent = (await ok("eth_getBlockByNumber", [
      `0x${(BigInt((latest as unknown as { number: string }).number) - 1n).toString(16)}`,
      false,
    ])) as { hash: string };
    expect(await ok("eth_getFilterChanges", [id])).toEqual([parent.hash, latest.hash]);
    expect(await ok("eth_getFilterChanges", [id])).toEqual([]);
    expect(await ok("eth_uninstallFilter", [id])).toBe(true);
    expect(await ok("eth_uninstallFilter", [id])).toBe(false);
    expect((await call(node.url, "eth_getFilterChanges", [id])).error).toEqual({
      code: -32000,
      message: "filter not found",
    });
  });

  it("gives every filter its own id", async () => {
    const ids = new Set<string>();
    for (let i = 0; i < 20; i++) ids.add((await ok("eth_newBlockFilter")) as string);
    expect(ids.size).toBe(20);
    for (const id of ids) expect(await ok("eth_uninstallFilter", [id])).toBe(true);
  });

  it("a log filter gives the new logs that match, and eth_getFilterLogs all of them", async () => {
    const fromBlock = `0x${((await provider.getBlockNumber()) + 1).toString(16)}`;
    const id = (await ok("eth_newFilter", [
      { fromBlock, address: contract, topics: [PING] },
    ])) as string;
    const other = (await ok("eth_newFilter", [
      { topics: [keccak256(toUtf8Bytes("Other()"))] },
    ])) as string;
    const first = await ping();
    const second = await ping();
    const changes = (await ok("eth_getFilterChanges", [id])) as Record<string, unknown>[];
    expect(changes.map((l) => l.blockNumber)).toEqual(
      [first.blockNumber, second.blockNumber].map((n) => `0x${n.toString(16)}`),
    );
    expect(changes[0]).toMatchObject({
      removed: false,
      address: contract.toLowerCase(),
      topics: [PING],
      transactionHash: first.hash,
    });
    expect(await ok("eth_getFilterChanges", [id])).toEqual([]);
    expect(await ok("eth_getFilterChanges", [other])).toEqual([]);
    await ping();
    const all = (await ok("eth_getFilterLogs", [id])) as unknown[];
    expect(all).toHaveLength(3);
    expect(await ok("eth_getFilterChanges", [id])).toHaveLength(1);
  });

  it("a pending-transaction filter gives the hashes of transactions taken into the pool", async () => {
    const id = (await ok("eth_newPendingTransactionFilter")) as string;
    await ok("evm_stopMining");
    try {
      const nonce = await provider.getTransactionCount(wallet.address, "pending");
      const a = await wallet.sendTransaction({ to: contract, gasLimit: 60_000n, nonce });
      const b = await wallet.sendTransaction({ to: contract, gasLimit: 60_000n, nonce: nonce + 1 });
      expect(await ok("eth_getFilterChanges", [id])).toEqual([a.hash, b.hash]);
      expect(await ok("eth_getFilterChanges", [id])).toEqual([]);
    } finally {
      await ok("evm_startMining");
    }
  });

  it("after evm_revert, a log filter gives the reverted logs again with removed: true", async () => {
    const snapshot = await ok("evm_snapshot");
    const id = (await ok("eth_newFilter", [{ address: contract }])) as string;
    const mined = await ping();
    const before = (await ok("eth_getFilterChanges", [id])) as Record<string, unknown>[];
    expect(before).toHaveLength(1);
    expect(before[0]).toMatchObject({ removed: false, transactionHash: mined.hash });
    expect(await ok("evm_revert", [snapshot])).toBe(true);
    const after = (await ok("eth_getFilterChanges", [id])) as Record<string, unknown>[];
    expect(after).toEqual([{ ...before[0], removed: true }]);
    // A new block at the same height: its log joins, not removed.
    const again = await ping();
    const next = (await ok("eth_getFilterChanges", [id])) as Record<string, unknown>[];
    expect(next).toEqual([
      expect.objectContaining({ removed: false, transactionHash: again.hash }),
    ]);
  });

  it("refuses eth_getFilterLogs of a block filter, and unknown ids with -32000", async () => {
    const id = (await ok("eth_newBlockFilter")) as string;
    const res = await call(node.url, "eth_getFilterLogs", [id]);
    expect(res.error?.code).toBe(-32602);
    expect(res.error?.message).toMatch(/is a block filter: eth_getFilterLogs takes a log filter/);
    for (const method of ["eth_getFilterChanges", "eth_getFilterLogs"]) {
      expect((await call(node.url, method, ["0x1234"])).error).toEqual({
        code: -32000,
        message: "filter not found",
      });
    }
    expect(await ok("eth_uninstallFilter", ["0x1234"])).toBe(false);
    const bad = await call(node.url, "eth_newFilter", [{ blockHash: `0x${"11".repeat(32)}` }]);
    expect(bad.error?.code).toBe(-32602);
  });

  it("serves ethers' event listeners, which poll a log filter", async () => {
    const pinger = new Contract(contract, ["event Ping()"], provider);
    const heard = new Promise<string>((resolve) => {
      void pinger.once("Ping", (event: { log: { transactionHash: string } }) =>
        resolve(event.log.transactionHash),
      );
    });
    // ethers installs its filter on the first poll; give it a moment before the event.
    await new Promise((resolve) => setTimeout(resolve, 300));
    const mined = await ping();
    expect(await heard).toBe(mined.hash);
    // ethers then uninstalls its filter; let that request finish before the provider goes.
    await new Promise((resolve) => setTimeout(resolve, 300));
  });
});
