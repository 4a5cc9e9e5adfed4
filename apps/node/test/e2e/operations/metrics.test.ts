import { createHash } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  labelValues,
  metricsUrl,
  promtoolCheck,
  requirePromtool,
  sample,
} from "../helpers/metrics.js";
import { call, type RunningNode, send, startNode } from "../helpers/node.js";
import { connect, type WsClient } from "../helpers/ws.js";

// `/metrics` on its own listener (`--metrics-addr`), as Prometheus scrapes it: after known
// traffic over HTTP and WebSocket (with an API key, errors, refusals and made-up method names)
// the counts are those sent, method labels stay bounded, the gauges follow the node, and
// Prometheus's own `promtool check metrics` passes the whole text.
const KEY = "metrics-test-key-0001";
/** The id hosted mode gives a key of `--api-key`: what the key label says, never the key. */
const KEY_ID = `static-${createHash("sha256").update(KEY).digest("hex").slice(0, 12)}`;
const HTTP_CALLS = 7;
const WS_CALLS = 3;
const JUNK_METHODS = 40;

let node: RunningNode;
let rpcUrl: string;
let base: string;
const clients: WsClient[] = [];

async function scrape(): Promise<string> {
  const res = await fetch(`${base}/metrics`);
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toContain("text/plain");
  return res.text();
}

beforeAll(async () => {
  requirePromtool();
  node = await startNode({
    args: [
      "--api-key",
      KEY,
      "--rpc-hosted-allow",
      "evm",
      "--rpc-modules",
      "eth,net,web3,rpc,txpool,nodex,evm",
      "--metrics-addr",
      "127.0.0.1:0",
    ],
  });
  rpcUrl = `${node.url}/${KEY}`;
  base = await metricsUrl(node);
});

afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await node?.stop();
});

