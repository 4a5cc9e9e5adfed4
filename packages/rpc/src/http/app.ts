import type { HostedAccess, Principal } from "../access.js";
import type { Dispatcher, RequestId } from "../dispatcher.js";
import { errorResponse } from "../dispatcher.js";
import { RPCError, RPCErrorCode } from "../errors.js";
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
  /** Empty string: no body. */
  readonly body: string;
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

export interface HttpAppDeps {
  readonly dispatcher: Dispatcher;
  readonly health: () => HealthReport;
  /** WebSocket sessions; without it upgrades are refused. */
  readonly ws?: WsHub;
  /** Keys and limits of hosted mode; without it the node is local (the path is ignored). */
  readonly access?: HostedAccess;
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
  readonly #corsAny: boolean;
  readonly #corsOrigins: ReadonlySet<string>;
  readonly #deps: HttpAppDeps;
  readonly #localCtx = { hosted: false } as const;

  constructor(opts: HttpAppOptions, deps: HttpAppDeps) {
    this.maxBodyBytes = opts.maxBodyBytes;
    this.drainBytes = Math.max(4 * opts.maxBodyBytes, 64 * 1024 * 1024);
    this.#access = deps.access;
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
    return "reason" in who ? this.#error(req, 401, who.message) : who;
  }

  /** Answers what can be answered from the head alone; `undefined` means: read the body. */
  head(req: HttpRequestHead, remote?: string): HttpReply | undefined {
    const path = pathOf(req.url);
    if (req.method === "GET" && (path === "/health" || path === "/ready")) {
      // `/health` is liveness: 200 while the node answers. `/ready` is readiness: 503 while
      // the node is degraded, so that a balancer sends its users elsewhere.
      const report = this.#deps.health();
      const status = path === "/ready" && report.status !== "ok" ? 503 : 200;
      return this.#json(req, status, JSON.stringify(report));
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
      return this.tooLarge(req);
    }
    return undefined;
  }

  /**
   * Whether a WebSocket upgrade may go ahead: `undefined` yes, else the reply that refuses it
   * (no WebSocket service, a missing or wrong API key in hosted mode, too many connections).
   */
  upgrade(req: HttpRequestHead, remote?: string): HttpReply | undefined {
    if (this.ws === undefined)
      return this.#error(req, 404, "this server does not serve WebSocket connections");
    if (this.#access !== undefined) {
      const who = this.principal(req, remote);
      if (who !== undefined && "status" in who) return who;
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
  tooLarge(req: HttpRequestHead): HttpReply {
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
  badRequest(req: HttpRequestHead, status: number, message: string): HttpReply {
    return this.#error(req, status, status === 400 ? `bad request: ${message}` : message, {
      connection: "close",
    });
  }

  /** The answer to a body; synchronous when every method in it is. */
  body(req: HttpRequestHead, body: string, remote?: string): HttpReply | Promise<HttpReply> {
    const access = this.#access;
    if (access === undefined) {
      const out = this.#deps.dispatcher.dispatch(body, this.#localCtx);
      return typeof out === "object"
        ? out.then((o) => this.#json(req, 200, o ?? ""))
        : this.#json(req, 200, out ?? "");
    }
    // Again: a key revoked since the head was read is refused.
    const who = this.principal(req, remote);
    if (who === undefined || "status" in who) return who ?? this.#error(req, 500, "no access");
    const guard = access.guard(who);
    const keyId = guard.keyId;
    const out = this.#deps.dispatcher.dispatch(
      body,
      keyId === undefined ? { hosted: true } : { hosted: true, keyId },
      guard,
    );
    const reply = (o: string | undefined): HttpReply => {
      if (guard.limited === 0) return this.#json(req, 200, o ?? "");
      // Nothing ran: 429, safe to send again after Retry-After. Some members ran: 200, with
      // the refused ones' errors in their places.
      // Exposed, so that a dapp in a browser can read it too.
      return this.#json(req, guard.admitted === 0 ? 429 : 200, o ?? "", {
        "retry-after": String(guard.retryAfterS),
        "access-control-expose-headers": "Retry-After",
      });
    };
    return typeof out === "object" ? out.then(reply) : reply(out);
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
    body: string,
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
  ): HttpReply {
    const id: RequestId = null;
    return this.#json(
      req,
      status,
      errorResponse(id, new RPCError(RPCErrorCode.INVALID_REQUEST, message)),
      extra,
    );
  }
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
