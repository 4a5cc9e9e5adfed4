import {
  createServer as createHttpServer,
  type IncomingMessage,
  type ServerResponse,
  STATUS_CODES,
} from "node:http";
import { type AddressInfo, createServer as createNetServer, type Socket } from "node:net";
import { type WebSocket, WebSocketServer } from "ws";
import type { HttpApp, HttpReply, HttpRequestHead } from "./app.js";
import type { HttpTransport } from "./transport.js";
import { KEEP_ALIVE_MS, WireConnection } from "./wire.js";

/**
 * The HTTP layer on Node's own modules. The common requests are read and answered on the
 * socket (`WireConnection`); a connection with anything else (WebSocket upgrades, chunked
 * bodies, `Expect`, oversized or malformed requests) goes to a node:http server from there on.
 */
export function createNodeHttpTransport(app: HttpApp): HttpTransport {
  const http = createHttpServer({ keepAliveTimeout: KEEP_ALIVE_MS }, (req, res) => {
    serve(app, req, res).catch(() => {
      if (!res.headersSent) res.writeHead(500).end();
      else res.destroy();
    });
  });
  const wss = new WebSocketServer({
    noServer: true,
    maxPayload: app.maxBodyBytes,
    perMessageDeflate: false,
  });
  http.on("upgrade", (req, socket: Socket, head: Buffer) => upgrade(app, wss, req, socket, head));
  const connections = new Set<Socket>();
  const handOver = (socket: Socket, unread: Buffer | undefined): void => {
    connections.delete(socket);
    // node:http would otherwise read the socket's handle directly, past the bytes put back.
    const handle = (socket as unknown as { _handle?: { _consumed?: boolean } })._handle;
    if (handle) handle._consumed = true;
    http.emit("connection", socket);
    if (unread !== undefined) socket.unshift(unread);
  };
  const server = createNetServer({ allowHalfOpen: true, noDelay: true }, (socket) => {
    connections.add(socket);
    socket.once("close", () => connections.delete(socket));
    new WireConnection(socket, app, handOver);
  });
  return {
    listen(host, port) {
      return new Promise((resolve, reject) => {
        server.once("error", reject);
        server.listen(port, host, () => {
          server.off("error", reject);
          // Starts node:http's checks of request and header timeouts on the connections it gets.
          http.emit("listening");
          const addr = server.address() as AddressInfo;
          resolve({ host: addr.address, port: addr.port });
        });
      });
    },
    close() {
      return new Promise((resolve) => {
        server.close(() => resolve());
        for (const socket of connections) socket.destroy();
        http.close(() => {});
        http.closeAllConnections();
        for (const client of wss.clients) client.terminate();
      });
    },
  };
}

function upgrade(
  app: HttpApp,
  wss: WebSocketServer,
  req: IncomingMessage,
  socket: Socket,
  head: Buffer,
): void {
  socket.on("error", () => socket.destroy());
  const refused = app.upgrade(headOf(req));
  if (refused !== undefined || app.ws === undefined) {
    const reply = refused ?? { status: 404, headers: {}, body: "" };
    const lines = [`HTTP/1.1 ${reply.status} ${STATUS_CODES[reply.status] ?? ""}`];
    for (const [key, value] of Object.entries(reply.headers)) lines.push(`${key}: ${value}`);
    lines.push(`content-length: ${Buffer.byteLength(reply.body)}`, "connection: close", "", "");
    socket.end(lines.join("\r\n") + reply.body);
    return;
  }
  const hub = app.ws;
  wss.handleUpgrade(req, socket, head, (ws: WebSocket) => {
    const session = hub.open(
      {
        send: (text) => ws.send(text),
        bufferedAmount: () => ws.bufferedAmount,
        terminate: () => ws.terminate(),
        close: (code, reason) => ws.close(code, reason),
      },
      app.hosted,
      `${req.socket.remoteAddress}:${req.socket.remotePort}`,
    );
    ws.on("message", (data: Buffer | Buffer[] | ArrayBuffer) => {
      const text = Array.isArray(data)
        ? Buffer.concat(data).toString("utf8")
        : Buffer.isBuffer(data)
          ? data.toString("utf8")
          : Buffer.from(data).toString("utf8");
      session.onMessage(text);
    });
    ws.on("close", () => hub.closed(session));
    ws.on("error", () => ws.terminate());
  });
}

function headOf(req: IncomingMessage): HttpRequestHead {
  const lengthHeader = req.headers["content-length"];
  return {
    method: req.method ?? "GET",
    url: req.url ?? "/",
    contentType: req.headers["content-type"],
    origin: req.headers.origin,
    contentLength: lengthHeader === undefined ? undefined : Number(lengthHeader),
    requestHeaders: header(req.headers["access-control-request-headers"]),
  };
}

async function serve(app: HttpApp, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const head = headOf(req);
  const early = app.head(head);
  if (early !== undefined) {
    send(res, early);
    // Drop the connection once the answer is out rather than read a body we refuse.
    if (early.headers.connection === "close") res.once("finish", () => req.destroy());
    else req.resume();
    return;
  }
  const body = await readBody(req, app.maxBodyBytes, app.drainBytes);
  if (body === TOO_LARGE || body === CUT_OFF) {
    send(res, app.tooLarge(head));
    if (body === CUT_OFF) res.once("finish", () => req.destroy());
    return;
  }
  const reply = app.body(head, body);
  send(res, reply instanceof Promise ? await reply : reply);
}

const TOO_LARGE = Symbol("body over the limit, read to its end");
const CUT_OFF = Symbol("body over the limit and the drain bound, not read to its end");

/**
 * Reads the whole body as UTF-8. Past `limit` bytes it keeps reading and discarding, so the
 * 413 reaches a client that is still uploading; past `limit + drain` it stops reading.
 */
function readBody(
  req: IncomingMessage,
  limit: number,
  drain: number,
): Promise<string | typeof TOO_LARGE | typeof CUT_OFF> {
  return new Promise((resolve, reject) => {
    let chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= limit) {
        chunks.push(chunk);
      } else if (size > limit + drain) {
        req.off("data", onData);
        req.pause();
        resolve(CUT_OFF);
      } else {
        chunks = [];
      }
    };
    req.on("data", onData);
    req.once("end", () => {
      if (size > limit) resolve(TOO_LARGE);
      else
        resolve(
          chunks.length === 1
            ? chunks[0]!.toString("utf8")
            : Buffer.concat(chunks).toString("utf8"),
        );
    });
    req.once("error", reject);
  });
}

function send(res: ServerResponse, reply: HttpReply): void {
  // With its length stated, the answer goes out whole in one write; node:http would otherwise
  // send it in chunked encoding, in three.
  if (reply.status === 204 || reply.status === 304) res.writeHead(reply.status, reply.headers);
  else
    res.writeHead(reply.status, {
      ...reply.headers,
      "content-length": String(Buffer.byteLength(reply.body)),
    });
  res.end(reply.body);
}

function header(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value.join(", ") : value;
}
