import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import type { WsHub } from "../ws/hub.js";
import type { WsSession } from "../ws/session.js";
import type { HttpApp, HttpReply, HttpRequestHead } from "./app.js";
import type { HttpTransport } from "./transport.js";

// The parts of uWebSockets.js this transport uses.
interface UwsResponse {
  onAborted(handler: () => void): UwsResponse;
  onData(handler: (chunk: ArrayBuffer, isLast: boolean) => void): UwsResponse;
  cork(cb: () => void): UwsResponse;
  writeStatus(status: string): UwsResponse;
  writeHeader(key: string, value: string): UwsResponse;
  end(body?: string, closeConnection?: boolean): UwsResponse;
  upgrade(
    userData: WsUserData,
    secWebSocketKey: string,
    secWebSocketProtocol: string,
    secWebSocketExtensions: string,
    context: unknown,
  ): void;
  getRemoteAddressAsText(): ArrayBuffer;
}
interface UwsRequest {
  getCaseSensitiveMethod(): string;
  getUrl(): string;
  getQuery(): string | undefined;
  getHeader(lowerCaseKey: string): string;
}
interface UwsWebSocket {
  send(message: string, isBinary?: boolean, compress?: boolean): number;
  getBufferedAmount(): number;
  end(code?: number, shortMessage?: string): void;
  close(): void;
  getRemoteAddressAsText(): ArrayBuffer;
  getUserData(): WsUserData;
}
interface WsUserData {
  remote: string;
  session?: WsSession;
}
interface UwsBehavior {
  maxPayloadLength: number;
  maxBackpressure: number;
  idleTimeout: number;
  sendPingsAutomatically: boolean;
  upgrade(res: UwsResponse, req: UwsRequest, context: unknown): void;
  open(ws: UwsWebSocket): void;
  message(ws: UwsWebSocket, message: ArrayBuffer, isBinary: boolean): void;
  close(ws: UwsWebSocket, code: number, message: ArrayBuffer): void;
}
interface UwsApp {
  ws(pattern: string, behavior: UwsBehavior): UwsApp;
  any(pattern: string, handler: (res: UwsResponse, req: UwsRequest) => void): UwsApp;
  listen(host: string, port: number, cb: (token: unknown) => void): UwsApp;
}
export interface UwsModule {
  App(): UwsApp;
  us_listen_socket_close(token: unknown): void;
  us_socket_local_port(token: unknown): number;
}

const INTERNAL_ERROR: HttpReply = { status: 500, headers: {}, body: "" };

const STATUS_TEXT: Readonly<Record<number, string>> = {
  200: "200 OK",
  204: "204 No Content",
  401: "401 Unauthorized",
  404: "404 Not Found",
  405: "405 Method Not Allowed",
  413: "413 Payload Too Large",
  415: "415 Unsupported Media Type",
  426: "426 Upgrade Required",
  500: "500 Internal Server Error",
  503: "503 Service Unavailable",
};

/** uWebSockets.js as Ganache publishes it on npm (prebuilt for Node 16, 18 and 20 only). */
const UWS_PACKAGE = "@trufflesuite/uws-js-unofficial";

/**
 * Loads the native uWebSockets.js binary for this platform and Node version, or says why it
 * can't. The package's own entry would fall back to a slow JS imitation and print to the
 * console; node:http is the better fallback, so load the binary directly.
 */
export function loadUws(): { uws: UwsModule } | { error: string } {
  const require = createRequire(import.meta.url);
  const binary = `uws_${process.platform}_${process.arch}_${process.versions.modules}.node`;
  try {
    const root = dirname(require.resolve(`${UWS_PACKAGE}/package.json`));
    return { uws: require(join(root, "binaries", binary)) as UwsModule };
  } catch (err) {
    const why = err instanceof Error ? err.message.split("\n")[0] : String(err);
    return { error: `no usable ${binary} in ${UWS_PACKAGE}: ${why}` };
  }
}

/** The HTTP layer on uWebSockets.js: the fastest measured (bench/rpc). */
export function createUwsTransport(app: HttpApp, uws: UwsModule): HttpTransport {
  const server = uws.App();
  let token: unknown;
  if (app.ws !== undefined) server.ws("/*", websocket(app, app.ws));
  server.any("/*", (res, req) => serve(app, res, req));
  return {
    listen(host, port) {
      return new Promise((resolve, reject) => {
        server.listen(host, port, (t) => {
          if (!t) {
            const err = Object.assign(new Error(`cannot listen on ${host}:${port}`), {
              code: "EADDRINUSE",
            });
            reject(err);
            return;
          }
          token = t;
          resolve({ host, port: uws.us_socket_local_port(t) });
        });
      });
    },
    async close() {
      // Stops accepting. This uWS version cannot drop open keep-alive connections; they end
      // when the process exits.
      if (token !== undefined) uws.us_listen_socket_close(token);
      token = undefined;
      app.ws?.closeAll();
    },
  };
}

