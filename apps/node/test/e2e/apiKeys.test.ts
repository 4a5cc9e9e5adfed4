import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningNode, send, startNode } from "./helpers/node.js";

// Hosted mode: API keys in the last path segment.
const KEY = "k3y-for-tests_0001";
const OTHER = "another-key-0002";
let node: RunningNode;
let fromEnv: RunningNode;
beforeAll(async () => {
  [node, fromEnv] = await Promise.all([
    startNode({ args: ["--api-key", KEY, "--api-key", OTHER] }),
    startNode({ env: { NODEX_API_KEYS: `${KEY},${OTHER}` } }),
  ]);
});
afterAll(async () => {
  await Promise.all([node?.stop(), fromEnv?.stop()]);
});

const req = (method: string, params: unknown[] = []) => ({ jsonrpc: "2.0", id: 7, method, params });
const unauthorized = {
  jsonrpc: "2.0",
  id: null,
  error: { code: -32600, message: "unauthorized: the last path segment must be a valid API key" },
};

describe("hosted mode", () => {
  it.each(["/", "/wrong-key-123", `/${KEY}x`, `/${KEY}/extra`, `/${KEY.slice(0, -1)}`])(
    "answers %s with 401 and runs no method",
    async (path) => {
      const res = await send(node.url, req("eth_chainId"), { path });
      expect(res.status).toBe(401);
      expect(res.json).toEqual(unauthorized);
    },
  );

  it.each([`/${KEY}`, `/${OTHER}`, `/${KEY}/`, `/v1/${KEY}`, `/${KEY}?x=1`])(
    "serves %s",
    async (path) => {
      const res = await send(node.url, req("eth_chainId"), { path });
      expect(res.status).toBe(200);
      expect(res.json).toEqual({ jsonrpc: "2.0", id: 7, result: "0x21" });
    },
  );

  it("takes keys from NODEX_API_KEYS", async () => {
    expect((await send(fromEnv.url, req("eth_chainId"), { path: "/" })).status).toBe(401);
    const ok = await send(fromEnv.url, req("eth_chainId"), { path: `/${OTHER}` });
    expect(ok.json).toEqual({ jsonrpc: "2.0", id: 7, result: "0x21" });
  });

  it("returns no accounts", async () => {
    const res = await send(node.url, req("eth_accounts"), { path: `/${KEY}` });
    expect(res.json).toEqual({ jsonrpc: "2.0", id: 7, result: [] });
  });

  it("reports the served modules", async () => {
    const res = await send(node.url, req("rpc_modules"), { path: `/${KEY}` });
    expect(res.json).toEqual({
      jsonrpc: "2.0",
      id: 7,
      result: { web3: "1.0", net: "1.0", eth: "1.0", nodex: "1.0", txpool: "1.0", rpc: "1.0" },
    });
  });

  it("still serves /health without a key", async () => {
    const res = await send(node.url, undefined, { method: "GET", path: "/health" });
    expect(res.status).toBe(200);
  });

  it("checks the key before the content type", async () => {
    const res = await send(node.url, req("eth_chainId"), {
      path: "/nope-nope-nope",
      headers: { "content-type": "text/plain" },
    });
    expect(res.status).toBe(401);
  });
});

describe("local mode", () => {
  it("ignores the path", async () => {
    const local = await startNode();
    try {
      const res = await send(local.url, req("eth_chainId"), { path: "/whatever-key-here" });
      expect(res.json).toEqual({ jsonrpc: "2.0", id: 7, result: "0x21" });
      const accounts = await send(local.url, req("eth_accounts"));
      expect((accounts.json as { result: string[] }).result.length).toBe(20);
    } finally {
      await local.stop();
    }
  });
});
