import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { hex, ok, startUpstreamChain, type UpstreamChain } from "../helpers/forkUpstream.js";
import { type RunningNode, startNode } from "../helpers/node.js";
import { type RpcProxy, startProxy } from "../helpers/proxy.js";

// A fork's upstreams as they fail in the wild: rate limits waited out, a stalled one left for
// the next with one warning, credentials in a URL never shown.
let upstream: UpstreamChain;
const proxies: RpcProxy[] = [];
const forks: RunningNode[] = [];

beforeAll(async () => {
  upstream = await startUpstreamChain(6);
}, 60_000);

afterAll(async () => {
  for (const fork of forks) await fork.stop();
  for (const proxy of proxies) await proxy.close();
  await upstream?.node.stop();
});

async function proxyOf(target: string): Promise<RpcProxy> {
  const proxy = await startProxy(target);
  proxies.push(proxy);
  return proxy;
}

async function forkOf(urls: string[], extra: string[] = []): Promise<RunningNode> {
  const fork = await startNode({
    args: [
      ...urls.flatMap((u) => ["--fork-url", u]),
      "--fork-block",
      String(upstream.forkBlock),
      ...extra,
    ],
  });
  forks.push(fork);
  return fork;
}

/** The node's JSON log lines with this message. */
const logLines = (node: RunningNode, msg: string) =>
  node
    .logs()
    .split("\n")
    .filter((l) => l.includes(`"msg":"${msg}"`));

/** `http://user:secret@127.0.0.1:PORT/path?key=secret` for a proxy. */
const withCredentials = (proxy: RpcProxy) =>
  `${proxy.url.replace("http://", "http://user:secret@")}/path?key=secret`;

describe("a fork's upstreams failing", () => {
  it("waits out an upstream's 429 with Retry-After, then reads", async () => {
    const limited = await proxyOf(upstream.node.url);
    const fork = await forkOf([limited.url]);
    limited.tooManyRequests = 2;
    const before = limited.requests;
    expect(await ok(fork.url, "eth_getBalance", [upstream.accounts[0], "latest"])).toBe(hex(1000));
    expect(limited.requests - before).toBe(3);
    expect(limited.tooManyRequests).toBe(0);
    expect(logLines(fork, "Upstream rate limit, backing off")).toHaveLength(2);
  });

  it("fails over from a stalled upstream to a healthy one with one warning, never showing credentials", async () => {
    const primary = await proxyOf(upstream.node.url);
    const backup = await proxyOf(upstream.node.url);
    // A stalled request counts as failed after --fork-timeout (10 s unless told).
    const fork = await forkOf([withCredentials(primary), backup.url], ["--fork-timeout", "2"]);
    primary.mode = "stall";
    const [, a1, a2, a3, a4] = upstream.accounts;
    const balances = await Promise.all(
      [a1, a2, a3].map((a) => ok(fork.url, "eth_getBalance", [a, "latest"])),
    );
    expect(balances).toEqual([hex(1001), hex(1002), hex(1003)]);
    // Later reads go to the backup at once: the stalled upstream is passed over.
    const stalledCalls = primary.calls.length;
    expect(await ok(fork.url, "eth_getBalance", [a4, "latest"])).toBe(hex(1004));
    expect(primary.calls.length).toBe(stalledCalls);
    const warnings = logLines(fork, "Upstream failing, failing over");
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain(`${primary.url}/path`);
    expect(warnings[0]).toContain("no answer within 2000 ms");
    expect(warnings[0]).toContain(backup.url);
    expect(fork.logs()).toContain(`${primary.url}/path`);
    expect(fork.logs()).not.toContain("secret");
    expect(readFileSync(join(fork.datadir, "fork.json"), "utf8")).not.toContain("secret");
  }, 30_000);
});
