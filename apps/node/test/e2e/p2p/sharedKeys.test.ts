import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningNode, runCli, send, startNode } from "../helpers/node.js";
import { until } from "../helpers/p2p.js";
import {
  type RunningHaproxy,
  type RunningRedis,
  startHaproxy,
  startRedis,
} from "../helpers/services.js";
import { connect } from "../helpers/ws.js";

// Two hosted replicas behind HAProxy (round-robin) sharing one Redis: the API keys `nodex keys
// --redis` writes there, their revocations, and the rate limits counted across the replicas.
let redis: RunningRedis;
let replicas: RunningNode[] = [];
let lb: RunningHaproxy;

beforeAll(async () => {
  redis = await startRedis();
  replicas = await Promise.all(
    [0, 1].map(() => startNode({ args: ["--hosted", "--redis", redis.url] })),
  );
  lb = await startHaproxy(replicas.map((r) => ({ port: r.port })));
  await until("HAProxy to see both replicas up", async () => {
    const servers = Object.values(await lb.servers());
    return servers.length === 2 && servers.every((s) => s === "UP") ? true : undefined;
  });
}, 60_000);

afterAll(async () => {
  await lb?.stop();
  await Promise.all(replicas.map((r) => r.stop()));
  await redis?.stop();
});

const keys = (args: string[]) => runCli(["keys", ...args, "--regtest", "--redis", redis.url]);

async function create(extra: string[] = []): Promise<{ id: string; key: string }> {
  const out = await keys(["create", "--name", "e2e", ...extra]);
  expect(out.code, out.stderr).toBe(0);
  const id = /id:\s+(\S+)/.exec(out.stdout)![1]!;
  const key = /key:\s+(\S+)/.exec(out.stdout)![1]!;
  return { id, key };
}

const blockNumber = (url: string, key: string) =>
  send(`${url}/${key}`, { jsonrpc: "2.0", id: 1, method: "eth_blockNumber", params: [] });

/** Polls until every replica, and the balancer, answer `status` for `key`. */
async function everywhere(key: string, status: number, what: string) {
  await until(
    what,
    async () => {
      const answers = await Promise.all(
        [...replicas.map((r) => r.url), lb.url].map((u) => blockNumber(u, key)),
      );
      return answers.every((a) => a.status === status) ? answers : undefined;
    },
    20_000,
  );
}

describe("API keys and limits shared through Redis", () => {
  it("serves a key created with nodex keys create --redis on both replicas, and refuses it on both once revoked", async () => {
    const { id, key } = await create();
    // Not in the datadir of either replica: only in Redis.
    await everywhere(key, 200, "both replicas to serve the new key");
    const ok = await blockNumber(lb.url, key);
    expect(ok.json).toMatchObject({ result: expect.stringMatching(/^0x/) });

    const revoked = await keys(["revoke", id]);
    expect(revoked.code, revoked.stderr).toBe(0);
    await everywhere(key, 401, "both replicas to refuse the revoked key");
    const refused = await blockNumber(replicas[1]!.url, key);
    expect(refused.json).toMatchObject({
      error: { code: -32600, message: "unauthorized: this API key was revoked" },
    });

    const again = await keys(["revoke", id]);
    expect(again.stdout).toContain("revoked already");
    const unknown = await keys(["revoke", "key_nosuchkey"]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain("no key has the id key_nosuchkey");
  });

  it("counts a key's rate limit across both replicas, and shows its use in nodex keys list", async () => {
    // eth_blockNumber costs 10 units: 20 requests a second.
    const rate = 200;
    const { id, key } = await create(["--rate", String(rate)]);
    await everywhere(key, 200, "both replicas to serve the new key");
    // Let the bucket refill from the requests of the wait above.
    await new Promise((r) => setTimeout(r, 1_500));
    // One burst, spread by the balancer over both replicas: each replica alone would let a
    // second's worth through (40 requests); together they let one through, and what refills
    // while the burst runs.
    const burst = await Promise.all(Array.from({ length: 60 }, () => blockNumber(lb.url, key)));
    const admitted = burst.filter((r) => r.status === 200).length;
    const limited = burst.filter((r) => r.status === 429);
    expect(admitted + limited.length).toBe(60);
    expect(admitted * 10).toBeGreaterThanOrEqual(rate);
    expect(admitted * 10).toBeLessThan(2 * rate);
    expect(limited[0]!.json).toMatchObject({
      error: { code: -32005, message: expect.stringContaining("rate limit of 200 units") },
    });
    expect(Number(limited[0]!.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);

    // What Redis counts of the key today: every replica's units.
    const listed = await until("nodex keys list to show the key's units", async () => {
      const out = await keys(["list", "--json"]);
      expect(out.code, out.stderr).toBe(0);
      const row = (
        JSON.parse(out.stdout) as { id: string; unitsToday: number; lastUsed: string | null }[]
      ).find((r) => r.id === id);
      return row !== undefined && row.unitsToday >= admitted * 10 ? row : undefined;
    });
    expect(listed.lastUsed).not.toBeNull();
  });

  it("refuses keyed requests with 503 (-32002) while Redis is down past the grace period, and serves them again once it is back", async () => {
    const { key } = await create();
    await everywhere(key, 200, "both replicas to serve the new key");
    const ws = await connect(`${replicas[0]!.url}/${key}`);
    expect(await ws.request("eth_chainId")).toMatchObject({ result: expect.any(String) });
    await redis.down();
    try {
      await everywhere(key, 503, "both replicas to refuse keyed requests without Redis");
      const refused = await blockNumber(replicas[0]!.url, key);
      expect(refused.status).toBe(503);
      expect(refused.headers.get("retry-after")).toBe("1");
      expect(refused.json).toMatchObject({
        error: { code: -32002, message: expect.stringContaining("API keys unavailable") },
      });
      // Over WebSocket: the message is refused, the connection stays.
      const from = ws.messages.length;
      ws.send({ jsonrpc: "2.0", id: 99, method: "eth_chainId", params: [] });
      expect(await ws.next((m) => m.error !== undefined, 10_000, from)).toMatchObject({
        error: { code: -32002, message: expect.stringContaining("API keys unavailable") },
      });
      expect(ws.socket.readyState).toBe(ws.socket.OPEN);
      // Unkeyed health checks still pass: the balancer keeps the replicas.
      const health = await send(replicas[0]!.url, undefined, { method: "GET", path: "/health" });
      expect(health.status).toBe(200);
      const listed = await keys(["list"]);
      expect(listed.code).toBe(1);
      expect(listed.stderr).toContain("not reachable");
    } finally {
      await redis.up();
    }
    await everywhere(key, 200, "both replicas to serve the key again once Redis is back");
    expect(await ws.request("eth_chainId")).toMatchObject({ result: expect.any(String) });
    await ws.close();
  });
});
