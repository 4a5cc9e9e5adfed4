import type { HostedAccess, Principal, RequestGuard } from "../access.js";
import {
  type AccessLogSink,
  type AccessRecord,
  isoNow,
  loggedCodes,
  loggedMethods,
  newNotes,
  since,
} from "../accessLog.js";
import type { Dispatcher, DispatchNotes, RequestId, WireOutput } from "../dispatcher.js";
import { errorResponse } from "../dispatcher.js";
import { RPCError, RPCErrorCode } from "../errors.js";
import type { RequestMetrics } from "../metrics.js";
import type { CallContext } from "../services.js";
import type { WsHub } from "../ws/hub.js";

/** What the transport read from the request line and headers. */
export interface HttpRequestHead {
  readonly method: string;
  /** Path and query, as sent. */
  readonly url: string;
  readonly contentType: string | undefined;
  readonly origin: string | undefined;
  readonly contentLength: number | undefined;
  /** `Access-Control-Request-Headers`, for CORS preflight. */
  readonly requestHeaders: string | undefined;
}

export interface HttpReply {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  /** Empty string: no body. Bytes: the UTF-8 of a large answer that came as bytes. */
  readonly body: string | Uint8Array;
}

export interface HttpAppOptions {
  readonly corsOrigins: readonly string[];
  readonly maxBodyBytes: number;
  /** A listener for WebSocket only (`--ws-port`): plain HTTP requests get 426. */
  readonly websocketOnly?: boolean;
}

export interface HealthReport {
  /** `degraded`: serving reads, refusing what needs a write (the report says why). */
  readonly status: "ok" | "degraded";
  readonly [key: string]: unknown;
}

/** `/ready`'s answer: the health report, whether the node is ready, and each check's figures. */
export interface ReadinessReport extends HealthReport {
  readonly ready: boolean;
  /** The names of the checks that failed. */
  readonly failed: readonly string[];
}

export interface HttpAppDeps {
  readonly dispatcher: Dispatcher;
  readonly health: () => HealthReport;
  /** `/ready`'s checks; without it `/ready` is 503 exactly while the health report is degraded. */
  readonly readiness?: () => ReadinessReport;
  /** WebSocket sessions; without it upgrades are refused. */
  readonly ws?: WsHub;
  /** Keys and limits of hosted mode; without it the node is local (the path is ignored). */
  readonly access?: HostedAccess;
  /** Told of the requests refused for their API key. */
  readonly metrics?: RequestMetrics;
  /** One record per request answered, when the node keeps an access log. */
  readonly accessLog?: AccessLogSink;
}

const JSON_TYPES = new Set(["application/json", "application/json-rpc", "application/jsonrequest"]);
const JSON_HEADERS: Readonly<Record<string, string>> = Object.freeze({
  "content-type": "application/json",
});

function isJsonType(contentType: string | undefined): boolean {
  const type = contentType?.split(";", 1)[0]?.trim().toLowerCase();
  return type !== undefined && JSON_TYPES.has(type);
}
const ALLOWED_METHODS = "POST, OPTIONS";

/**
 * The HTTP rules of the service, independent of the HTTP library: methods, paths, API keys,
 * content types, body limits and CORS. A transport feeds it request heads and bodies.
 */
export class HttpApp {
  readonly maxBodyBytes: number;
  /**
   * How much of an oversized body a transport still reads (and drops) after its 413, before it
   * closes. Closing with bytes unread while the client still uploads makes the client see a
   * reset instead of the 413; beyond this bound the upload is cut off anyway.
   */
  readonly drainBytes: number;
  readonly hosted: boolean;
  readonly websocketOnly: boolean;
  /** WebSocket sessions, when the service takes WebSocket connections. */
  readonly ws: WsHub | undefined;
  readonly #access: HostedAccess | undefined;
  /** Whether requests need the client's address: hosted mode, or an access log. */
  readonly needsRemote: boolean;
  readonly #corsAny: boolean;
  readonly #corsOrigins: ReadonlySet<string>;
  readonly #deps: HttpAppDeps;
  readonly #localCtx = { hosted: false } as const;

