import { afterAll, describe, expect, it } from "vitest";
import { metricsUrl } from "../helpers/metrics.js";
import { type RunningNode, send, startNode } from "../helpers/node.js";
import { p2pAddress, until } from "../helpers/p2p.js";

// /ready as a balancer polls it: 503 with the failed check and its figures while a follower
// has fewer peers than --ready-min-peers, on the JSON-RPC listener and the metrics listener
// alike; 200 once a peer is there; /health is 200 throughout.
interface Ready {
  readonly status: string;
  readonly ready: boolean;
  readonly failed: readonly string[];
  readonly checks: Record<string, Record<string, unknown>>;
}

const nodes: RunningNode[] = [];
afterAll(async () => {
  await Promise.all(nodes.map((n) => n.stop()));
});

async function start(host: string, args: string[]): Promise<RunningNode> {
  const node = await startNode({
    network: "--devnet",
    args: ["--p2p-host", host, "--p2p-port", "0", "--metrics-addr", "127.0.0.1:0", ...args],
  });
  nodes.push(node);
  return node;
}

async function ready(base: string): Promise<{ status: number; body: Ready }> {
  const res = await send(base, undefined, { method: "GET", path: "/ready" });
  return { status: res.status, body: res.json as Ready };
}

describe("/ready", () => {
  it("is 503 while a follower has fewer peers than --ready-min-peers, and says so", async () => {
    const follower = await start("127.0.0.90", ["--ready-min-peers", "1", "--no-automine"]);
    const metrics = await metricsUrl(follower);
    for (const base of [follower.url, metrics]) {
      const { status, body } = await ready(base);
      expect(status).toBe(503);
      expect(body.ready).toBe(false);
      expect(body.failed).toEqual(["peers"]);
      expect(body.checks.peers).toEqual({ ok: false, peers: 0, min: 1 });
      expect(body.checks.storage).toEqual({ ok: true });
      expect(body.checks.sync).toMatchObject({ ok: true, head: 0, behind: 0, maxBehind: 10 });
      const health = await send(base, undefined, { method: "GET", path: "/health" });
      expect(health.status).toBe(200);
    }

    // A peer comes: ready.
    await start("127.0.0.91", ["--bootnodes", p2pAddress(follower)]);
    const fine = await until("the follower to be ready", async () => {
      const r = await ready(follower.url);
      return r.status === 200 ? r.body : undefined;
    });
    expect(fine).toMatchObject({ ready: true, failed: [] });
    expect(fine.checks.peers).toEqual({ ok: true, peers: 1, min: 1 });
    expect((await ready(metrics)).status).toBe(200);
  });

  it("is 503 when the head is older than --ready-max-head-age", async () => {
    // Regtest's genesis is dated 1970: its head is decades old until a block is mined.
    const node = await startNode({ args: ["--ready-max-head-age", "3600"] });
    nodes.push(node);
    const { status, body } = await ready(node.url);
    expect(status).toBe(503);
    expect(body.failed).toEqual(["headAge"]);
    expect(body.checks.headAge).toMatchObject({ ok: false, max: 3600 });
    expect(body.checks.headAge?.seconds as number).toBeGreaterThan(3600);
    const mined = await send(node.url, { jsonrpc: "2.0", id: 1, method: "evm_mine", params: [] });
    expect(mined.status).toBe(200);
    const after = await ready(node.url);
    expect(after.status).toBe(200);
    expect(after.body.checks.headAge).toMatchObject({ ok: true, max: 3600 });
  });
});
