import { STATUS_CODES } from "node:http";
import type { Socket } from "node:net";
import { releaseAnswerBuffer } from "../answerBuffers.js";
import type { HttpApp, HttpReply, HttpRequestHead } from "./app.js";

/**
 * The requests JSON-RPC clients send, read and answered on the socket itself: HTTP/1.1 `POST`,
 * `GET` and `OPTIONS` with a `Content-Length` body (or none) and no `Expect`, `Upgrade` or
 * `Transfer-Encoding`, one after another on a keep-alive connection.
 *
 * node:http makes a request object, a response object and their streams for each request, and
 * answers each in its own callback; this reads the head and body straight from the socket's
 * buffer and writes the answer in one write. Anything else, and anything it cannot read with
 * certainty (a malformed head, an oversized one or an oversized body, bare line feeds, duplicate
 * fields it uses), goes to node:http with the connection: `handOver` gets the socket and the
 * bytes not yet answered, at a request boundary, with every earlier answer already written.
 */
export class WireConnection {
  /** Bytes received and not yet answered, in order: joined only when a request may be whole. */
  #parts: Buffer[] = [];
  #size = 0;
  /** How many bytes the request begun needs in all before reading again is of use. */
  #need = 0;
  /** An answer is being computed; later requests wait in `#parts`, in order. */
  #busy = false;
  /** The client read too slowly: reading waits for the socket's `drain`. */
  #draining = false;
  /** Set once the connection is closing or handed over: nothing more is read here. */
  #done = false;
  /** The client half-closed: close after the answers owed. */
  #ended = false;
  /** When the request now partly received began (0: none is). */
  #startedAt = 0;
  /** Answers written and not yet handed to the socket (see `#cork`). */
  #corked: (string | Uint8Array)[] | undefined;

  readonly socket: Socket;
  readonly #app: HttpApp;
  readonly #handOverTo: (socket: Socket, unread: Buffer | undefined) => void;

