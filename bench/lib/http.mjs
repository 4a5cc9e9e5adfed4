// HTTP helpers for the benches: free ports, one-off POSTs, readiness polling and a small
// keep-alive JSON-RPC client.
import { Agent, request } from "node:http";
import { createServer } from "node:net";
import { sleep } from "./format.mjs";

/** The cheapest JSON-RPC request, used to poll a server until it answers. */
export const CHAIN_ID_BODY = '{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}';

export function freePort() {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

/**
 * One POST on a fresh connection (no agent), so nothing is left open afterwards. Resolves with
 * the status, headers, the answer as bytes (`body`) and text (`text`), and its timing: `ms` to
 * the last byte, `firstByteMs` to the first.
 */
export function post(port, body, timeoutMs = 2000, path = "/") {
  return new Promise((resolve, reject) => {
    const t0 = process.hrtime.bigint();
    let firstByte;
    const req = request(
      {
        host: "127.0.0.1",
        port,
        method: "POST",
        path,
        agent: false,
        headers: {
          "content-type": "application/json",
          connection: "close",
          "content-length": Buffer.byteLength(body),
        },
        timeout: timeoutMs,
      },
      (res) => {
        const chunks = [];
        res.on("data", (c) => {
          firstByte ??= process.hrtime.bigint();
          chunks.push(c);
        });
        res.on("end", () => {
          const t1 = process.hrtime.bigint();
          const bytes = Buffer.concat(chunks);
          resolve({
            status: res.statusCode,
            headers: res.headers,
            body: bytes,
            text: bytes.toString("utf8"),
            ms: Number(t1 - t0) / 1e6,
            firstByteMs: firstByte ? Number(firstByte - t0) / 1e6 : null,
          });
        });
        res.on("error", reject);
      },
    );
    req.on("timeout", () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    req.on("error", reject);
    req.end(body);
  });
}

export async function waitReady(port, handle, timeoutMs, body = CHAIN_ID_BODY, path = "/") {
  const deadline = Date.now() + timeoutMs;
  let last = "no answer";
  while (Date.now() < deadline) {
    if (handle.done) {
      const { code, signal, error } = await handle.exited;
      throw new Error(
        error
          ? `could not start: ${error.message}`
          : `exited before answering (code ${code}, signal ${signal})`,
      );
    }
    try {
      const res = await post(port, body, 1000, path);
      if (res.status >= 200 && res.status < 300) return;
      last = `HTTP ${res.status}: ${res.text.slice(0, 200)}`;
    } catch (err) {
      last = err.message;
    }
    await sleep(100);
  }
  throw new Error(`not ready after ${timeoutMs / 1000} s (last: ${last})`);
}

/** A JSON-RPC error answer (`code`, `message`, `data`), thrown by `RPCClient.call`. */
export class RPCError extends Error {
  constructor(method, error) {
    super(`${method}: ${error?.code} ${error?.message}`);
    this.code = error?.code;
    this.rpcMessage = error?.message;
    this.data = error?.data;
  }
}

/**
 * JSON-RPC over one keep-alive connection to 127.0.0.1:port, one request at a time (the way a
 * script sending transactions one by one talks to a node). `close()` ends the connection.
 */
export class RPCClient {
  #port;
  #agent = new Agent({ keepAlive: true, maxSockets: 1 });
  #id = 0;
  constructor(port) {
    this.#port = port;
  }

  /** The response body as text, and its HTTP status. */
  raw(body, timeoutMs = 30_000) {
    return new Promise((resolve, reject) => {
      const req = request(
        {
          host: "127.0.0.1",
          port: this.#port,
          method: "POST",
          path: "/",
          agent: this.#agent,
          headers: {
            "content-type": "application/json",
            "content-length": Buffer.byteLength(body),
          },
          timeout: timeoutMs,
        },
        (res) => {
          const chunks = [];
          res.on("data", (c) => chunks.push(c));
          res.on("end", () =>
            resolve({ status: res.statusCode, text: Buffer.concat(chunks).toString("utf8") }),
          );
          res.on("error", reject);
        },
      );
      req.on("timeout", () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
      req.on("error", reject);
      req.end(body);
    });
  }

  /** The result of one call; throws RPCError on a JSON-RPC error, Error on anything else. */
  async call(method, params = [], timeoutMs = 30_000) {
    const id = ++this.#id;
    const { status, text } = await this.raw(
      JSON.stringify({ jsonrpc: "2.0", id, method, params }),
      timeoutMs,
    );
    return resultOf(method, id, status, text);
  }

  close() {
    this.#agent.destroy();
  }
}

/** The result of the JSON-RPC answer `text` to request `id`; throws as `RPCClient.call` does. */
function resultOf(method, id, status, text) {
  let json;
  try {
    json = JSON.parse(text);
  } catch {
    throw new Error(`${method}: HTTP ${status}, not JSON: ${text.slice(0, 200)}`);
  }
  if (json?.error) throw new RPCError(method, json.error);
  if (status < 200 || status >= 300)
    throw new Error(`${method}: HTTP ${status}: ${text.slice(0, 200)}`);
  if (json?.jsonrpc !== "2.0" || json.id !== id || !("result" in json))
    throw new Error(`${method}: not a JSON-RPC 2.0 answer to id ${id}: ${text.slice(0, 200)}`);
  return json.result;
}

/**
 * `RPCClient`'s calls through undici's client instead of node:http: one keep-alive connection,
 * one request at a time, the same checks, at about half the client's CPU per request (measured
 * here: 26–43 µs against 75–86). For loads where the client would otherwise set the pace, such
 * as pool admission over 16 connections, where node:http's client took a whole core. Made with
 * `LeanRPCClient.open` (undici is a bench dependency, imported once installed).
 */
export class LeanRPCClient {
  #client;
  #id = 0;

  constructor(client) {
    this.#client = client;
  }

  static async open(port) {
    const { Client } = await import("undici");
    return new LeanRPCClient(new Client(`http://127.0.0.1:${port}`, { pipelining: 1 }));
  }

  async call(method, params = [], timeoutMs = 30_000) {
    const id = ++this.#id;
    const res = await this.#client.request({
      method: "POST",
      path: "/",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id, method, params }),
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
    });
    return resultOf(method, id, res.statusCode, await res.body.text());
  }

  /** Closes the connection, without waiting. */
  close() {
    this.#client.close().catch(() => {});
  }
}
