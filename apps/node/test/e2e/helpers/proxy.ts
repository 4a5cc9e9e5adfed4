import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";

/**
 * What the proxy does with a request:
 * - `forward`: sends it to the target and answers what the target answers (through `rewrite`);
 * - `reset`: drops the connection without an answer (as a node that went away);
 * - `503`: answers HTTP 503;
 * - `stall`: never answers (the connection stays open until the proxy closes).
 */
export type ProxyMode = "forward" | "reset" | "503" | "stall";

/** One JSON-RPC call as the proxy saw it. */
export interface SeenCall {
  readonly method: string;
  readonly params: unknown[];
}

/** The answer to one call; return another to tamper with it. */
export type Rewrite = (call: SeenCall, answer: Record<string, unknown>) => Record<string, unknown>;

/** Changes a call before it goes to the target (e.g. another block tag). */
export type Redirect = (call: SeenCall) => SeenCall;

export interface RpcProxy {
  readonly url: string;
  mode: ProxyMode;
  /** Applied to each answer while forwarding; `undefined` for an honest proxy. */
  rewrite: Rewrite | undefined;
  redirect: Redirect | undefined;
  /** Requests still to be answered HTTP 429 with `Retry-After: 1` before the mode applies. */
  tooManyRequests: number;
  /** HTTP requests received, in all modes. */
  requests: number;
  /** Calls received (batches counted by call), in all modes. */
  readonly calls: SeenCall[];
  close(): Promise<void>;
}

/**
 * A JSON-RPC proxy on 127.0.0.1 in front of `target` (a node's URL), switched between
 * forwarding, tampering and failing by the test that owns it. Any path is forwarded to the
 * target's root, so URLs with a path and a query string reach it.
 */
export async function startProxy(target: string): Promise<RpcProxy> {
  const sockets = new Set<Socket>();
  const proxy: RpcProxy = {
    url: "",
    mode: "forward",
    rewrite: undefined,
    redirect: undefined,
    tooManyRequests: 0,
    requests: 0,
    calls: [],
    close: () => close(),
  };
  const server = createServer((req, res) => {
    void handle(proxy, target, req, res);
  });
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  (proxy as { url: string }).url = `http://127.0.0.1:${port}`;
  const close = () =>
    new Promise<void>((resolve) => {
      for (const socket of sockets) socket.destroy();
      server.close(() => resolve());
    });
  return proxy;
}

async function handle(proxy: RpcProxy, target: string, req: IncomingMessage, res: ServerResponse) {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  proxy.requests++;
  let body: unknown;
  try {
    body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
  } catch {
    body = undefined;
  }
  const calls = (Array.isArray(body) ? body : [body]) as {
    method?: unknown;
    params?: unknown;
  }[];
  for (const c of calls)
    proxy.calls.push({ method: String(c?.method), params: (c?.params ?? []) as unknown[] });
  if (proxy.tooManyRequests > 0) {
    proxy.tooManyRequests--;
    res.writeHead(429, { "retry-after": "1", "content-type": "text/plain" });
    res.end("too many requests");
    return;
  }
  if (proxy.mode === "stall") return;
  if (proxy.mode === "reset") {
    req.socket.destroy();
    return;
  }
  if (proxy.mode === "503") {
    res.writeHead(503, { "content-type": "text/plain" });
    res.end("service unavailable");
    return;
  }
  const redirect = proxy.redirect;
  const sent = redirect === undefined ? body : mapCalls(body, (c) => ({ ...c, ...redirect(c) }));
  const answer = await fetch(target, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(sent),
  });
  const text = await answer.text();
  const rewrite = proxy.rewrite;
  let out = text;
  if (rewrite !== undefined && answer.ok) {
    const parsed = JSON.parse(text) as unknown;
    const asked = Array.isArray(sent) ? sent : [sent];
    const byId = new Map(asked.map((c: { id?: unknown }) => [c.id, c as SeenCall]));
    const tamper = (a: Record<string, unknown>) => {
      const call = byId.get(a.id);
      return call === undefined ? a : rewrite(call, a);
    };
    out = JSON.stringify(Array.isArray(parsed) ? parsed.map(tamper) : tamper(parsed as never));
  }
  res.writeHead(answer.status, { "content-type": "application/json" });
  res.end(out);
}

function mapCalls(body: unknown, f: (call: SeenCall & { id?: unknown }) => unknown): unknown {
  return Array.isArray(body) ? body.map((c) => f(c)) : f(body as SeenCall);
}