  constructor(
    socket: Socket,
    app: HttpApp,
    handOver: (socket: Socket, unread: Buffer | undefined) => void,
  ) {
    this.socket = socket;
    this.#app = app;
    this.#handOverTo = handOver;
    socket.setTimeout(KEEP_ALIVE_MS);
    socket.on("data", this.#onData);
    socket.on("drain", this.#onDrain);
    socket.on("end", this.#onEnd);
    socket.on("timeout", this.#onTimeout);
    socket.on("error", onError);
  }

  readonly #onData = (chunk: Buffer): void => {
    if (WireConnection.#lastReader !== this) {
      WireConnection.#lastReader = this;
      WireConnection.#othersAt = performance.now();
    }
    this.#parts.push(chunk);
    this.#size += chunk.length;
    if (this.#busy) this.#flow();
    else if (this.#size >= this.#need) this.#read();
    else this.#partial();
  };

  readonly #onDrain = (): void => {
    this.#draining = false;
    this.#flow();
  };

  readonly #onEnd = (): void => {
    this.#ended = true;
    if (!this.#busy && !this.#done) this.#finish();
  };

  readonly #onTimeout = (): void => {
    // Idle between requests, or a request stalled for the whole period: close. A request
    // being answered keeps its connection; writing the answer restarts the clock.
    if (!this.#busy) this.socket.destroy();
  };

  /** Answers the complete requests in the buffer, in order, until one has to wait. */
  #read(): void {
    if (this.#size === 0 || this.#done) return;
    const buf = this.#parts.length === 1 ? this.#parts[0]! : Buffer.concat(this.#parts, this.#size);
    let at = 0;
    let need = 0;
    while (at < buf.length) {
      const end = buf.indexOf(HEAD_END, at);
      if (end === -1 || end - at > MAX_HEAD_BYTES) {
        if (end !== -1 || buf.length - at > MAX_HEAD_BYTES || hasBareLineFeed(buf, at)) {
          this.#handOver(buf, at);
          return;
        }
        break;
      }
      const request = parseHead(buf.toString("latin1", at, end));
      if (request === undefined || request.bodyLength > this.#app.maxBodyBytes) {
        this.#handOver(buf, at);
        return;
      }
      const bodyStart = end + 4;
      const bodyEnd = bodyStart + request.bodyLength;
      if (bodyEnd > buf.length) {
        need = bodyEnd - at;
        break;
      }
      const body = request.bodyLength === 0 ? "" : buf.toString("utf8", bodyStart, bodyEnd);
      at = bodyEnd;
      this.#startedAt = 0;
      this.#answer(request, body);
      if (this.#busy || this.#done) break;
    }
    const rest = at === 0 ? buf : buf.subarray(at);
    this.#parts = rest.length === 0 ? [] : [rest];
    this.#size = rest.length;
    this.#need = need;
    if (!this.#busy && !this.#done) {
      if (this.#ended) this.#finish();
      else if (this.#size > 0) this.#partial();
    }
    this.#flow();
  }

  /** A request has begun but not all of it is here: bound how long it may take. */
  #partial(): void {
    const now = Date.now();
    // As node:http: the head within 60 s of the request's first byte, the whole within 300 s.
    const limit = this.#need > 0 ? REQUEST_TIMEOUT_MS : HEADERS_TIMEOUT_MS;
    if (this.#startedAt === 0) this.#startedAt = now;
    else if (now - this.#startedAt > limit) this.socket.destroy();
  }

  #answer(request: WireRequest, body: string): void {
    // The client's address costs a system call: read only for keyless limits or the access log.
    const remote = this.#app.needsRemote ? this.socket.remoteAddress : undefined;
    const early = this.#app.head(request.head, remote);
    if (early !== undefined) {
      this.#write(early, request.close || early.headers.connection === "close");
      return;
    }
    let reply: HttpReply | Promise<HttpReply>;
    try {
      reply = this.#app.body(request.head, body, remote);
    } catch {
      reply = INTERNAL_ERROR;
    }
    if (!(reply instanceof Promise)) {
      this.#write(reply, request.close);
      return;
    }
    this.#busy = true;
    WireConnection.#answering++;
    reply.then(
      (r) => this.#answered(r, request.close),
      () => this.#answered(INTERNAL_ERROR, true),
    );
  }

  #answered(reply: HttpReply, close: boolean): void {
    this.#busy = false;
    WireConnection.#answering--;
    if (this.socket.destroyed) return;
    this.#write(reply, close);
    if (this.#done) return;
    if (this.#size > 0) this.#read();
    else if (this.#ended) this.#finish();
    else this.#flow();
  }

  #write(reply: HttpReply, close: boolean): void {
    const status = reply.status;
    let head = STATUS_LINES[status] ?? `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ""}\r\n`;
    const headers = reply.headers;
    for (const key in headers) {
      if (key !== "connection") head += `${key}: ${headers[key]}\r\n`;
    }
    if (status !== 204 && status !== 304) {
      head += `content-length: ${Buffer.byteLength(reply.body)}\r\n`;
    }
    head += `date: ${utcDate()}\r\n${close ? CLOSE : KEEP_ALIVE}`;
    const body = reply.body;
    // Bytes, and a large body, are written after the head rather than joined to it: the joined
    // string would be flattened into a new one to be written, as large (see `LARGE_BODY`).
    const large = typeof body !== "string" || body.length >= LARGE_BODY;
    // While other connections are sending too (or this one holds answers already: it is then
    // among those to flush), this answer waits for the end of the turn.
    if (
      WireConnection.#toFlush.length > 0 ||
      WireConnection.#answering > 0 ||
      performance.now() - WireConnection.#othersAt < CONCURRENT_MS
    ) {
      if (large) {
        this.#cork(head);
        this.#cork(body);
      } else this.#cork(head + (body as string));
    } else if (large) this.#sendAll([head, body]);
    else this.#send(head + (body as string));
    if (close) this.#finish();
  }

  /**
   * Holds an answer until the end of the event loop's turn, when each connection's go out in
   * one write. Used while several connections are sending (many clients at once: one received
   * bytes after another within the last `CONCURRENT_MS`): the answers to what the turn read then
   * leave together, a client woken by the first finds the others there instead of being woken
   * for each, and the node's writes find the clients awake. uWebSockets.js corks its writes in
   * the same way. A client alone is answered at once: holding its answer would only make it
   * wait for whatever else the turn does.
   */
  #cork(data: string | Uint8Array): void {
    const corked = this.#corked;
    if (corked !== undefined) {
      const last = corked.length - 1;
      const before = corked[last]!;
      if (
        typeof data === "string" &&
        typeof before === "string" &&
        data.length < LARGE_BODY &&
        before.length < LARGE_BODY
      )
        corked[last] = before + data;
      else corked.push(data);
      return;
    }
    this.#corked = [data];
    WireConnection.#toFlush.push(this);
    if (!WireConnection.#flushScheduled) {
      WireConnection.#flushScheduled = true;
      setImmediate(WireConnection.#flushAll);
    }
  }

  /** Answers being computed, on every connection. */
  static #answering = 0;
  /** The connection that received bytes last, and when one received after another did. */
  static #lastReader: WireConnection | undefined;
  static #othersAt = Number.NEGATIVE_INFINITY;
  static #toFlush: WireConnection[] = [];
  static #flushScheduled = false;

  static readonly #flushAll = (): void => {
    WireConnection.#flushScheduled = false;
    const connections = WireConnection.#toFlush;
    WireConnection.#toFlush = [];
    for (const connection of connections) connection.#flush();
  };

  /** Writes the corked answers now (before the connection ends or changes hands). */
  #flush(): void {
    const data = this.#corked;
    if (data === undefined) return;
    this.#corked = undefined;
    if (this.socket.destroyed) return;
    if (data.length === 1) this.#send(data[0]!);
    else this.#sendAll(data);
  }

  #send(data: string | Uint8Array): void {
    // An answer's bytes may sit in a buffer to be used again once the socket has taken them.
    const written =
      typeof data === "string"
        ? this.socket.write(data)
        : this.socket.write(data, (err) => {
            if (err === undefined || err === null) releaseAnswerBuffer(data);
          });
    if (!written && !this.#done) {
      this.#draining = true;
      this.#flow();
    }
  }

  /** `parts` in one write of the socket (a `writev`). */
  #sendAll(parts: readonly (string | Uint8Array)[]): void {
    this.socket.cork();
    for (const part of parts) this.#send(part);
    this.socket.uncork();
  }

  /** No more is read here: the connection closes or goes to node:http. */
  #stop(): void {
    this.#done = true;
    this.#parts = [];
    this.#size = 0;
  }

  #finish(): void {
    this.#stop();
    this.#flush();
    this.socket.end();
  }

  #handOver(buf: Buffer, at: number): void {
    this.#stop();
    // node:http writes its answers after the ones owed here.
    this.#flush();
    const socket = this.socket;
    socket.off("data", this.#onData);
    socket.off("drain", this.#onDrain);
    socket.off("end", this.#onEnd);
    socket.off("timeout", this.#onTimeout);
    socket.off("error", onError);
    socket.setTimeout(0);
    if (socket.isPaused()) socket.resume();
    this.#handOverTo(socket, at < buf.length ? buf.subarray(at) : undefined);
  }

  /** Stops reading while the client does not read its answers or a long answer holds a queue. */
  #flow(): void {
    if (this.#done) return;
    const hold =
      this.#draining || (this.#busy && this.#size > this.#app.maxBodyBytes + MAX_HEAD_BYTES);
    if (hold !== this.socket.isPaused()) {
      if (hold) this.socket.pause();
      else this.socket.resume();
    }
  }
}

interface WireRequest {
  readonly head: HttpRequestHead;
  readonly bodyLength: number;
  /** The client asked to close the connection after this answer. */
  readonly close: boolean;
}

/**
 * Bodies of at least this many characters are written after their head, not joined to it. V8
 * places each string over 128 kB in fresh memory of its own, whose pages the system faults in one
 * by one: a joined answer of a few hundred kB (`eth_getLogs` of 500 logs: 300 kB) took more CPU
 * to flatten than the rest of its answer.
 */
const LARGE_BODY = 32 * 1024;

/** How recently another connection must have sent for answers to be held to the turn's end. */
const CONCURRENT_MS = 2;

/** node:http's defaults, which requests handed over meet. */
const MAX_HEAD_BYTES = 16 * 1024;
export const KEEP_ALIVE_MS = 30_000;
const HEADERS_TIMEOUT_MS = 60_000;
const REQUEST_TIMEOUT_MS = 300_000;

const HEAD_END = Buffer.from("\r\n\r\n", "latin1");
const INTERNAL_ERROR: HttpReply = { status: 500, headers: {}, body: "" };
const KEEP_ALIVE = `connection: keep-alive\r\nkeep-alive: timeout=${KEEP_ALIVE_MS / 1000}\r\n\r\n`;
const CLOSE = "connection: close\r\n\r\n";
const STATUS_LINES: Readonly<Record<number, string>> = Object.fromEntries(
  [200, 204, 401, 404, 405, 413, 415, 426, 500, 503].map((s) => [
    s,
    `HTTP/1.1 ${s} ${STATUS_CODES[s]}\r\n`,
  ]),
);

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** A request target: visible ASCII only. */
const TARGET = /^[\x21-\x7e]+$/;
const DIGITS = /^\d{1,15}$/;

/** Reads a request head (without its blank line); `undefined`: node:http's to read. */
export function parseHead(text: string): WireRequest | undefined {
  const lineEnd = text.indexOf("\r\n");
  const first = lineEnd === -1 ? text : text.slice(0, lineEnd);
  const sp1 = first.indexOf(" ");
  const sp2 = first.indexOf(" ", sp1 + 1);
  if (sp1 <= 0 || sp2 === -1) return undefined;
  const method = first.slice(0, sp1);
  if (method !== "POST" && method !== "GET" && method !== "OPTIONS") return undefined;
  const url = first.slice(sp1 + 1, sp2);
  if (!TARGET.test(url) || first.slice(sp2 + 1) !== "HTTP/1.1") return undefined;

  let hosts = 0;
  let contentLength: number | undefined;
  let contentType: string | undefined;
  let origin: string | undefined;
  let requestHeaders: string | undefined;
  let close = false;
  let at = lineEnd;
  while (at !== -1) {
    const start = at + 2;
    const next = text.indexOf("\r\n", start);
    const line = next === -1 ? text.slice(start) : text.slice(start, next);
    at = next;
    const colon = line.indexOf(":");
    if (colon <= 0) return undefined;
    const name = line.slice(0, colon);
    if (!TOKEN.test(name)) return undefined;
    const value = trimSpaces(line.slice(colon + 1));
    if (hasControl(value)) return undefined;
    switch (name.toLowerCase()) {
      case "host":
        hosts++;
        break;
      case "content-length":
        if (contentLength !== undefined || !DIGITS.test(value)) return undefined;
        contentLength = Number(value);
        break;
      case "content-type":
        if (contentType !== undefined) return undefined;
        contentType = value;
        break;
      case "origin":
        if (origin !== undefined) return undefined;
        origin = value;
        break;
      case "access-control-request-headers":
        if (requestHeaders !== undefined) return undefined;
        requestHeaders = value;
        break;
      case "connection":
        for (const token of value.split(",")) {
          const option = trimSpaces(token).toLowerCase();
          if (option === "close") close = true;
          else if (option === "upgrade") return undefined;
        }
        break;
      case "transfer-encoding":
      case "expect":
      case "upgrade":
        return undefined;
    }
  }
  // HTTP/1.1 requires exactly one Host; node:http answers 400 to the others.
  if (hosts !== 1) return undefined;
  return {
    head: {
      method,
      url,
      contentType,
      origin,
      contentLength,
      requestHeaders: method === "OPTIONS" ? requestHeaders : undefined,
    },
    bodyLength: contentLength ?? 0,
    close,
  };
}

/** Strips the optional whitespace of HTTP (spaces and tabs) from both ends. */
function trimSpaces(value: string): string {
  let start = 0;
  let end = value.length;
  while (start < end && isSpace(value.charCodeAt(start))) start++;
  while (end > start && isSpace(value.charCodeAt(end - 1))) end--;
  return start === 0 && end === value.length ? value : value.slice(start, end);
}

/** Control characters other than tab (bare CR and LF among them) and DEL. */
function hasControl(value: string): boolean {
  for (let i = 0; i < value.length; i++) {
    const code = value.charCodeAt(i);
    if ((code < 0x20 && code !== 0x09) || code === 0x7f) return true;
  }
  return false;
}

function isSpace(code: number): boolean {
  return code === 0x20 || code === 0x09;
}

/** A line feed without its carriage return: a head this reader would never see the end of. */
function hasBareLineFeed(buf: Buffer, from: number): boolean {
  for (let i = buf.indexOf(0x0a, from); i !== -1; i = buf.indexOf(0x0a, i + 1)) {
    if (i === from || buf[i - 1] !== 0x0d) return true;
  }
  return false;
}

function onError(this: Socket): void {
  this.destroy();
}

let date = "";
/** The `Date` of answers, made at most once a second. */
function utcDate(): string {
  if (date === "") {
    const now = new Date();
    date = now.toUTCString();
    setTimeout(() => {
      date = "";
    }, 1000 - now.getMilliseconds()).unref();
  }
  return date;
}