  constructor(opts: HttpAppOptions, deps: HttpAppDeps) {
    this.maxBodyBytes = opts.maxBodyBytes;
    this.drainBytes = Math.max(4 * opts.maxBodyBytes, 64 * 1024 * 1024);
    this.#access = deps.access;
    this.needsRemote = deps.access !== undefined || deps.accessLog !== undefined;
    this.hosted = deps.access !== undefined;
    this.websocketOnly = opts.websocketOnly === true;
    this.ws = deps.ws;
    this.#corsAny = opts.corsOrigins.includes("*");
    this.#corsOrigins = new Set(opts.corsOrigins);
    this.#deps = deps;
  }

  /**
   * Who a hosted request is from (its key, or its address where keyless requests are served),
   * or the 401 that refuses it; `undefined` in local mode.
   */
  principal(req: HttpRequestHead, remote: string | undefined): Principal | HttpReply | undefined {
    if (this.#access === undefined) return undefined;
    const who = this.#access.identify(lastSegment(pathOf(req.url)), remote);
    if (!("reason" in who)) return who;
    return who.reason === "unavailable"
      ? this.#error(
          req,
          503,
          who.message,
          { "retry-after": "1" },
          RPCErrorCode.RESOURCE_UNAVAILABLE,
        )
      : this.#error(req, 401, who.message);
  }

