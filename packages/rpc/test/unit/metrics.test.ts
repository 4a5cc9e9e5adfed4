import { describe, expect, it } from "vitest";
import {
  DEFAULT_READY_OPTIONS,
  Dispatcher,
  type DispatchNotes,
  defineModule,
  MethodRegistry,
  method,
  NodeMetrics,
  outcomeOf,
  p,
  r,
  readinessOf,
} from "../../src/index.js";
import { fakeServices, logger } from "./fixtures.js";

const mod = defineModule("eth", {
  blockNumber: method({ params: [], result: r.quantity, handler: () => 5n }),
  getBalance: method({ params: [p.quantity], result: r.quantity, handler: () => 1n }),
  failing: method({
    params: [],
    result: r.quantity,
    handler: () => Promise.reject(new Error("boom")),
  }),
});

function setup(keyId?: string) {
  const registry = new MethodRegistry([mod], { enabled: new Set(["eth"]), hostedOff: new Set() });
  const metrics = new NodeMetrics();
  metrics.setKnownMethods(registry.declaredNames());
  const dispatcher = new Dispatcher(
    { maxBatchSize: 100, maxResponseBytes: 1_000_000, timeoutMs: 0 },
    { registry, services: fakeServices(), logger, metrics },
  );
  const ctx = keyId === undefined ? { hosted: false } : { hosted: true, keyId };
  return { metrics, dispatcher, ctx };
}

async function value(metrics: NodeMetrics, name: string, labels: Record<string, string>) {
  const found = (await metrics.registry.getSingleMetric(name)?.get())?.values.find((v) =>
    Object.entries(labels).every(([k, want]) => v.labels[k] === want),
  );
  return found?.value;
}

describe("NodeMetrics through the dispatcher", () => {
  it("counts calls by method, key id and outcome, and folds unknown names", async () => {
    const { metrics, dispatcher, ctx } = setup("k1");
    const notes: DispatchNotes = { methods: [], codes: [] };
    await dispatcher.dispatch(
      JSON.stringify([
        { jsonrpc: "2.0", id: 1, method: "eth_blockNumber" },
        { jsonrpc: "2.0", id: 2, method: "eth_getBalance", params: ["zz"] },
        { jsonrpc: "2.0", id: 3, method: "made_up_1" },
        { jsonrpc: "2.0", id: 4, method: "made_up_2" },
        { jsonrpc: "2.0", id: 5, method: "eth_failing" },
        { jsonrpc: "2.0", method: "eth_blockNumber" },
        5,
      ]),
      ctx,
      undefined,
      notes,
    );
    dispatcher.dispatch("{not json", ctx);
    const requests = "nodex_rpc_requests_total";
    expect(
      await value(metrics, requests, { method: "eth_blockNumber", key: "k1", outcome: "ok" }),
    ).toBe(2);
    expect(
      await value(metrics, requests, { method: "eth_getBalance", outcome: "invalid_params" }),
    ).toBe(1);
    expect(await value(metrics, requests, { method: "other", outcome: "method_not_found" })).toBe(
      2,
    );
    expect(
      await value(metrics, requests, { method: "eth_failing", outcome: "internal_error" }),
    ).toBe(1);
    expect(await value(metrics, requests, { method: "other", outcome: "invalid_request" })).toBe(1);
    expect(await value(metrics, requests, { method: "other", outcome: "parse_error" })).toBe(1);
    expect(notes.methods).toEqual([
      "eth_blockNumber",
      "eth_getBalance",
      "other",
      "other",
      "eth_blockNumber",
      "other",
      "eth_failing",
    ]);
    expect(notes.codes).toEqual([-32602, -32601, -32601, -32600, -32603]);
    const text = await metrics.render();
    expect(text).not.toContain("made_up");
  });

  it("moves a call whose answer was over the response size limit to limit_exceeded", async () => {
    const registry = new MethodRegistry([mod], {
      enabled: new Set(["eth"]),
      hostedOff: new Set(),
    });
    const metrics = new NodeMetrics();
    metrics.setKnownMethods(registry.declaredNames());
    const dispatcher = new Dispatcher(
      { maxBatchSize: 100, maxResponseBytes: 60, timeoutMs: 0 },
      { registry, services: fakeServices(), logger, metrics },
    );
    const notes: DispatchNotes = { methods: [], codes: [] };
    const one =
      '{"jsonrpc":"2.0","id":"a-long-id-to-pass-the-limit-of-sixty-bytes","method":"eth_blockNumber"}';
    const out = dispatcher.dispatch(one, { hosted: false }, undefined, notes) as string;
    expect(JSON.parse(out).error.code).toBe(-32011);
    expect(notes.codes).toEqual([-32011]);
    const batch = dispatcher.dispatch(
      JSON.stringify([
        { jsonrpc: "2.0", id: 1, method: "eth_blockNumber" },
        { jsonrpc: "2.0", id: 2, method: "eth_blockNumber" },
      ]),
      { hosted: false },
    ) as string;
    expect((JSON.parse(batch) as { error?: { code: number } }[])[1]?.error?.code).toBe(-32011);
    const requests = "nodex_rpc_requests_total";
    expect(await value(metrics, requests, { method: "eth_blockNumber", outcome: "ok" })).toBe(1);
    expect(
      await value(metrics, requests, { method: "eth_blockNumber", outcome: "limit_exceeded" }),
    ).toBe(2);
  });

  it("labels calls without a key id as none", async () => {
    const { metrics, dispatcher, ctx } = setup();
    dispatcher.dispatch('{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber"}', ctx);
    expect(
      await value(metrics, "nodex_rpc_requests_total", { method: "eth_blockNumber", key: "none" }),
    ).toBe(1);
  });

  it("takes rate-limited and unauthorized requests from the hooks", async () => {
    const { metrics } = setup();
    metrics.rateLimited("k2", "eth_blockNumber");
    metrics.rateLimited("k2", "junk_method");
    metrics.rateLimited(undefined);
    metrics.unauthorized();
    expect(await value(metrics, "nodex_rpc_rate_limited_total", { key: "k2" })).toBe(2);
    expect(await value(metrics, "nodex_rpc_rate_limited_total", { key: "none" })).toBe(1);
    const requests = "nodex_rpc_requests_total";
    expect(
      await value(metrics, requests, {
        method: "eth_blockNumber",
        key: "k2",
        outcome: "rate_limited",
      }),
    ).toBe(1);
    expect(
      await value(metrics, requests, { method: "other", key: "k2", outcome: "rate_limited" }),
    ).toBe(1);
    expect(await value(metrics, requests, { method: "other", outcome: "unauthorized" })).toBe(1);
  });

  it("classes error codes into a few outcomes", () => {
    expect(outcomeOf(0)).toBe("ok");
    expect(outcomeOf(3)).toBe("reverted");
    expect(outcomeOf(-32010)).toBe("transaction_rejected");
    expect(outcomeOf(-32005)).toBe("limit_exceeded");
    expect(outcomeOf(-32099)).toBe("server_error");
    expect(outcomeOf(-33000)).toBe("other_error");
  });
});