describe("/metrics after known traffic", () => {
  let text: string;

  beforeAll(async () => {
    for (let i = 0; i < HTTP_CALLS; i++) {
      expect((await call(rpcUrl, "eth_blockNumber")).result).toBeDefined();
    }
    const ws = await connect(rpcUrl.replace(/^http/, "ws"));
    clients.push(ws);
    for (let i = 0; i < WS_CALLS; i++) {
      expect((await ws.request("eth_blockNumber")).result).toBeDefined();
    }
    expect(typeof (await ws.request("eth_subscribe", ["newHeads"])).result).toBe("string");
    expect((await call(rpcUrl, "eth_newBlockFilter")).result).toBeDefined();
    // Two blocks: the head gauge follows.
    expect((await call(rpcUrl, "evm_mine")).error).toBeUndefined();
    expect((await call(rpcUrl, "evm_mine")).error).toBeUndefined();
    // Errors: a bad parameter, and a batch of made-up method names.
    expect((await call(rpcUrl, "eth_getBalance", ["0x1"])).error?.code).toBe(-32602);
    const junk = Array.from({ length: JUNK_METHODS }, (_, i) => ({
      jsonrpc: "2.0",
      id: i,
      method: `junk_${i}_${"x".repeat(i)}`,
    }));
    const batch = await send(rpcUrl, junk);
    expect((batch.json as unknown[]).length).toBe(JUNK_METHODS);
    // Refused for their key: a wrong key over HTTP, and a WebSocket upgrade without one.
    expect(
      (await send(`${node.url}/not-a-valid-key`, { jsonrpc: "2.0", id: 1, method: "eth_chainId" }))
        .status,
    ).toBe(401);
    await expect(connect(node.url.replace(/^http/, "ws"))).rejects.toThrow();
    text = await scrape();
  });

  it("passes promtool check metrics", async () => {
    const checked = await promtoolCheck(text);
    expect(checked.output).toBe("");
    expect(checked.code).toBe(0);
  });

  it("counts the calls sent over HTTP and WebSocket, by method, key id and outcome", () => {
    expect(
      sample(
        text,
        `nodex_rpc_requests_total{method="eth_blockNumber",key="${KEY_ID}",outcome="ok"}`,
      ),
    ).toBe(HTTP_CALLS + WS_CALLS);
    expect(sample(text, 'nodex_rpc_request_duration_seconds_count{method="eth_blockNumber"}')).toBe(
      HTTP_CALLS + WS_CALLS,
    );
    expect(
      sample(
        text,
        `nodex_rpc_requests_total{method="eth_getBalance",key="${KEY_ID}",outcome="invalid_params"}`,
      ),
    ).toBe(1);
    expect(
      sample(text, `nodex_rpc_requests_total{method="evm_mine",key="${KEY_ID}",outcome="ok"}`),
    ).toBe(2);
    expect(
      sample(
        text,
        `nodex_rpc_requests_total{method="other",key="${KEY_ID}",outcome="method_not_found"}`,
      ),
    ).toBe(JUNK_METHODS);
    expect(
      sample(text, 'nodex_rpc_requests_total{method="other",key="none",outcome="unauthorized"}'),
    ).toBe(2);
  });

  it("folds method names the node does not declare into one label value", () => {
    const methods = labelValues(text, "nodex_rpc_requests_total", "method");
    expect([...methods].filter((m) => m.startsWith("junk"))).toEqual([]);
    expect(methods).toEqual(
      new Set([
        "eth_blockNumber",
        "eth_subscribe",
        "eth_newBlockFilter",
        "evm_mine",
        "eth_getBalance",
        "other",
      ]),
    );
    const timed = labelValues(text, "nodex_rpc_request_duration_seconds", "method");
    expect([...timed].filter((m) => m.startsWith("junk"))).toEqual([]);
  });

  it("gauges the head, pool, filters, subscriptions and connections", () => {
    expect(sample(text, "nodex_head_block_number")).toBe(2);
    expect(sample(text, "nodex_head_age_seconds")).toBeGreaterThanOrEqual(0);
    expect(sample(text, "nodex_rpc_filters")).toBe(1);
    expect(sample(text, "nodex_rpc_subscriptions")).toBe(1);
    expect(sample(text, "nodex_rpc_ws_connections")).toBe(1);
    expect(sample(text, 'nodex_txpool_transactions{state="pending"}')).toBe(0);
    expect(sample(text, 'nodex_txpool_transactions{state="queued"}')).toBe(0);
    expect(sample(text, "nodex_peers")).toBe(0);
    expect(sample(text, "nodex_sync_active")).toBe(0);
    expect(sample(text, "nodex_storage_writable")).toBe(1);
    expect(sample(text, "nodex_network_chain_id")).toBe(33);
    expect(sample(text, "nodex_db_size_bytes")).toBeGreaterThan(0);
    expect(sample(text, "nodex_datadir_free_bytes")).toBeGreaterThan(0);
  });

  it("carries the process's own metrics: event-loop lag, heap, garbage collection", () => {
    expect(sample(text, "nodex_nodejs_eventloop_lag_seconds")).toBeGreaterThanOrEqual(0);
    expect(text).toMatch(/^nodex_nodejs_heap_size_used_bytes \d+/m);
    expect(text).toContain("# TYPE nodex_nodejs_gc_duration_seconds histogram");
  });
});

describe("the metrics listener", () => {
  it("serves /health and /ready, and no JSON-RPC", async () => {
    const health = await fetch(`${base}/health`);
    expect(health.status).toBe(200);
    expect(((await health.json()) as { status: string }).status).toBe("ok");
    const ready = await fetch(`${base}/ready`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toMatchObject({ ready: true, failed: [] });
    expect((await fetch(`${base}/`)).status).toBe(404);
    const post = await fetch(`${base}/metrics`, { method: "POST", body: "{}" });
    expect(post.status).toBe(405);
    expect(post.headers.get("allow")).toBe("GET, HEAD");
  });

  it("is off unless asked for", async () => {
    const plain = await startNode();
    try {
      expect(plain.logs()).not.toContain("Metrics listening");
      // /metrics is not on the JSON-RPC listener either.
      expect((await fetch(`${plain.url}/metrics`)).status).toBe(405);
    } finally {
      await plain.stop();
    }
  });

  it("refuses an address that is not HOST:PORT", async () => {
    const { runCli } = await import("../helpers/node.js");
    const out = await runCli(["--regtest", "--metrics-addr", "9464"]);
    expect(out.code).toBe(2);
    expect(out.stderr).toContain('"9464" is not HOST:PORT');
  });
});
