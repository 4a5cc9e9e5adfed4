import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningNode, runCli, send, startNode } from "./helpers/node.js";

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

  it.each([
    "eth_getWork",
    "eth_submitWork",
    "eth_submitHashrate",
    "debug_traceTransaction",
    "debug_traceCall",
    "hardhat_setBalance",
    "anvil_mine",
    "eth_sendUnsignedTransaction",
  ])("turns off the operator's input or development control %s", async (method) => {
    const res = await send(node.url, req(method), { path: `/${KEY}` });
    const module = method.split("_")[0]!;
    expect(res.json).toEqual({
      jsonrpc: "2.0",
      id: 7,
      error: {
        code: -32601,
        message:
          module !== "eth"
            ? `the method ${method} is not available: the ${module} module is disabled in hosted mode`
            : `the method ${method} is not available: it is disabled in hosted mode`,
      },
    });
  });

  it("serves eth_createAccessList as it serves eth_call", async () => {
    const res = await send(
      node.url,
      req("eth_createAccessList", [{ to: "0x000000000000000000000000000000000000beef" }]),
      { path: `/${KEY}` },
    );
    expect(res.json).toEqual({
      jsonrpc: "2.0",
      id: 7,
      result: { accessList: [], gasUsed: "0x5258" },
    });
  });

  it("checks the key before the content type", async () => {
    const res = await send(node.url, req("eth_chainId"), {
      path: "/nope-nope-nope",
      headers: { "content-type": "text/plain" },
    });
    expect(res.status).toBe(401);
  });
});

describe("hosted mode with operator inputs allowed", () => {
  it("serves what --rpc-hosted-allow names, and says so at start", async () => {
    const allowed = await startNode({
      args: [
        "--api-key",
        KEY,
        "--rpc-modules",
        "eth,debug",
        "--rpc-hosted-allow",
        "debug,eth_submitHashrate",
      ],
    });
    try {
      const rate = `0x${"00".repeat(31)}10`;
      const id = `0x${"ab".repeat(32)}`;
      const res = await send(allowed.url, req("eth_submitHashrate", [rate, id]), {
        path: `/${KEY}`,
      });
      expect(res.json).toEqual({ jsonrpc: "2.0", id: 7, result: true });
      const trace = await send(
        allowed.url,
        req("debug_traceTransaction", [`0x${"11".repeat(32)}`]),
        {
          path: `/${KEY}`,
        },
      );
      expect((trace.json as { error?: { code: number } }).error?.code).not.toBe(-32601);
      const work = await send(allowed.url, req("eth_getWork"), { path: `/${KEY}` });
      expect((work.json as { error: { message: string } }).error.message).toBe(
        "the method eth_getWork is not available: it is disabled in hosted mode",
      );
      const warnings = allowed
        .logs()
        .split("\n")
        .filter((l) =>
          l.includes("Served to every API key holder although hosted mode turns it off"),
        );
      expect(warnings.map((l) => (JSON.parse(l) as { allowed: string }).allowed).sort()).toEqual([
        "debug",
        "eth_submitHashrate",
      ]);
    } finally {
      await allowed.stop();
    }
  });

  it("refuses to allow what hosted mode does not turn off", async () => {
    const res = await runCli(["--regtest", "--rpc-hosted-allow", "eth_call"]);
    expect(res.code).toBe(2);
    expect(res.stderr).toContain("invalid value for --rpc-hosted-allow");
  });
});

describe("blank API keys", () => {
  // A deployment that writes --api-key "$KEY" with KEY unset must not start an open node.
  it.each([
    [["--api-key", ""], {}],
    [["--api-key", " "], {}],
    [["--api-key", "goodkey-0001,"], {}],
    [[], { NODEX_API_KEYS: "," }],
    [[], { NODEX_API_KEYS: "" }],
    [[], { NODEX_API_KEYS: " " }],
  ])("refuses %j %j with exit 2", async (args, env) => {
    const res = await runCli(["--regtest", "--no-p2p", "--rpc-port", "0", ...args], env);
    expect(res.code).toBe(2);
    expect(res.stderr).toMatch(
      /^nodex: invalid value for (--api-key|NODEX_API_KEYS): an API key is empty \(a variable that is not set\?\) \(see nodex --help\)\n$/,
    );
    expect(res.stdout).not.toContain("Private Key");
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