  /**
   * Answers what can be answered from the head alone; `undefined` means: read the body.
   * `remote`: the client's address (keyless limits, the access log).
   */
  head(req: HttpRequestHead, remote?: string): HttpReply | undefined {
    const reply = this.#head(req, remote);
    if (reply === undefined) return undefined;
    if (reply.status === 401) this.#deps.metrics?.unauthorized();
    if (this.#deps.accessLog !== undefined) this.#logged(req, reply, remote, performance.now(), 0);
    return reply;
  }

  /**
   * Whether `head` would answer from the head alone, without counting or logging anything
   * (`Expect: 100-continue`: the body is invited only when it would be read).
   */
  answersFromHead(req: HttpRequestHead, remote?: string): boolean {
    return this.#head(req, remote) !== undefined;
  }

  #head(req: HttpRequestHead, remote: string | undefined): HttpReply | undefined {
    const path = pathOf(req.url);
    if (req.method === "GET" && (path === "/health" || path === "/ready")) {
      const probe = path === "/health" ? healthReply(this.#deps) : readyReply(this.#deps);
      return this.#json(req, probe.status, probe.body);
    }
    if (this.websocketOnly) {
      return this.#error(
        req,
        426,
        "this port serves JSON-RPC over WebSocket only: connect with ws://",
        { upgrade: "websocket" },
      );
    }
    if (req.method === "OPTIONS") return this.#preflight(req);
    if (req.method !== "POST") {
      return this.#error(
        req,
        405,
        `method ${req.method} is not allowed: send JSON-RPC requests with POST`,
        {
          allow: ALLOWED_METHODS,
        },
      );
    }
    if (this.#access !== undefined) {
      const who = this.principal(req, remote);
      if (who !== undefined && "status" in who) return who;
    }
    const type = req.contentType;
    if (type !== "application/json" && !isJsonType(type)) {
      return this.#error(
        req,
        415,
        `unsupported content type ${JSON.stringify(req.contentType ?? "")}: send application/json`,
      );
    }
    if (req.contentLength !== undefined && req.contentLength > this.maxBodyBytes) {
      return this.#tooLarge(req);
    }
    return undefined;
  }

  /**
   * Whether a WebSocket upgrade may go ahead: `undefined` yes, else the reply that refuses it
   * (no WebSocket service, a missing or wrong API key in hosted mode, too many connections).
   */
  upgrade(req: HttpRequestHead, remote?: string): HttpReply | undefined {
    const refused = this.#upgrade(req, remote);
    if (this.#deps.accessLog !== undefined) {
      this.#logged(
        req,
        refused ?? { status: 101, headers: {}, body: "" },
        remote,
        performance.now(),
        0,
      );
    }
    return refused;
  }

  #upgrade(req: HttpRequestHead, remote: string | undefined): HttpReply | undefined {
    if (this.ws === undefined)
      return this.#error(req, 404, "this server does not serve WebSocket connections");
    if (this.#access !== undefined) {
      const who = this.principal(req, remote);
      if (who !== undefined && "status" in who) {
        this.#deps.metrics?.unauthorized();
        return who;
      }
    }
    if (!this.ws.accepting) {
      return this.#error(
        req,
        503,
        `too many WebSocket connections: this node serves at most ${this.ws.opts.maxConnections}`,
      );
    }
    return undefined;
  }

  /** The reply to a body over the limit; the transport closes the connection after it. */
  tooLarge(req: HttpRequestHead, remote?: string): HttpReply {
    const reply = this.#tooLarge(req);
    if (this.#deps.accessLog !== undefined)
      this.#logged(req, reply, remote, performance.now(), req.contentLength ?? 0);
    return reply;
  }

  #tooLarge(req: HttpRequestHead): HttpReply {
    return this.#error(
      req,
      413,
      `request body too large: the limit is ${this.maxBodyBytes} bytes`,
      {
        connection: "close",
      },
    );
  }

  /**
   * The reply to a request the transport could not take (a malformed or oversized head, a
   * missing Host): `status` and a JSON-RPC error; the transport closes the connection after it.
   */
  badRequest(req: HttpRequestHead, status: number, message: string, remote?: string): HttpReply {
    const reply = this.#error(req, status, status === 400 ? `bad request: ${message}` : message, {
      connection: "close",
    });
    if (this.#deps.accessLog !== undefined) this.#logged(req, reply, remote, performance.now(), 0);
    return reply;
  }

  /** The answer to a body; synchronous when every method in it is. */
  body(req: HttpRequestHead, body: string, remote?: string): HttpReply | Promise<HttpReply> {
    const access = this.#access;
    let ctx: CallContext = this.#localCtx;
    let guard: RequestGuard | undefined;
    if (access !== undefined) {
      // Again: a key revoked since the head was read is refused.
      const who = this.principal(req, remote);
      if (who === undefined || "status" in who) return who ?? this.#error(req, 500, "no access");
      guard = access.guard(who);
      const keyId = guard.keyId;
      ctx = keyId === undefined ? { hosted: true } : { hosted: true, keyId };
    }
    const logging = this.#deps.accessLog !== undefined;
    const start = logging ? performance.now() : 0;
    const notes = logging ? newNotes() : undefined;
    const out = this.#deps.dispatcher.dispatchWire(body, ctx, guard, notes);
    const answer = (o: WireOutput): HttpReply => {
      // Nothing ran: 429, safe to send again after Retry-After. Some members ran: 200, with
      // the refused ones' errors in their places.
      const reply =
        guard === undefined || guard.limited === 0
          ? this.#json(req, 200, o ?? "")
          : // Exposed, so that a dapp in a browser can read it too.
            this.#json(req, guard.admitted === 0 ? 429 : 200, o ?? "", {
              "retry-after": String(guard.retryAfterS),
              "access-control-expose-headers": "Retry-After",
            });
      if (logging) {
        const bytesIn = req.contentLength ?? Buffer.byteLength(body);
        this.#deps.accessLog?.write(
          httpRecord(req, reply, remote, ctx.keyId, notes, start, bytesIn),
        );
      }
      return reply;
    };
    return out instanceof Promise ? out.then(answer) : answer(out);
  }

  /** The access record of a reply given without running a method. */
  #logged(
    req: HttpRequestHead,
    reply: HttpReply,
    remote: string | undefined,
    start: number,
    bytesIn: number,
  ): void {
    this.#deps.accessLog?.write(
      httpRecord(req, reply, remote, undefined, undefined, start, bytesIn),
    );
  }

  #preflight(req: HttpRequestHead): HttpReply {
    const headers: Record<string, string> = { allow: ALLOWED_METHODS };
    const origin = this.#allowedOrigin(req.origin);
    if (origin !== undefined) {
      headers["access-control-allow-origin"] = origin;
      headers["access-control-allow-methods"] = ALLOWED_METHODS;
      headers["access-control-allow-headers"] = req.requestHeaders ?? "content-type";
      headers["access-control-max-age"] = "600";
      if (origin !== "*") headers.vary = "Origin";
    }
    return { status: 204, headers, body: "" };
  }

  #allowedOrigin(origin: string | undefined): string | undefined {
    if (origin === undefined) return undefined;
    if (this.#corsAny) return "*";
    return this.#corsOrigins.has(origin) ? origin : undefined;
  }

  #json(
    req: HttpRequestHead,
    status: number,
    body: string | Uint8Array,
    extra?: Record<string, string>,
  ): HttpReply {
    const origin = this.#allowedOrigin(req.origin);
    if (origin === undefined && extra === undefined) return { status, headers: JSON_HEADERS, body };
    const headers: Record<string, string> = { ...JSON_HEADERS, ...extra };
    if (origin !== undefined) {
      headers["access-control-allow-origin"] = origin;
      if (origin !== "*") headers.vary = "Origin";
    }
    return { status, headers, body };
  }

  #error(
    req: HttpRequestHead,
    status: number,
    message: string,
    extra?: Record<string, string>,
    code: number = RPCErrorCode.INVALID_REQUEST,
  ): HttpReply {
    const id: RequestId = null;
    return this.#json(req, status, errorResponse(id, new RPCError(code, message)), extra);
  }
}

