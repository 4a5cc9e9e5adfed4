import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { JsonRpcProvider, Wallet } from "ethers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hex, KEY0, ok, startUpstreamChain, type UpstreamChain } from "../helpers/forkUpstream.js";
import { call, type RunningNode, startNode } from "../helpers/node.js";
import { type RpcProxy, startProxy } from "../helpers/proxy.js";

// A fork restarted while its upstream is down: what it fetched before is in its datadir, the
// fork point in fork.json; what it never fetched is refused as unavailable until the upstream
// is back.
const KEY = "abcdefghijklmnopqrstuvwxyz012345";

let upstream: UpstreamChain;
let proxy: RpcProxy;
let dir: string;
let fork: RunningNode | undefined;

beforeAll(async () => {
  upstream = await startUpstreamChain(4);
  proxy = await startProxy(upstream.node.url);
  dir = mkdtempSync(join(tmpdir(), "nodex-fork-restart-"));
}, 60_000);

afterAll(async () => {
  await fork?.stop();
  await proxy?.close();
  await upstream?.node.stop();
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

/** The receipt of a transaction, polled for (a bounded number of times). */
async function waitForReceipt(url: string, hash: string) {
  for (let i = 0; i < 200; i++) {
    const receipt = await ok(url, "eth_getTransactionReceipt", [hash]);
    if (receipt !== null) return receipt;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`no receipt for ${hash}`);
}

const start = () =>
  startNode({
    datadir: dir,
    // A key in the path, as hosted providers take it: never shown.
    args: ["--fork-url", `${proxy.url}/v3/${KEY}`, "--fork-block", String(upstream.forkBlock)],
  });

describe("a fork restarted with its upstream down", () => {
  it("serves what it read and made, refuses the rest as unavailable, and reads again once the upstream is back", async () => {
    const [a0, a1, a2, a3] = upstream.accounts;
    fork = await start();
    const reads: [string, unknown[]][] = [
      ["eth_getBalance", [a1, "latest"]],
      ["eth_getStorageAt", [upstream.token, "0x3", "latest"]],
      ["eth_getCode", [upstream.token, "latest"]],
    ];
    const before = await Promise.all(reads.map(([m, p]) => ok(fork!.url, m, p)));
    expect(before[0]).toBe(hex(1001));
    expect(BigInt(before[1])).toBe(1_000_000n);
    expect(before[2]).toBe(await ok(upstream.node.url, "eth_getCode", [upstream.token, "latest"]));
    const provider = new JsonRpcProvider(fork.url, 33, { staticNetwork: true, cacheTimeout: -1 });
    provider.pollingInterval = 50;
    const tx = await new Wallet(KEY0, provider).sendTransaction({ to: a0, value: 5n });
    const receipt = await tx.wait();
    provider.destroy();
    expect(receipt!.blockNumber).toBe(upstream.forkBlock + 1);
    const block = await ok(fork.url, "eth_getBlockByNumber", [hex(receipt!.blockNumber), false]);
    expect(await fork.stop()).toBe(0);

    proxy.mode = "reset";
    const requestsBefore = proxy.requests;
    fork = await start();
    // The fork point is the datadir's: nothing was asked of the upstream to start.
    expect(fork.logs()).toContain('"from":"datadir"');
    expect(proxy.requests).toBe(requestsBefore);
    expect(await Promise.all(reads.map(([m, p]) => ok(fork!.url, m, p)))).toEqual(before);
    expect(await ok(fork.url, "eth_getBalance", [a0, "latest"])).toBe(hex(1000 + 5));
    expect(await ok(fork.url, "eth_getBlockByNumber", [block.number, false])).toEqual(block);
    expect((await ok(fork.url, "eth_getTransactionReceipt", [tx.hash])).status).toBe("0x1");
    expect(proxy.requests).toBe(requestsBefore);

    // Never fetched: refused, naming the upstream (redacted) as unavailable.
    const refused = await call(fork.url, "eth_getBalance", [a2, "latest"]);
    expect(refused.error?.code).toBe(-32002);
    expect(refused.error?.message).toContain("no upstream answered eth_getProof");
    expect(refused.error?.message).toContain(`${proxy.url}/v3/***`);
    expect(refused.error?.message).not.toContain(KEY);
    expect(proxy.requests).toBeGreaterThan(requestsBefore);
    // Still serving.
    expect(Number(await ok(fork.url, "eth_blockNumber"))).toBe(upstream.forkBlock + 1);

    // A call, and a transaction, that need state never fetched: refused alike, nothing mined.
    const holder = `0x70a08231${new Wallet(KEY0).address.slice(2).padStart(64, "0")}`;
    const refusedCall = await call(fork.url, "eth_call", [
      { to: upstream.token, data: holder },
      "latest",
    ]);
    expect(refusedCall.error?.code).toBe(-32002);
    const signed = await new Wallet(KEY0).signTransaction({
      to: a3,
      value: 7n,
      nonce: Number(
        await ok(fork.url, "eth_getTransactionCount", [new Wallet(KEY0).address, "latest"]),
      ),
      gasLimit: 50_000,
      gasPrice: BigInt(await ok(fork.url, "eth_gasPrice")),
      chainId: 33,
    });
    const refusedTx = await call(fork.url, "eth_sendRawTransaction", [signed]);
    expect(refusedTx.error?.code).toBe(-32002);
    expect(Number(await ok(fork.url, "eth_blockNumber"))).toBe(upstream.forkBlock + 1);

    proxy.mode = "503";
    const down = await call(fork.url, "eth_getStorageAt", [upstream.token, "0x2", "latest"]);
    expect(down.error?.code).toBe(-32002);
    expect(down.error?.message).toContain("HTTP 503");

    proxy.mode = "forward";
    expect(await ok(fork.url, "eth_getBalance", [a2, "latest"])).toBe(hex(1002));
    expect(
      BigInt(await ok(fork.url, "eth_call", [{ to: upstream.token, data: holder }, "latest"])),
    ).toBe(1_000_000n);
    // The refused transaction was not kept ("already known" otherwise): sending it again mines it.
    const mined = await ok(fork.url, "eth_sendRawTransaction", [signed]);
    const minedReceipt = await waitForReceipt(fork.url, mined);
    expect(Number(minedReceipt.blockNumber)).toBe(upstream.forkBlock + 2);
    expect(await ok(fork.url, "eth_getBalance", [a3, "latest"])).toBe(hex(1003 + 7));
    expect(await ok(fork.url, "eth_getStorageAt", [upstream.token, "0x2", "latest"])).toBe(
      await ok(upstream.node.url, "eth_getStorageAt", [
        upstream.token,
        "0x2",
        hex(upstream.forkBlock),
      ]),
    );
    expect(fork.logs()).not.toContain(KEY);
    expect(readFileSync(join(dir, "fork.json"), "utf8")).not.toContain(KEY);
  }, 60_000);
});
