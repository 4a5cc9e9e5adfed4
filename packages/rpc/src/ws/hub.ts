import type { Logger } from "@nodex/types";
import type { HostedAccess, Principal } from "../access.js";
import type { AccessLogSink } from "../accessLog.js";
import type { Dispatcher } from "../dispatcher.js";
import type { RequestMetrics } from "../metrics.js";
import type { SubscriptionManager } from "../subscriptions.js";
import { WsSession, type WsSocket } from "./session.js";

export interface WsOptions {
  /** Bytes one connection may leave unread before it is dropped. */
  readonly maxBufferedBytes: number;
  /** Open WebSocket connections at once, over all listeners; past it upgrades get 503. */
  readonly maxConnections: number;
  /** Messages of one connection whose answers are pending; past it a message gets -32011. */
  readonly maxInFlight: number;
}

export const DEFAULT_WS_OPTIONS: WsOptions = {
  maxBufferedBytes: 16 * 1024 * 1024,
  maxConnections: 10_000,
  maxInFlight: 1000,
};

export interface WsHubDeps {
  readonly dispatcher: Dispatcher;
  readonly subscriptions: SubscriptionManager | undefined;
  readonly logger: Logger;
  /** Keys and limits of hosted mode. */
  readonly access?: HostedAccess;
  /** One record per message answered, when the node keeps an access log. */
  readonly accessLog?: AccessLogSink;
  /** Told of the messages refused before the dispatcher saw them. */
  readonly metrics?: RequestMetrics;
}

/** The open WebSocket sessions of the service, whichever listener and library took them. */
export class WsHub {
  readonly opts: WsOptions;
  readonly #deps: WsHubDeps;
  readonly #sessions = new Set<WsSession>();

  constructor(opts: WsOptions, deps: WsHubDeps) {
    this.opts = opts;
    this.#deps = deps;
  }

  get size(): number {
    return this.#sessions.size;
  }

  /** Whether another connection may open. */
  get accepting(): boolean {
    return this.#sessions.size < this.opts.maxConnections;
  }

  /** A session for a socket that just opened. */
  open(socket: WsSocket, hosted: boolean, remote: string, principal?: Principal): WsSession {
    const session = new WsSession(
      socket,
      {
        maxBufferedBytes: this.opts.maxBufferedBytes,
        maxInFlight: this.opts.maxInFlight,
        hosted,
        remote,
        ...(principal === undefined ? {} : { principal }),
      },
      this.#deps,
    );
    this.#sessions.add(session);
    return session;
  }

  /** The socket of `session` closed. */
  closed(session: WsSession): void {
    session.onClose();
    this.#sessions.delete(session);
  }

  /** Closes every connection (the node stops). */
  closeAll(): void {
    for (const session of this.#sessions) session.close();
    this.#sessions.clear();
  }
}
