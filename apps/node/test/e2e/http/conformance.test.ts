import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningNode, startNode } from "../helpers/node.js";
import { RawClient, readServerFrame, WS_UPGRADE, wsClientFrame } from "../helpers/rawHttp.js";
import { HTTP_LAYER_VALUES } from "./layers.js";

// What every HTTP layer the node offers answers, as a client on a plain socket sees it: the
// forms of HTTP/1.x requests clients and proxies send, the limits on heads and bodies, and the
// close codes of WebSocket. Each request is sent twice where the framing decides who reads it:
// with a Content-Length (read off the socket by the node's own reader) and chunked (read by
// node:http, which the reader hands the connection to).

const LIMIT = 4096;
const chainId = (id: number) => JSON.stringify({ jsonrpc: "2.0", id, method: "eth_chainId" });

/** A head (request line and fields, without the blank line) and a body, in either framing. */
function request(head: string, body: string, framing: "length" | "chunked"): string {
  if (framing === "length")
    return `${head}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
  return `${head}\r\nTransfer-Encoding: chunked\r\n\r\n${Buffer.byteLength(body).toString(16)}\r\n${body}\r\n0\r\n\r\n`;
}

const JSON_TYPE = "Content-Type: application/json";

function rpcError(message: string) {
  return { jsonrpc: "2.0", id: null, error: { code: -32600, message } };
}

describe.each(HTTP_LAYER_VALUES)("HTTP conformance with --rpc-http-layer %s", (layer) => {
  let node: RunningNode;
  const clients: RawClient[] = [];
  const client = () => {
    const c = new RawClient(node.port);
    clients.push(c);
    return c;
  };

  beforeAll(async () => {
    node = await startNode({
      args: ["--rpc-http-layer", layer, "--rpc-max-body-bytes", String(LIMIT)],
    });
  });
  afterAll(async () => {
    for (const c of clients) c.destroy();
    await node?.stop();
  });

  describe.each(["length", "chunked"] as const)("a body framed by %s", (framing) => {
    it("answers an HTTP/1.0 request, with or without Host, and closes", async () => {
      for (const host of ["Host: 127.0.0.1\r\n", ""]) {
        const c = client();
        c.write(request(`POST / HTTP/1.0\r\n${host}${JSON_TYPE}`, chainId(1), framing));
        const a = await c.answer();
        expect(a.status).toBe(200);
        expect(JSON.parse(a.body)).toEqual({ jsonrpc: "2.0", id: 1, result: "0x21" });
        await c.closed();
      }
    });

    it("answers a request whose target is in absolute form", async () => {
      const c = client();
      const origin = `http://127.0.0.1:${node.port}`;
      c.write(
        request(`POST ${origin}/ HTTP/1.1\r\nHost: 127.0.0.1\r\n${JSON_TYPE}`, chainId(2), framing),
      );
      const a = await c.answer();
      expect(a.status).toBe(200);
      expect(JSON.parse(a.body)).toEqual({ jsonrpc: "2.0", id: 2, result: "0x21" });
      c.write(`GET ${origin}/health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`);
      const health = await c.answer();
      expect(health.status).toBe(200);
      expect(JSON.parse(health.body)).toMatchObject({ status: "ok", network: "regtest" });
    });

    it("answers POST * as it answers any other path", async () => {
      const c = client();
      c.write(request(`POST * HTTP/1.1\r\nHost: 127.0.0.1\r\n${JSON_TYPE}`, chainId(3), framing));
      const a = await c.answer();
      expect(a.status).toBe(200);
      expect(JSON.parse(a.body)).toEqual({ jsonrpc: "2.0", id: 3, result: "0x21" });
    });

    it("answers an HTTP/1.1 request without Host with 400 and a JSON-RPC error", async () => {
      const c = client();
      c.write(request(`POST / HTTP/1.1\r\n${JSON_TYPE}`, chainId(4), framing));
      const a = await c.answer();
      expect(a.status).toBe(400);
      expect(a.headers["content-type"]).toBe("application/json");
      expect(JSON.parse(a.body)).toEqual(
        rpcError("bad request: an HTTP/1.1 request must have a Host header"),
      );
      await c.closed();
    });
  });

  it("answers a head over 16 KiB with 431 and a JSON-RPC error", async () => {
    const c = client();
    c.write(`POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ${"a".repeat(17 * 1024)}\r\n\r\n`);
    const a = await c.answer();
    expect(a.status).toBe(431);
    expect(a.headers["content-type"]).toBe("application/json");
    expect(JSON.parse(a.body)).toEqual(
      rpcError("request head too large: the limit is 16384 bytes"),
    );
    await c.closed();
  });

  const tooLarge = rpcError(`request body too large: the limit is ${LIMIT} bytes`);

  it("answers a chunked body over the limit with 413 before the body ends", async () => {
    const c = client();
    // The chunk crosses the limit and the body goes on: the answer must not wait for its end.
    c.write(
      `POST / HTTP/1.1\r\nHost: 127.0.0.1\r\n${JSON_TYPE}\r\nTransfer-Encoding: chunked\r\n\r\n` +
        `${(LIMIT + 1).toString(16)}\r\n${"x".repeat(LIMIT + 1)}\r\n`,
    );
    const a = await c.answer();
    expect(a.status).toBe(413);
    expect(a.headers["content-type"]).toBe("application/json");
    expect(a.headers.connection).toBe("close");
    expect(JSON.parse(a.body)).toEqual(tooLarge);
    // The client may go on sending what it had begun; the node closes after it.
    c.write(`10\r\n${"y".repeat(16)}\r\n0\r\n\r\n`);
    await c.closed();
  });

  it("answers a Content-Length over the limit with 413 before the body comes", async () => {
    const c = client();
    c.write(
      `POST / HTTP/1.1\r\nHost: 127.0.0.1\r\n${JSON_TYPE}\r\nContent-Length: ${LIMIT + 1}\r\n\r\n`,
    );
    const a = await c.answer();
    expect(a.status).toBe(413);
    expect(a.headers.connection).toBe("close");
    expect(JSON.parse(a.body)).toEqual(tooLarge);
    c.write("x".repeat(LIMIT + 1));
    await c.closed();
  });

  it("answers Expect: 100-continue with a Content-Length over the limit with 413, not 100", async () => {
    const c = client();
    c.write(
      `POST / HTTP/1.1\r\nHost: 127.0.0.1\r\n${JSON_TYPE}\r\nContent-Length: ${LIMIT + 1}\r\n` +
        "Expect: 100-continue\r\n\r\n",
    );
    const a = await c.answer();
    expect(a.status).toBe(413);
    expect(JSON.parse(a.body)).toEqual(tooLarge);
    await c.closed();
  });

  it("answers a whole body over the limit, sent at once, with 413", async () => {
    const c = client();
    c.write(
      request(
        `POST / HTTP/1.1\r\nHost: 127.0.0.1\r\n${JSON_TYPE}`,
        "x".repeat(3 * LIMIT),
        "length",
      ),
    );
    const a = await c.answer();
    expect(a.status).toBe(413);
    expect(JSON.parse(a.body)).toEqual(tooLarge);
    await c.closed();
  });

  describe("WebSocket", () => {
    async function open(): Promise<RawClient> {
      const c = client();
      c.write(WS_UPGRADE);
      expect((await c.answer()).status).toBe(101);
      c.write(wsClientFrame(chainId(5)));
      const first = await readServerFrame(c);
      expect(JSON.parse(first.payload.toString())).toEqual({
        jsonrpc: "2.0",
        id: 5,
        result: "0x21",
      });
      return c;
    }

    it("closes with 1009 on a message over the limit", async () => {
      const c = await open();
      c.write(wsClientFrame(`"${"x".repeat(LIMIT)}"`));
      const frame = await readServerFrame(c);
      expect(frame.opcode).toBe(0x8);
      expect(frame.payload.readUInt16BE(0)).toBe(1009);
      await c.closed();
    });

    it("closes with 1007 on a text message that is not UTF-8", async () => {
      const c = await open();
      c.write(wsClientFrame(Buffer.from([0x5b, 0xff, 0xfe, 0x5d])));
      const frame = await readServerFrame(c);
      expect(frame.opcode).toBe(0x8);
      expect(frame.payload.readUInt16BE(0)).toBe(1007);
      await c.closed();
    });
  });

  it("still answers new connections after all of the above", async () => {
    const c = client();
    c.write(request(`POST / HTTP/1.1\r\nHost: 127.0.0.1\r\n${JSON_TYPE}`, chainId(6), "length"));
    expect(JSON.parse((await c.answer()).body)).toEqual({ jsonrpc: "2.0", id: 6, result: "0x21" });
  });
});