describe("readinessOf", () => {
  const health = { status: "ok" as const };
  const view = (o: {
    head: bigint;
    peers: number;
    listening: boolean;
    best?: bigint;
    syncingTo?: bigint;
    stamp?: number;
  }) => {
    const base = fakeServices();
    return {
      chain: {
        ...base.chain,
        blockNumber: () => o.head,
        ...(o.stamp === undefined ? {} : { headTimestamp: () => o.stamp! }),
      },
      peers: {
        ...base.peers,
        listening: () => o.listening,
        peerCount: () => o.peers,
        bestPeerBlock: () => o.best,
        syncing: () =>
          o.syncingTo === undefined
            ? (false as const)
            : { startingBlock: 0n, currentBlock: o.head, highestBlock: o.syncingTo },
      },
    };
  };

  it("fails sync past the blocks behind the best peer, with the figures", () => {
    const report = readinessOf(
      health,
      view({ head: 100n, peers: 3, listening: true, best: 111n }),
      DEFAULT_READY_OPTIONS,
    );
    expect(report.ready).toBe(false);
    expect(report.failed).toEqual(["sync"]);
    expect(report.checks).toMatchObject({
      sync: { ok: false, head: 100, bestPeer: 111, behind: 11, maxBehind: 10, syncing: false },
    });
    const near = readinessOf(
      health,
      view({ head: 101n, peers: 3, listening: true, best: 111n }),
      DEFAULT_READY_OPTIONS,
    );
    expect(near.ready).toBe(true);
  });

  it("takes the sync's target when it is beyond what the peers told", () => {
    const report = readinessOf(
      health,
      view({ head: 10n, peers: 1, listening: true, best: 12n, syncingTo: 500n }),
      DEFAULT_READY_OPTIONS,
    );
    expect(report.checks).toMatchObject({
      sync: { ok: false, bestPeer: 500, behind: 490, syncing: true },
    });
  });

  it("has no sync check without the peer-to-peer network, and a head-age check when asked", () => {
    const now = Math.floor(Date.now() / 1000);
    const report = readinessOf(
      { status: "degraded" },
      view({ head: 1n, peers: 0, listening: false, stamp: now - 120 }),
      { minPeers: 0, maxBlocksBehind: 10, maxHeadAgeSeconds: 60 },
    );
    expect(report.failed).toEqual(["storage", "headAge"]);
    expect(report.checks.sync).toBeUndefined();
    expect(
      (report.checks as Record<string, { seconds: number }>).headAge!.seconds,
    ).toBeGreaterThanOrEqual(120);
  });
});
