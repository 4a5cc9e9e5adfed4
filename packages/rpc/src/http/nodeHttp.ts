import {
  createServer as createHttpServer,
  type IncomingMessage,
  maxHeaderSize,
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
  // The Host rule is applied in `serve`, so that its answer carries a JSON-RPC error.
  const options = { keepAliveTimeout: KEEP_ALIVE_MS, requireHostHeader: false };
  const onRequest = (req: IncomingMessage, res: ServerResponse): void => {
    serve(app, req, res).catch(() => {
      if (!res.headersSent) res.writeHead(500).end();
      else res.destroy();
    });
  };
  const http = createHttpServer(options, onRequest);
  // `Expect: 100-continue`: a request refused from its head (a body over the limit, a wrong
  // method or content type) gets its answer instead of the invitation to send the body.
  http.on("checkContinue", (req: IncomingMessage, res: ServerResponse) => {
    if (!app.answersFromHead(headOf(req), req.socket.remoteAddress)) res.writeContinue();
    onRequest(req, res);
  });
  http.on("clientError", (err: NodeJS.ErrnoException, socket: Socket) =>
    clientError(app, err, socket),
  );
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
  const refused = app.upgrade(headOf(req), req.socket.remoteAddress);
  if (refused !== undefined || app.ws === undefined) {
    socket.end(replyText(refused ?? { status: 404, headers: {}, body: "" }, true));
    return;
  }
  const hub = app.ws;
  const who = app.principal(headOf(req), req.socket.remoteAddress);
  const principal = who === undefined || "status" in who ? undefined : who;
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
      principal,
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
  if (req.httpVersionMajor === 1 && req.httpVersionMinor >= 1 && req.headers.host === undefined) {
    // RFC 9112 §3.2: a server answers 400 to an HTTP/1.1 request without Host.
    refuse(
      app,
      req,
      res,
      app.badRequest(
        head,
        400,
        "an HTTP/1.1 request must have a Host header",
        req.socket.remoteAddress,
      ),
    );
    return;
  }
  const remote = req.socket.remoteAddress;
  const early = app.head(head, remote);
  if (early !== undefined) {
    if (early.headers.connection === "close") refuse(app, req, res, early);
    else {
      send(res, early);
      req.resume();
    }
    return;
  }
  const body = await readBody(req, app.maxBodyBytes);
  if (body === TOO_LARGE) {
    refuse(app, req, res, app.tooLarge(head, remote));
    return;
  }
  const reply = app.body(head, body, remote);
  send(res, reply instanceof Promise ? await reply : reply);
}

const TOO_LARGE = Symbol("body over the limit");

/** Reads the whole body as UTF-8; stops at the first byte past `limit`. */
function readBody(req: IncomingMessage, limit: number): Promise<string | typeof TOO_LARGE> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= limit) {
        chunks.push(chunk);
        return;
      }
      req.off("data", onData);
      resolve(TOO_LARGE);
    };
    req.on("data", onData);
    req.once("end", () => {
      if (size <= limit)
        resolve(
          chunks.length === 1
            ? chunks[0]!.toString("utf8")
            : Buffer.concat(chunks).toString("utf8"),
        );
    });
    req.once("error", reject);
  });
}

/**
 * Answers a request with a last reply (`connection: close`) without waiting for its body, in
 * turn after the answers owed on the connection, and closes (see `closeWith`).
 */
function refuse(app: HttpApp, req: IncomingMessage, res: ServerResponse, reply: HttpReply): void {
  // What the client still sends of the body is read and dropped.
  req.resume();
  const socket = req.socket;
  const go = () => closeWith(socket, reply, app.drainBytes);
  // node:http gives a response the socket once the earlier ones on it have been written.
  if (res.socket !== null) go();
  else res.once("socket", go);
}

/** Sockets given a last answer: nothing more is written to them. */
const closing = new WeakSet<Socket>();

/** How long a connection given a last answer stays open to take what the client still sends. */
const LINGER_MS = 5_000;

/**
 * Writes a last answer and closes the connection without losing it. A client still sending
 * (a body the node refuses) would get a reset rather than the answer if the node closed with
 * bytes unread: the node ends its side after the answer, then reads and drops what comes, up
 * to `drainBytes` or for `LINGER_MS`, and closes once the client closes its side.
 */
function closeWith(socket: Socket, reply: HttpReply, drainBytes: number): void {
  if (closing.has(socket) || socket.destroyed) return;
  closing.add(socket);
  socket.end(replyText(reply, true));
  let dropped = 0;
  socket.on("data", (chunk: Buffer) => {
    dropped += chunk.length;
    if (dropped > drainBytes) socket.destroy();
  });
  if (socket.isPaused()) socket.resume();
  const timer = setTimeout(() => socket.destroy(), LINGER_MS);
  timer.unref();
  socket.once("close", () => clearTimeout(timer));
}

/**
 * The answer to a request node:http could not read, with a JSON-RPC error: 431 for a head over
 * its size limit, 408 for a request not received in time, 400 for malformed ones. As node:http's
 * own answer, it is written only where no answer to an earlier request has begun.
 */
function clientError(app: HttpApp, err: NodeJS.ErrnoException, socket: Socket): void {
  if (closing.has(socket)) return;
  const pending = (socket as { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (
    err.code === "ECONNRESET" ||
    err.code === "EPIPE" ||
    !socket.writable ||
    pending?.headersSent === true
  ) {
    socket.destroy();
    return;
  }
  const head: HttpRequestHead = {
    method: "POST",
    url: "/",
    contentType: undefined,
    origin: undefined,
    contentLength: undefined,
    requestHeaders: undefined,
  };
  let reply: HttpReply;
  switch (err.code) {
    case "HPE_HEADER_OVERFLOW":
      reply = app.badRequest(
        head,
        431,
        `request head too large: the limit is ${maxHeaderSize} bytes`,
        socket.remoteAddress,
      );
      break;
    case "ERR_HTTP_REQUEST_TIMEOUT":
      reply = app.badRequest(
        head,
        408,
        "request timed out: the request was not received in time",
        socket.remoteAddress,
      );
      break;
    default: {
      const reason = (err as { reason?: unknown }).reason;
      reply = app.badRequest(
        head,
        400,
        `malformed HTTP request${typeof reason === "string" && reason !== "" ? ` (${reason})` : ""}`,
        socket.remoteAddress,
      );
    }
  }
  closeWith(socket, reply, app.drainBytes);
}

/** An answer as it goes on the wire, for writes outside node:http's responses. */
function replyText(reply: HttpReply, close: boolean): string {
  const lines = [`HTTP/1.1 ${reply.status} ${STATUS_CODES[reply.status] ?? ""}`];
  for (const [key, value] of Object.entries(reply.headers)) {
    if (key !== "connection") lines.push(`${key}: ${value}`);
  }
  lines.push(`content-length: ${Buffer.byteLength(reply.body)}`);
  lines.push(`date: ${new Date().toUTCString()}`);
  lines.push(close ? "connection: close" : "connection: keep-alive", "", "");
  const body = reply.body;
  return (
    lines.join("\r\n") + (typeof body === "string" ? body : Buffer.from(body).toString("utf8"))
  );
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
