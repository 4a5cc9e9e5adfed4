import type { Logger } from "@nodex/types";
import type { HostedAccess, Principal, RequestGuard } from "../access.js";
import {
  type AccessLogSink,
  isoNow,
  loggedCodes,
  loggedMethods,
  newNotes,
  since,
} from "../accessLog.js";
import { type Dispatcher, type DispatchNotes, errorResponse } from "../dispatcher.js";
import { RPCError, RPCErrorCode } from "../errors.js";
import type { RequestMetrics } from "../metrics.js";
import { OTHER_METHOD } from "../registry.js";
import type { CallContext, SubscriptionHost, SubscriptionRequest } from "../services.js";
import type { NotificationSink, SubscriptionManager } from "../subscriptions.js";

/** The parts of a WebSocket a session uses, whichever library holds it. */
export interface WsSocket {
  send(text: string): void;
  /** Bytes queued for the peer and not yet written to the network. */
  bufferedAmount(): number;
  /** Drops the connection at once (no closing handshake: the peer may not be reading). */
  terminate(): void;
  /** Starts the closing handshake. */
  close(code: number, reason: string): void;
}

export interface WsSessionOptions {
  /** Bytes a connection may leave unread; past it the connection is dropped. */
  readonly maxBufferedBytes: number;
  readonly hosted: boolean;
  /** The peer's address, for the log. */
  readonly remote: string;
  /** Messages whose answers are still being worked out; past it a message is refused. */
  readonly maxInFlight: number;
  /** Who opened the connection (hosted mode): its key is checked again on every message. */
  readonly principal?: Principal;
}

export interface WsSessionDeps {
  readonly dispatcher: Dispatcher;
  readonly subscriptions: SubscriptionManager | undefined;
  readonly logger: Logger;
  readonly access?: HostedAccess;
  /** One record per message answered, when the node keeps an access log. */
  readonly accessLog?: AccessLogSink;
  /** Told of the messages refused before the dispatcher saw them. */
  readonly metrics?: RequestMetrics;
}

/** WebSocket close code for a peer that does not read what it is sent (RFC 6455: 1008). */
export const CLOSE_POLICY = 1008;
/** WebSocket close code when the node stops (RFC 6455: 1001). */
export const CLOSE_GOING_AWAY = 1001;

/**
 * One WebSocket connection: each text message is a JSON-RPC request or batch answered on the
 * same connection, plus the notifications of the subscriptions it made. A subscription's
 * notifications are held until the answer carrying its id has gone out. A peer that leaves
 * more than `maxBufferedBytes` unread is dropped with a logged reason; its subscriptions end
 * with it.
 */
export class WsSession implements NotificationSink {
  readonly #socket: WsSocket;
  readonly #opts: WsSessionOptions;
  readonly #deps: WsSessionDeps;
  /** Notifications of subscriptions whose id has not been answered yet. */
  readonly #held = new Map<string, string[]>();
  #closed = false;
  #inFlight = 0;

