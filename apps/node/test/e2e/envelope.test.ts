import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningNode, send, startNode } from "./helpers/node.js";

// The JSON-RPC 2.0 envelope as a client sees it over raw HTTP.
let node: RunningNode;
beforeAll(async () => {
  node = await startNode({ args: ["--rpc-max-batch-size", "5"] });
});
afterAll(async () => {
  await node?.stop();
});

const chainId = (id: unknown) => ({ jsonrpc: "2.0", id, method: "eth_chainId", params: [] });

describe("single requests", () => {
  it.each([
    [1, 1],
    ["abc", "abc"],
    [null, null],
    [0, 0],
    [-7, -7],
    [1.5, 1.5],
    ["", ""],
  ])("echoes id %j exactly", async (id, echoed) => {
    const res = await send(node.url, chainId(id));
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/json");
    expect(res.json).toEqual({ jsonrpc: "2.0", id: echoed, result: "0x21" });
  });

  it("treats absent params as none", async () => {
    const res = await send(node.url, { jsonrpc: "2.0", id: 3, method: "eth_chainId" });
    expect(res.json).toEqual({ jsonrpc: "2.0", id: 3, result: "0x21" });
  });

  it("answers -32700 for a body that is not JSON", async () => {
    const res = await send(node.url, '{"jsonrpc":"2.0","id":1,"method":');
    expect(res.status).toBe(200);
    expect(res.json).toEqual({
      jsonrpc: "2.0",
      id: null,
      error: { code: -32700, message: "parse error: body is not valid JSON" },
    });
  });

  it("answers -32700 for an empty body", async () => {
    const res = await send(node.url, "");
    expect(res.json).toMatchObject({ id: null, error: { code: -32700 } });
  });

  it.each([
    ["a number", 5, null, "invalid request: expected a request object"],
    ["a string", '"hello"', null, "invalid request: expected a request object"],
    ["null", "null", null, "invalid request: expected a request object"],
    [
      "a wrong version",
      { jsonrpc: "1.0", id: 4, method: "eth_chainId", params: [] },
      4,
      'invalid request: jsonrpc must be "2.0"',
    ],
    [
      "no version",
      { id: 4, method: "eth_chainId", params: [] },
      4,
      'invalid request: jsonrpc must be "2.0"',
    ],
    [
      "no method",
      { jsonrpc: "2.0", id: 5, params: [] },
      5,
      "invalid request: method must be a string",
    ],
    [
      "a numeric method",
      { jsonrpc: "2.0", id: 5, method: 42, params: [] },
      5,
      "invalid request: method must be a string",
    ],
    [
      "object params",
      { jsonrpc: "2.0", id: 6, method: "eth_chainId", params: {} },
      6,
      "invalid request: params must be an array",
    ],
    [
      "string params",
      { jsonrpc: "2.0", id: 6, method: "eth_chainId", params: "x" },
      6,
      "invalid request: params must be an array",
    ],
    [
      "null params",
      { jsonrpc: "2.0", id: 6, method: "eth_chainId", params: null },
      6,
      "invalid request: params must be an array",
    ],
    [
      "an object id",
      { jsonrpc: "2.0", id: { a: 1 }, method: "eth_chainId", params: [] },
      null,
      "invalid request: id must be a string, a number or null",
    ],
    [
      "a boolean id",
      { jsonrpc: "2.0", id: true, method: "eth_chainId", params: [] },
      null,
      "invalid request: id must be a string, a number or null",
    ],
  ])("answers -32600 for %s", async (_what, body, id, message) => {
    const res = await send(node.url, body);
    expect(res.status).toBe(200);
    expect(res.json).toEqual({ jsonrpc: "2.0", id, error: { code: -32600, message } });
  });

  it("answers -32601 for an unknown method, echoing the id", async () => {
    const res = await send(node.url, {
      jsonrpc: "2.0",
      id: 9,
      method: "eth_noSuchThing",
      params: [],
    });
    expect(res.json).toEqual({
      jsonrpc: "2.0",
      id: 9,
      error: {
        code: -32601,
        message: "the method eth_noSuchThing does not exist/is not available",
      },
    });
  });

  it.each([
    ["eth_getCompilers", "compilers are not included in the node, for security reasons"],
    ["eth_compileSolidity", "compilers are not included in the node, for security reasons"],
    ["eth_compileLLL", "compilers are not included in the node, for security reasons"],
    ["eth_compileSerpent", "compilers are not included in the node, for security reasons"],
    ["db_putString", "the db_ methods are deprecated"],
    ["db_getHex", "the db_ methods are deprecated"],
    ["shh_post", "the whisper protocol is not supported"],
    ["shh_version", "the whisper protocol is not supported"],
  ])("answers -32601 with the reason for the unsupported %s", async (method, reason) => {
    const res = await send(node.url, { jsonrpc: "2.0", id: 1, method, params: [] });
    expect(res.json).toEqual({
      jsonrpc: "2.0",
      id: 1,
      error: { code: -32601, message: `the method ${method} is not supported: ${reason}` },
    });
  });

  it("answers -32602 naming the argument for malformed params", async () => {
    const res = await send(node.url, {
      jsonrpc: "2.0",
      id: 1,
      method: "web3_sha3",
      params: ["0xabc"],
    });
    expect(res.json).toEqual({
      jsonrpc: "2.0",
      id: 1,
      error: { code: -32602, message: "invalid argument 0: hex string of odd length" },
    });
  });

  it("answers -32602 for a missing required argument and for too many", async () => {
    const missing = await send(node.url, {
      jsonrpc: "2.0",
      id: 1,
      method: "web3_sha3",
      params: [],
    });
    expect(missing.json).toEqual({
      jsonrpc: "2.0",
      id: 1,
      error: { code: -32602, message: "missing value for required argument 0" },
    });
    const extra = await send(node.url, {
      jsonrpc: "2.0",
      id: 2,
      method: "eth_chainId",
      params: [1],
    });
    expect(extra.json).toEqual({
      jsonrpc: "2.0",
      id: 2,
      error: { code: -32602, message: "too many arguments, want at most 0" },
    });
  });
});