/** The access record of an HTTP request: `notes` when it ran methods, else its refusal's code. */
function httpRecord(
  req: HttpRequestHead,
  reply: HttpReply,
  remote: string | undefined,
  keyId: string | undefined,
  notes: DispatchNotes | undefined,
  start: number,
  bytesIn: number,
): AccessRecord {
  const calls = notes === undefined ? 0 : notes.methods.length;
  return {
    time: isoNow(),
    transport: "http",
    remote,
    key: keyId,
    httpMethod: req.method,
    status: reply.status,
    methods: notes === undefined ? [] : loggedMethods(notes),
    calls,
    errors: notes === undefined ? refusalCode(reply) : loggedCodes(notes),
    ms: since(start),
    bytesIn,
    bytesOut: Buffer.byteLength(reply.body),
  };
}

const REFUSAL = /^\{"jsonrpc":"2\.0","id":null,"error":\{"code":(-?\d+)/;

/** The JSON-RPC error code of a refusal of this layer (see `#error`), for the access log. */
function refusalCode(reply: HttpReply): number[] {
  // Refusals are built here as text; an answer as bytes is a method's, never a refusal.
  if (typeof reply.body !== "string") return [];
  const found = REFUSAL.exec(reply.body);
  return found === null ? [] : [Number(found[1])];
}

/** `/health`: liveness, 200 while the node answers, with the health report. */
export function healthReply(deps: Pick<HttpAppDeps, "health">): {
  status: number;
  body: string;
} {
  return { status: 200, body: JSON.stringify(deps.health()) };
}

/**
 * `/ready`: readiness, 503 while a check fails (storage refusing writes, too few peers, too far
 * behind the network), so that a balancer sends its users elsewhere; the body says which.
 */
export function readyReply(deps: Pick<HttpAppDeps, "health" | "readiness">): {
  status: number;
  body: string;
} {
  if (deps.readiness !== undefined) {
    const report = deps.readiness();
    return { status: report.ready ? 200 : 503, body: JSON.stringify(report) };
  }
  const report = deps.health();
  return { status: report.status === "ok" ? 200 : 503, body: JSON.stringify(report) };
}

/** The path of a request target: origin form (`/a?b`) or absolute form (`http://host/a?b`). */
function pathOf(url: string): string {
  const q = url.indexOf("?");
  const target = q === -1 ? url : url.slice(0, q);
  if (target.charCodeAt(0) === 0x2f) return target;
  const scheme = target.indexOf("://");
  if (scheme === -1) return target;
  const slash = target.indexOf("/", scheme + 3);
  return slash === -1 ? "/" : target.slice(slash);
}

function lastSegment(path: string): string {
  const trimmed = path.endsWith("/") ? path.slice(0, -1) : path;
  const segment = trimmed.slice(trimmed.lastIndexOf("/") + 1);
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}