  constructor(socket: WsSocket, opts: WsSessionOptions, deps: WsSessionDeps) {
    this.#socket = socket;
    this.#opts = opts;
    this.#deps = deps;
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Answers one message. */
  onMessage(text: string): void {
    if (this.#closed) return;
    if (this.#inFlight >= this.#opts.maxInFlight) {
      const refusal = errorResponse(
        null,
        new RPCError(
          RPCErrorCode.LIMIT_EXCEEDED,
          `too many requests in flight on this connection: at most ${this.#opts.maxInFlight} await their answers; wait for answers before sending more`,
        ),
      );
      // Refused unread, as a body refused whole: one `other` call.
      const principal = this.#opts.principal;
      const keyId = principal?.kind === "key" ? principal.record.id : undefined;
      this.#deps.metrics?.call(OTHER_METHOD, keyId, RPCErrorCode.LIMIT_EXCEEDED, 0);
      if (this.#deps.accessLog !== undefined) {
        this.#logged(
          text,
          refusal,
          keyId,
          { methods: [OTHER_METHOD], codes: [RPCErrorCode.LIMIT_EXCEEDED] },
          performance.now(),
        );
      }
      this.#send(refusal);
      return;
    }
    let guard: RequestGuard | undefined;
    const { access } = this.#deps;
    const principal = this.#opts.principal;
    if (access !== undefined && principal !== undefined) {
      const still = access.stillValid(principal);
      if (still !== undefined && "reason" in still) {
        // The shared key registry cannot be read: refused, the connection stays.
        this.#send(
          errorResponse(null, new RPCError(RPCErrorCode.RESOURCE_UNAVAILABLE, still.message)),
        );
        return;
      }
      if (still === undefined) {
        // The key was revoked since the connection opened: its holder is told, then dropped.
        this.#send(
          errorResponse(
            null,
            new RPCError(RPCErrorCode.INVALID_REQUEST, "unauthorized: this API key was revoked"),
          ),
        );
        this.close(CLOSE_POLICY, "API key revoked");
        return;
      }
      guard = access.guard(still);
    }
    const created: string[] = [];
    const ctx = this.#context(created, guard?.keyId);
    const log = this.#deps.accessLog;
    const notes = log === undefined ? undefined : newNotes();
    const start = log === undefined ? 0 : performance.now();
    const answered = (o: string | undefined): void => {
      if (notes !== undefined) this.#logged(text, o, ctx.keyId, notes, start);
      this.#answered(o, created);
    };
    let out: ReturnType<Dispatcher["dispatch"]>;
    try {
      out = this.#deps.dispatcher.dispatch(text, ctx, guard, notes);
    } catch (err) {
      this.#deps.logger.error("WebSocket message failed", { err: String(err) });
      return;
    }
    if (typeof out === "object") {
      this.#inFlight++;
      out.then(
        (o) => {
          this.#inFlight--;
          answered(o);
        },
        (err: unknown) => {
          this.#inFlight--;
          this.#deps.logger.error("WebSocket message failed", { err: String(err) });
          answered(undefined);
        },
      );
    } else {
      answered(out);
    }
  }

  #logged(
    text: string,
    out: string | undefined,
    keyId: string | undefined,
    notes: DispatchNotes,
    start: number,
  ): void {
    this.#deps.accessLog?.write({
      time: isoNow(),
      transport: "ws",
      remote: this.#opts.remote,
      key: keyId,
      methods: loggedMethods(notes),
      calls: notes.methods.length,
      errors: loggedCodes(notes),
      ms: since(start),
      bytesIn: Buffer.byteLength(text),
      bytesOut: out === undefined ? 0 : Buffer.byteLength(out),
    });
  }

  /** The connection ended, whichever side ended it. */
  onClose(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#held.clear();
    this.#deps.subscriptions?.closeSink(this);
  }

  /** Closes the connection from the node's side (the node stops). */
  close(code = CLOSE_GOING_AWAY, reason = "node stopping"): void {
    if (this.#closed) return;
    this.onClose();
    try {
      this.#socket.close(code, reason);
    } catch {
      this.#socket.terminate();
    }
  }

  notify(subscription: string, text: string): void {
    if (this.#closed) return;
    const held = this.#held.get(subscription);
    if (held !== undefined) held.push(text);
    else this.#send(text);
  }

  #context(created: string[], keyId: string | undefined): CallContext {
    const subscriptions = this.#deps.subscriptions;
    const connection: SubscriptionHost | undefined =
      subscriptions === undefined
        ? undefined
        : {
            subscribe: (request: SubscriptionRequest) => {
              const id = subscriptions.subscribe(this, request);
              this.#held.set(id, []);
              created.push(id);
              return id;
            },
            unsubscribe: (id: string) => {
              this.#held.delete(id);
              return subscriptions.unsubscribe(this, id);
            },
          };
    const hosted = this.#opts.hosted;
    if (keyId !== undefined)
      return connection === undefined ? { hosted, keyId } : { hosted, keyId, connection };
    return connection === undefined ? { hosted } : { hosted, connection };
  }

  #answered(out: string | undefined, created: readonly string[]): void {
    if (out !== undefined) this.#send(out);
    for (const id of created) {
      const held = this.#held.get(id);
      this.#held.delete(id);
      if (held !== undefined) for (const text of held) this.#send(text);
    }
  }

  #send(text: string): void {
    if (this.#closed) return;
    this.#socket.send(text);
    const buffered = this.#socket.bufferedAmount();
    if (buffered > this.#opts.maxBufferedBytes) {
      this.#deps.logger.warn("WebSocket client dropped: it does not read what it is sent", {
        remote: this.#opts.remote,
        bufferedBytes: buffered,
        limit: this.#opts.maxBufferedBytes,
      });
      this.onClose();
      this.#socket.terminate();
    }
  }
}
