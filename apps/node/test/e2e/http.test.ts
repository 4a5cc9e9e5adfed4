import { connect } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningNode, send, startNode } from "./helpers/node.js";

/** `auto` is the same layer (httpLayer.test.ts; http/conformance.test.ts runs each value). */
const LAYERS = ["node"];

// HTTP-level behaviour: methods, content types, body limits, health and CORS.
describe.each(LAYERS)("with --rpc-http-layer %s", (layer) => {
  let node: RunningNode;
  let mainnet: RunningNode;
  beforeAll(async () => {
    [node, mainnet] = await Promise.all([
      startNode({ args: ["--rpc-max-body-bytes", "2048", "--rpc-http-layer", layer] }),
      startNode({
        network: "--mainnet",
        args: ["--rpc-cors", "http://localhost:3000", "--rpc-http-layer", layer],
      }),
    ]);
    expect(node.logs()).toContain(`"http":"${layer}"`);
  });
  afterAll(async () => {
    await Promise.all([node?.stop(), mainnet?.stop()]);
  });

  const chainId = { jsonrpc: "2.0", id: 1, method: "eth_chainId", params: [] };

  describe("HTTP methods", () => {
    it.each(["GET", "PUT", "DELETE", "PATCH"])(
      "answers %s with 405, an Allow header and a JSON-RPC error",
      async (method) => {
        const res = await send(node.url, method === "GET" ? undefined : chainId, { method });
        expect(res.status).toBe(405);
        expect(res.headers.get("allow")).toBe("POST, OPTIONS");
        expect(res.json).toEqual({
          jsonrpc: "2.0",
          id: null,
          error: {
            code: -32600,
            message: `method ${method} is not allowed: send JSON-RPC requests with POST`,
          },
        });
      },
    );

    it("states each answer's length rather than sending it in chunks", async () => {
      const res = await send(node.url, chainId);
      expect(res.status).toBe(200);
      expect(res.headers.get("transfer-encoding")).toBeNull();
      expect(res.headers.get("content-length")).toBe(String(Buffer.byteLength(res.text)));
      const refused = await send(node.url, undefined, { method: "GET" });
      expect(refused.headers.get("content-length")).toBe(String(Buffer.byteLength(refused.text)));
    });

    it("serves GET /health for load balancers", async () => {
      const res = await send(node.url, undefined, { method: "GET", path: "/health" });
      expect(res.status).toBe(200);
      expect(res.json).toEqual({
        status: "ok",
        network: "regtest",
        blockNumber: "0x0",
        signatureRecovery: expect.stringMatching(/^(libsecp256k1|noble)$/),
        keccak: "wasm",
      });
    });

    it("accepts POST on any path in local mode", async () => {
      const res = await send(node.url, chainId, { path: "/some/where" });
      expect(res.json).toEqual({ jsonrpc: "2.0", id: 1, result: "0x21" });
    });
  });

  describe("content type", () => {
    it.each([
      "application/json",
      "application/json; charset=utf-8",
      "application/json-rpc",
      "Application/JSON",
    ])("accepts %s", async (type) => {
      const res = await send(node.url, chainId, { headers: { "content-type": type } });
      expect(res.status).toBe(200);
      expect(res.json).toEqual({ jsonrpc: "2.0", id: 1, result: "0x21" });
    });

    it.each(["text/plain", "application/x-www-form-urlencoded", "multipart/form-data"])(
      "answers %s with 415",
      async (type) => {
        const res = await send(node.url, chainId, { headers: { "content-type": type } });
        expect(res.status).toBe(415);
        expect(res.json).toEqual({
          jsonrpc: "2.0",
          id: null,
          error: {
            code: -32600,
            message: `unsupported content type "${type}": send application/json`,
          },
        });
      },
    );

    it("answers a request without a content type with 415", async () => {
      const res = await fetch(node.url, {
        method: "POST",
        body: new Blob([JSON.stringify(chainId)]),
      });
      expect(res.status).toBe(415);
    });
  });

  describe("body size", () => {
    it("answers a body over the configured limit with 413", async () => {
      const big = { ...chainId, params: ["x".repeat(4096)] };
      const res = await send(node.url, big);
      expect(res.status).toBe(413);
      expect(res.json).toEqual({
        jsonrpc: "2.0",
        id: null,
        error: { code: -32600, message: "request body too large: the limit is 2048 bytes" },
      });
    });

    it("answers a chunked body that grows over the limit with 413", async () => {
      const chunks = [JSON.stringify({ ...chainId, params: ["x".repeat(3000)] })];
      const stream = new ReadableStream({
        pull(controller) {
          const next = chunks.shift();
          if (next === undefined) controller.close();
          else controller.enqueue(new TextEncoder().encode(next));
        },
      });
      const res = await fetch(node.url, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: stream,
        duplex: "half",
      } as RequestInit);
      expect(res.status).toBe(413);
    });

    it("assembles a valid body sent in many chunks", async () => {
      const text = JSON.stringify([1, 2, 3].map((id) => ({ ...chainId, id })));
      const pieces = text.match(/.{1,7}/g)!;
      const stream = new ReadableStream({
        async pull(controller) {
          const next = pieces.shift();
          if (next === undefined) controller.close();
          else {
            await new Promise((resolve) => setTimeout(resolve, 1));
            controller.enqueue(new TextEncoder().encode(next));
          }
        },
      });
      const res = await fetch(node.url, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: stream,
        duplex: "half",
      } as RequestInit);
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual(
        [1, 2, 3].map((id) => ({ jsonrpc: "2.0", id, result: "0x21" })),
      );
    });

    it("accepts a body just under the limit", async () => {
      const body = JSON.stringify(chainId);
      const padded = body.replace("{", `{${" ".repeat(2048 - body.length)}`);
      expect(Buffer.byteLength(padded)).toBe(2048);
      const res = await send(node.url, padded);
      expect(res.status).toBe(200);
      expect(res.json).toEqual({ jsonrpc: "2.0", id: 1, result: "0x21" });
    });

    it("answers a 20 MB body with 413 under the default 5 MiB limit, not a reset", async () => {
      const big = { ...chainId, params: ["x".repeat(20_000_000)] };
      const res = await send(mainnet.url, big);
      expect(res.status).toBe(413);
      expect(res.json).toEqual({
        jsonrpc: "2.0",
        id: null,
        error: { code: -32600, message: "request body too large: the limit is 5242880 bytes" },
      });
    });

    it("keeps serving after rejecting a large body", async () => {
      await send(node.url, { ...chainId, params: ["x".repeat(10_000)] });
      const res = await send(node.url, chainId);
      expect(res.json).toEqual({ jsonrpc: "2.0", id: 1, result: "0x21" });
    });
  });

  describe("CORS", () => {
    it("allows any origin on regtest by default", async () => {
      const res = await send(node.url, chainId, { headers: { origin: "http://example.test" } });
      expect(res.headers.get("access-control-allow-origin")).toBe("*");
    });

    it("answers a preflight with the allowed methods and headers", async () => {
      const res = await send(node.url, undefined, {
        method: "OPTIONS",
        headers: {
          origin: "http://example.test",
          "access-control-request-headers": "content-type",
        },
      });
      expect(res.status).toBe(204);
      expect(res.headers.get("access-control-allow-origin")).toBe("*");
      expect(res.headers.get("access-control-allow-methods")).toBe("POST, OPTIONS");
      expect(res.headers.get("access-control-allow-headers")).toBe("content-type");
    });

    it("allows only the configured origins", async () => {
      const allowed = await send(mainnet.url, chainId, {
        headers: { origin: "http://localhost:3000" },
      });
      expect(allowed.headers.get("access-control-allow-origin")).toBe("http://localhost:3000");
      expect(allowed.headers.get("vary")).toBe("Origin");
      const denied = await send(mainnet.url, chainId, { headers: { origin: "http://evil.test" } });
      expect(denied.headers.get("access-control-allow-origin")).toBeNull();
      expect(denied.json).toEqual({ jsonrpc: "2.0", id: 1, result: "0x1e" });
    });
  });

  describe("many connections at once", () => {
    it("answers each connection's requests in order, a closing one before it closes", async () => {
      const { hostname, port } = new URL(node.url);
      const methods = ["eth_chainId", "eth_blockNumber", "net_version"] as const;
      const expected = { eth_chainId: "0x21", eth_blockNumber: "0x0", net_version: "33" };
      const connections = Array.from({ length: 12 }, (_, c) => {
        const requests = methods.map((method, k) => {
          const body = JSON.stringify({ jsonrpc: "2.0", id: c * 10 + k, method, params: [] });
          // The last connection asks for its last answer to close the connection.
          const close = c === 11 && k === 2 ? "Connection: close\r\n" : "";
          return `POST / HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n${close}Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
        });
        return new Promise<{ answers: unknown[]; closed: boolean }>((resolve, reject) => {
          const socket = connect(Number(port), hostname);
          let text = "";
          const answers: unknown[] = [];
          const read = () => {
            for (;;) {
              const end = text.indexOf("\r\n\r\n");
              if (end < 0) return;
              const length = Number(/content-length: (\d+)/i.exec(text.slice(0, end))?.[1]);
              if (text.length < end + 4 + length) return;
              answers.push(JSON.parse(text.slice(end + 4, end + 4 + length)));
              text = text.slice(end + 4 + length);
              if (answers.length === methods.length && c !== 11) socket.end();
            }
          };
          socket.setEncoding("latin1");
          socket.on("data", (chunk: string) => {
            text += chunk;
            read();
          });
          socket.on("error", reject);
          socket.on("close", () => resolve({ answers, closed: c === 11 }));
          // All three in one write: answered one after another, on a connection of its own.
          socket.on("connect", () => socket.write(requests.join("")));
        });
      });
      const results = await Promise.all(connections);
      results.forEach(({ answers }, c) => {
        expect(answers).toEqual(
          methods.map((method, k) => ({
            jsonrpc: "2.0",
            id: c * 10 + k,
            result: expected[method],
          })),
        );
      });
    });
  });
});
