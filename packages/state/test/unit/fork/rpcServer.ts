import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";

/** What a scripted upstream does with one HTTP request. */
export type Reply =
  | { readonly status?: number; readonly headers?: Record<string, string>; readonly body: unknown }
  | "stall"
  /** Headers and the start of a body, then nothing. */
  | "stall-body";

export interface SeenRequest {
  /** The parsed JSON body (a call or an array of calls). */
  readonly body: unknown;
  readonly headers: IncomingHttpHeaders;
}

export interface ScriptedServer {
  readonly url: string;
  /** Every HTTP request received, in order. */
  readonly seen: SeenRequest[];
  close(): Promise<void>;
}

interface Call {
  id: unknown;
  method: string;
  params: unknown[];
}

/**
 * An upstream on 127.0.0.1 whose every answer `script` decides (n counts requests from 0),
 * at once or when its promise settles.
 */
export async function scriptedServer(
  script: (body: unknown, n: number) => Reply | Promise<Reply>,
): Promise<ScriptedServer> {
  const seen: SeenRequest[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", async () => {
      const body: unknown = JSON.parse(Buffer.concat(chunks).toString("utf8"));
      seen.push({ body, headers: req.headers });
      const reply = await script(body, seen.length - 1);
      if (reply === "stall") return;
      if (reply === "stall-body") {
        res.writeHead(200, { "content-type": "application/json" });
        res.write('{"jsonrpc":"2.0",');
        return;
      }
      const text = typeof reply.body === "string" ? reply.body : JSON.stringify(reply.body);
      res.writeHead(reply.status ?? 200, { "content-type": "application/json", ...reply.headers });
      res.end(text);
    });
  });
  const url = await listen(server);
  return {
    url,
    seen,
    close: () => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

/** A healthy upstream: answers single calls and batches with `answerOf`. */
export function healthy(options: { reverse?: boolean } = {}): (body: unknown) => Reply {
  return (body) => {
    if (!Array.isArray(body)) return { body: answerOf(body as Call) };
    const answers = (body as Call[]).map(answerOf);
    return { body: options.reverse ? answers.reverse() : answers };
  };
}

/**
 * `eth_blockNumber` → `0x10`; `eth_getBalance(address, block)` → 1000 × the address, or
 * -32000 "header not found" at block `0x99`; any other method → -32601.
 */
export function answerOf(call: Call): Record<string, unknown> {
  const envelope = { jsonrpc: "2.0", id: call.id };
  if (call.method === "eth_blockNumber") return { ...envelope, result: "0x10" };
  if (call.method === "eth_getBalance") {
    const [address, block] = call.params as [string, string];
    if (block === "0x99")
      return { ...envelope, error: { code: -32000, message: "header not found" } };
    return { ...envelope, result: `0x${(BigInt(address) * 1000n).toString(16)}` };
  }
  const message = `the method ${call.method} does not exist/is not available`;
  return { ...envelope, error: { code: -32601, message } };
}

/** A URL on which nothing listens (a port that was free a moment ago). */
export async function closedPortUrl(): Promise<string> {
  const server = createServer();
  const url = await listen(server);
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return url;
}

export function address(n: number): string {
  return `0x${n.toString(16).padStart(40, "0")}`;
}

function listen(server: Server): Promise<string> {
  return new Promise((resolve) => {
    server.listen(0, "127.0.0.1", () => {
      resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`);
    });
  });
}