describe("notifications", () => {
  it("gets no response body", async () => {
    const res = await send(node.url, { jsonrpc: "2.0", method: "eth_chainId", params: [] });
    expect(res.status).toBe(200);
    expect(res.text).toBe("");
  });

  it("gets no response even when the method is unknown", async () => {
    const res = await send(node.url, { jsonrpc: "2.0", method: "eth_noSuchThing", params: [] });
    expect(res.text).toBe("");
  });

  it("a batch of only notifications gets no response body", async () => {
    const note = { jsonrpc: "2.0", method: "eth_chainId", params: [] };
    const res = await send(node.url, [note, note]);
    expect(res.status).toBe(200);
    expect(res.text).toBe("");
  });
});

describe("batches", () => {
  it("answers each member in order", async () => {
    const res = await send(node.url, [
      chainId(1),
      chainId("two"),
      { jsonrpc: "2.0", id: 3, method: "net_version", params: [] },
    ]);
    expect(res.status).toBe(200);
    expect(res.json).toEqual([
      { jsonrpc: "2.0", id: 1, result: "0x21" },
      { jsonrpc: "2.0", id: "two", result: "0x21" },
      { jsonrpc: "2.0", id: 3, result: "33" },
    ]);
  });

  it("mixes good members, bad members and notifications", async () => {
    const res = await send(node.url, [
      chainId(1),
      { jsonrpc: "2.0", method: "eth_chainId", params: [] },
      1,
      { jsonrpc: "2.0", id: 4, method: "nope_nope", params: [] },
      { jsonrpc: "2.0", id: 5, method: "web3_sha3", params: ["68"] },
    ]);
    expect(res.status).toBe(200);
    expect(res.json).toEqual([
      { jsonrpc: "2.0", id: 1, result: "0x21" },
      {
        jsonrpc: "2.0",
        id: null,
        error: { code: -32600, message: "invalid request: expected a request object" },
      },
      {
        jsonrpc: "2.0",
        id: 4,
        error: { code: -32601, message: "the method nope_nope does not exist/is not available" },
      },
      {
        jsonrpc: "2.0",
        id: 5,
        error: { code: -32602, message: "invalid argument 0: hex string without 0x prefix" },
      },
    ]);
  });

  it("answers each non-object member with its own -32600", async () => {
    const res = await send(node.url, [1, 2, 3]);
    expect(res.json).toEqual(
      [1, 2, 3].map(() => ({
        jsonrpc: "2.0",
        id: null,
        error: { code: -32600, message: "invalid request: expected a request object" },
      })),
    );
  });

  it("rejects an empty batch", async () => {
    const res = await send(node.url, []);
    expect(res.status).toBe(200);
    expect(res.json).toEqual({
      jsonrpc: "2.0",
      id: null,
      error: { code: -32600, message: "invalid request: empty batch" },
    });
  });

  it("rejects a batch over the configured limit, and accepts one at the limit", async () => {
    const atLimit = await send(node.url, [1, 2, 3, 4, 5].map(chainId));
    expect((atLimit.json as unknown[]).length).toBe(5);
    const over = await send(node.url, [1, 2, 3, 4, 5, 6].map(chainId));
    expect(over.status).toBe(200);
    expect(over.json).toEqual({
      jsonrpc: "2.0",
      id: null,
      error: {
        code: -32600,
        message: "invalid request: batch of 6 requests exceeds the limit of 5",
      },
    });
  });
});