/** WebSocket on every path, as the reference node serves it; the API-key rule in hosted mode. */
function websocket(app: HttpApp, hub: WsHub): UwsBehavior {
  return {
    maxPayloadLength: app.maxBodyBytes,
    // The session drops a peer past the limit itself (with a log line); uWS must not drop
    // messages silently before that.
    maxBackpressure: 2 * hub.opts.maxBufferedBytes + app.maxBodyBytes,
    idleTimeout: 120,
    sendPingsAutomatically: true,
    upgrade(res, req, context) {
      const head: HttpRequestHead = {
        method: req.getCaseSensitiveMethod(),
        url: req.getQuery() ? `${req.getUrl()}?${req.getQuery()}` : req.getUrl(),
        contentType: undefined,
        origin: optional(req.getHeader("origin")),
        contentLength: undefined,
        requestHeaders: undefined,
      };
      const refused = app.upgrade(head);
      if (refused !== undefined) {
        send(res, refused, true);
        return;
      }
      res.upgrade(
        { remote: Buffer.from(res.getRemoteAddressAsText()).toString() },
        req.getHeader("sec-websocket-key"),
        req.getHeader("sec-websocket-protocol"),
        req.getHeader("sec-websocket-extensions"),
        context,
      );
    },
    open(ws) {
      const data = ws.getUserData();
      data.session = hub.open(
        {
          send: (text) => {
            ws.send(text, false, false);
          },
          bufferedAmount: () => ws.getBufferedAmount(),
          terminate: () => ws.close(),
          close: (code, reason) => ws.end(code, reason),
        },
        app.hosted,
        data.remote,
      );
    },
    message(ws, message) {
      ws.getUserData().session?.onMessage(Buffer.from(message).toString("utf8"));
    },
    close(ws) {
      const session = ws.getUserData().session;
      if (session !== undefined) hub.closed(session);
    },
  };
}

function serve(app: HttpApp, res: UwsResponse, req: UwsRequest): void {
  // uWS request objects are valid only in this synchronous frame: read everything now.
  const query = req.getQuery();
  const method = req.getCaseSensitiveMethod();
  const length = req.getHeader("content-length");
  const head: HttpRequestHead = {
    method,
    url: query ? `${req.getUrl()}?${query}` : req.getUrl(),
    contentType: optional(req.getHeader("content-type")),
    origin: optional(req.getHeader("origin")),
    contentLength: length === "" ? undefined : Number(length),
    requestHeaders:
      method === "OPTIONS" ? optional(req.getHeader("access-control-request-headers")) : undefined,
  };
  let aborted = false;
  res.onAborted(() => {
    aborted = true;
  });
  const early = app.head(head);
  if (early !== undefined) {
    send(res, early, early.headers.connection === "close");
    return;
  }
  const limit = app.maxBodyBytes;
  const chunks: Buffer[] = [];
  let size = 0;
  let rejected = false;
  res.onData((chunk, isLast) => {
    if (rejected) return;
    size += chunk.byteLength;
    if (size > limit) {
      // Read (and discard) the rest so the client, still uploading, gets the 413 rather than
      // a reset; past the drain bound, answer and close at once.
      chunks.length = 0;
      if (isLast || size > limit + app.drainBytes) {
        rejected = true;
        if (!aborted) send(res, app.tooLarge(head), true);
      }
      return;
    }
    let body: string;
    if (isLast && chunks.length === 0) {
      // The whole body in one chunk: decode it now, while its memory is still valid.
      body = Buffer.from(chunk).toString("utf8");
    } else {
      // The chunk's memory is reused once this callback returns: copy it.
      chunks.push(Buffer.from(new Uint8Array(chunk)));
      if (!isLast) return;
      body = Buffer.concat(chunks).toString("utf8");
    }
    let reply: HttpReply | Promise<HttpReply>;
    try {
      reply = app.body(head, body);
    } catch {
      reply = INTERNAL_ERROR;
    }
    if (!(reply instanceof Promise)) {
      // Still inside uWS's callback: writes are corked already.
      send(res, reply, false);
      return;
    }
    reply.then(
      (r) => {
        if (!aborted) res.cork(() => send(res, r, false));
      },
      () => {
        if (!aborted) res.cork(() => send(res, INTERNAL_ERROR, true));
      },
    );
  });
}

function send(res: UwsResponse, reply: HttpReply, close: boolean): void {
  res.writeStatus(STATUS_TEXT[reply.status] ?? String(reply.status));
  for (const key in reply.headers) {
    if (key !== "connection") res.writeHeader(key, reply.headers[key]!);
  }
  res.end(reply.body, close);
}

function optional(value: string): string | undefined {
  return value === "" ? undefined : value;
}
