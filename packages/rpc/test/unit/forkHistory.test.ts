import { describe, expect, it } from "vitest";
import {
  Dispatcher,
  defineModule,
  type ForkHistory,
  MethodRegistry,
  method,
  p,
  RawJson,
  r,
} from "../../src/index.js";
import { fakeServices, logger } from "./fixtures.js";

/** Local stand-ins of the chain methods: each answers where it ran and with what. */
const local = defineModule("eth", {
  getBlockByNumber: method({
    params: [p.blockNumberOrTag, p.optional(p.boolean, false)],
    result: r.json,
    handler: (_s, [block]) => ({ local: "block", block: JSON.stringify(block, big) }),
  }),
  getBlockByHash: method({
    params: [p.hash, p.optional(p.boolean, false)],
    result: r.json,
    handler: () => ({ local: "blockByHash" }),
  }),
  getBalance: method({
    params: [p.address, p.optional(p.blockSelector, { kind: "tag", tag: "latest" })],
    result: r.quantity,
    handler: () => 7n,
  }),
  getTransactionReceipt: method({
    params: [p.hash],
    result: r.json,
    handler: () => ({ local: "receipt" }),
  }),
  getLogs: method({
    params: [p.logFilter],
    result: r.raw,
    handler: (_s, [filter]) =>
      new RawJson(
        Buffer.from(JSON.stringify([{ local: true, from: JSON.stringify(filter.range, big) }])),
      ),
  }),
});

function big(_k: string, v: unknown) {
  return typeof v === "bigint" ? v.toString() : v;
}

const HASH_LOCAL = `0x${"11".repeat(32)}`;
const HASH_OLD = `0x${"22".repeat(32)}`;
const ADDRESS = `0x${"33".repeat(20)}`;

function setup(forkBlock = 100n, head = 120n) {
  const forwarded: { method: string; params: readonly unknown[] }[] = [];
  const history: ForkHistory = {
    forkBlock,
    upstreamUrls: ["http://127.0.0.1:8545"],
    head: () => head,
    isLocalBlock: async (hash) => hash === HASH_LOCAL,
    isLocalTransaction: async (hash) => hash === HASH_LOCAL,
    forward: async (method, params) => {
      forwarded.push({ method, params });
      if (method === "eth_getLogs") return [{ upstream: true }];
      if (method === "eth_getBalance") return "0x2a";
      return { upstream: method };
    },
  };
  const registry = new MethodRegistry([local], { enabled: new Set(["eth"]), hostedOff: new Set() });
  const dispatcher = new Dispatcher(
    { maxBatchSize: 100, maxResponseBytes: 1 << 20, timeoutMs: 0 },
    { registry, services: fakeServices(), logger, history },
  );
  const ask = async (method: string, params: unknown[]) => {
    const out = await dispatcher.dispatch(
      JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
      {},
    );
    return JSON.parse(out as string);
  };
  return { ask, forwarded };
}

describe("a fork's history", () => {
  it("asks the upstream for blocks up to the fork block, the local chain after it", async () => {
    const { ask, forwarded } = setup();
    expect((await ask("eth_getBlockByNumber", ["0x64", false])).result).toEqual({
      upstream: "eth_getBlockByNumber",
    });
    expect((await ask("eth_getBlockByNumber", ["earliest"])).result).toEqual({
      upstream: "eth_getBlockByNumber",
    });
    expect((await ask("eth_getBlockByNumber", ["0x65"])).result.local).toBe("block");
    expect((await ask("eth_getBlockByNumber", ["latest"])).result.local).toBe("block");
    expect(forwarded.map((f) => f.params[0])).toEqual(["0x64", "earliest"]);
  });

  it("reads the fork block's state locally and older states upstream, as asked", async () => {
    const { ask, forwarded } = setup();
    expect((await ask("eth_getBalance", [ADDRESS, "0x64"])).result).toBe("0x7");
    expect((await ask("eth_getBalance", [ADDRESS])).result).toBe("0x7");
    expect((await ask("eth_getBalance", [ADDRESS, "0x63"])).result).toBe("0x2a");
    expect((await ask("eth_getBalance", [ADDRESS, { blockHash: HASH_OLD }])).result).toBe("0x2a");
    expect((await ask("eth_getBalance", [ADDRESS, { blockHash: HASH_LOCAL }])).result).toBe("0x7");
    expect(forwarded).toEqual([
      { method: "eth_getBalance", params: [ADDRESS, "0x63"] },
      { method: "eth_getBalance", params: [ADDRESS, { blockHash: HASH_OLD }] },
    ]);
  });

  it("finds blocks and transactions by hash locally first", async () => {
    const { ask } = setup();
    expect((await ask("eth_getBlockByHash", [HASH_LOCAL])).result).toEqual({
      local: "blockByHash",
    });
    expect((await ask("eth_getBlockByHash", [HASH_OLD])).result).toEqual({
      upstream: "eth_getBlockByHash",
    });
    expect((await ask("eth_getTransactionReceipt", [HASH_LOCAL])).result).toEqual({
      local: "receipt",
    });
    expect((await ask("eth_getTransactionReceipt", [HASH_OLD])).result).toEqual({
      upstream: "eth_getTransactionReceipt",
    });
  });

  it("splits a log query at the fork block: the upstream's logs, then the local ones", async () => {
    const { ask, forwarded } = setup();
    const across = await ask("eth_getLogs", [{ fromBlock: "0x10", toBlock: "latest" }]);
    const after101 = JSON.stringify({
      from: { kind: "number", number: "101" },
      to: { kind: "tag", tag: "latest" },
    });
    expect(across.result).toEqual([{ upstream: true }, { local: true, from: after101 }]);
    expect(forwarded[0]).toEqual({
      method: "eth_getLogs",
      params: [{ fromBlock: "0x10", toBlock: "0x64" }],
    });
    const before = await ask("eth_getLogs", [{ fromBlock: "earliest", toBlock: "0x20" }]);
    expect(before.result).toEqual([{ upstream: true }]);
    expect(forwarded[1]?.params).toEqual([{ fromBlock: "0x0", toBlock: "0x20" }]);
    const after = await ask("eth_getLogs", [{ fromBlock: "0x65" }]);
    expect(after.result).toEqual([{ local: true, from: after101 }]);
    expect(forwarded).toHaveLength(2);
  });

  it("asks the upstream alone while no block was made on the fork", async () => {
    const { ask, forwarded } = setup(100n, 100n);
    const logs = await ask("eth_getLogs", [{ fromBlock: "0x10" }]);
    expect(logs.result).toEqual([{ upstream: true }]);
    expect(forwarded[0]?.params).toEqual([{ fromBlock: "0x10", toBlock: "0x64" }]);
  });

  it("checks params before asking anyone", async () => {
    const { ask, forwarded } = setup();
    const bad = await ask("eth_getBlockByNumber", ["0xzz"]);
    expect(bad.error.code).toBe(-32602);
    expect(forwarded).toHaveLength(0);
  });
});
