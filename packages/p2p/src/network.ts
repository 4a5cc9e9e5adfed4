import { noise } from "@chainsafe/libp2p-noise";
import { type Identify, identify } from "@libp2p/identify";
import type { Connection, MultiaddrConnection, PeerId, Stream } from "@libp2p/interface";
import { mdns } from "@libp2p/mdns";
import { peerIdFromString } from "@libp2p/peer-id";
import { type Ping, ping } from "@libp2p/ping";
import { tcp } from "@libp2p/tcp";
import { yamux } from "@libp2p/yamux";
import { type Multiaddr, multiaddr } from "@multiformats/multiaddr";
import { DecodeError, type Logger } from "@nodex/types";
import { createLibp2p, type Libp2p, type ServiceFactoryMap } from "libp2p";
import type { ChainSource } from "./chainSource.js";
import { P2PError, P2PErrorCode } from "./errors.js";
import { FrameReader, writeFrame } from "./framing.js";
import type { NodeKey } from "./nodeKey.js";
import { defaultP2POptions, type P2POptions } from "./options.js";
import {
  FRAME_CAPS,
  Protocol,
  protocolId,
  REQUEST_PROTOCOLS,
  type RequestProtocol,
  type RequestTypes,
  ResultCode,
  requestSpec,
} from "./protocols.js";
import { RateLimiter } from "./rateLimiter.js";
import { decodeStatus, encodeStatus, type Status, statusMismatch } from "./status.js";

/** A peer whose status handshake is done: the network serves it and answers its requests. */
export interface PeerInfo {
  /** The peer id (`12D3KooW…`). */
  readonly id: string;
  /** Its last status: from the handshake, or a later `refreshStatus`. */
  readonly status: Status;
  /** Who opened the first connection: `outbound` when this node dialled. */
  readonly direction: "inbound" | "outbound";
  /** The remote multiaddr of that connection. */
  readonly remoteAddress: string;
}

/**
 * Something a peer did wrong, for a scoring module: a request it sent that broke the protocol
 * or went over the rate limit (`direction` inbound), or a bad or late answer to one of ours
 * (outbound).
 */
export interface PeerFault {
  readonly peer: string;
  readonly protocol: Protocol;
  readonly direction: "inbound" | "outbound";
  readonly error: P2PError;
}

/**
 * An inbound connection that never became a peer, for a scoring module to count against its
 * address: `stage` says how far it got.
 * - `accept`: refused, as more of the address's connections than `maxPendingPerAddress` were
 *   waiting for their handshakes;
 * - `encryption`: no encrypted channel: bytes that are not multistream-select, a protocol we do
 *   not offer, a failed noise handshake, silence until the upgrade's time ran out, or a close;
 * - `multiplexing`: encrypted, but no stream multiplexer agreed;
 * - `status`: upgraded, but closed, or silent past `statusTimeoutMs`, before the status
 *   handshake.
 */
export interface ConnectionFailure {
  /** The remote IP address. */
  readonly address: string;
  /** The remote multiaddr (`/ip4/…/tcp/…`). */
  readonly remoteAddress: string;
  readonly stage: "accept" | "encryption" | "multiplexing" | "status";
  readonly reason: string;
}

export interface P2PNetworkDeps {
  readonly key: NodeKey;
  readonly chain: ChainSource;
  readonly logger: Logger;
  /**
   * Whether connections from and dials to `ip` are refused (a ban kept by a scoring module).
   * Asked for every inbound connection and outbound dial; default: nothing is banned.
   */
  readonly isBanned?: (ip: string) => boolean;
  /**
   * More libp2p services by name (gossipsub, for one), started and stopped with the host and
   * reached as `network.libp2p.services[name]`. `identify` and `ping` are always there.
   */
  readonly services?: ServiceFactoryMap;
}

export interface RequestOptions {
  /** Default the network's `requestTimeoutMs`. */
  readonly timeoutMs?: number;
  /**
   * Abandons the request when aborted (the caller stopped, or the peer left): it fails with
   * `ABORTED`, which is not the peer's fault.
   */
  readonly signal?: AbortSignal;
}

type Services = { identify: Identify; ping: Ping };

/** Per connection: the status handshake and, for inbound ones, its deadline. */
interface ConnectionState {
  readonly ready: Promise<PeerInfo>;
  settle(result: { peer: PeerInfo } | { error: P2PError }): void;
  settled: boolean;
  timer: ReturnType<typeof setTimeout> | undefined;
}

/** An inbound connection the gater let in, on its way to becoming a peer. */
interface PendingInbound {
  readonly address: string;
  stage: ConnectionFailure["stage"];
}

const STATUS_STREAMS = { maxInboundStreams: 2, maxOutboundStreams: 2 };
const REQUEST_STREAMS = { maxInboundStreams: 16, maxOutboundStreams: 16 };
const MAX_ERROR_MESSAGE_BYTES = 256;

/**
 * The node's libp2p host: TCP, noise, yamux, identify and ping; the status handshake on every
 * connection; the request protocols served from a `ChainSource`, with a rate limit per peer.
 */
export class P2PNetwork {
  readonly #opts: P2POptions;
  readonly #deps: P2PNetworkDeps;
  readonly #log: Logger;
  readonly #libp2p: Libp2p<Services>;
  readonly #limiter: RateLimiter;
  /** See `receivedBytes`. */
  readonly #received = new Map<string, number>();
  readonly #peers = new Map<string, PeerInfo>();
  readonly #connections = new Map<string, ConnectionState>();
  readonly #connected = new Set<(peer: PeerInfo) => void>();
  readonly #disconnected = new Set<(peer: PeerInfo) => void>();
  readonly #faults = new Set<(fault: PeerFault) => void>();
  readonly #failures = new Set<(failure: ConnectionFailure) => void>();
  /** Inbound connections not upgraded yet, by their raw connection. */
  readonly #pending = new Map<MultiaddrConnection, PendingInbound>();
  #running = false;
  #redial: ReturnType<typeof setInterval> | undefined;

  private constructor(opts: P2POptions, deps: P2PNetworkDeps, libp2p: Libp2p<Services>) {
    this.#opts = opts;
    this.#deps = deps;
    this.#log = deps.logger.child({ module: "p2p" });
    this.#libp2p = libp2p;
    this.#limiter = new RateLimiter(opts.rateLimit);
  }

  /** Builds the libp2p host (not started: see `start`). */
  static async create(
    options: Partial<P2POptions> & Pick<P2POptions, "networkId">,
    deps: P2PNetworkDeps,
  ): Promise<P2PNetwork> {
    const opts: P2POptions = { ...defaultP2POptions, ...options };
    checkOptions(opts);
    let network: P2PNetwork | undefined;
    const banned = (addr: Multiaddr): boolean => {
      const ip = ipOf(addr);
      return ip !== undefined && deps.isBanned?.(ip) === true;
    };
    const outboundFull = () => (network?.connectionCount("outbound") ?? 0) >= opts.maxOutboundPeers;
    const libp2p = await createLibp2p<Services>({
      start: false,
      privateKey: deps.key.privateKey,
      addresses: { listen: [listenAddress(opts.host, opts.port)] },
      transports: [tcp(dialOptions(opts.host))],
      connectionEncrypters: [noise()],
      streamMuxers: [yamux()],
      peerDiscovery: opts.mdns ? [mdns()] : [],
      connectionManager: {
        maxConnections: opts.maxInboundPeers + opts.maxOutboundPeers,
        inboundUpgradeTimeout: opts.statusTimeoutMs,
      },
      connectionGater: {
        // Refused before a socket opens: a dial the far side would see closed unanswered
        // counts against this node's address there.
        denyDialMultiaddr: (addr) => banned(addr) || outboundFull(),
        // Refused at accept, before any byte is read or written.
        denyInboundConnection: (conn) => {
          if (
            banned(conn.remoteAddr) ||
            (network?.connectionCount("inbound") ?? 0) >= opts.maxInboundPeers
          )
            return true;
          return network === undefined ? false : !network.#watchInbound(conn);
        },
        denyInboundEncryptedConnection: (_peer, conn) => {
          const pending = network === undefined ? undefined : network.#pending.get(conn);
          if (pending !== undefined) pending.stage = "multiplexing";
          return false;
        },
        denyInboundUpgradedConnection: (_peer, conn) => {
          if (network !== undefined) network.#pending.delete(conn);
          return false;
        },
        denyOutboundConnection: (_peer, conn) => banned(conn.remoteAddr) || outboundFull(),
      },
      services: { ...deps.services, identify: identify(), ping: ping() },
    });
    network = new P2PNetwork(opts, deps, libp2p);
    return network;
  }

  /** The peer id of this node. */
  get peerId(): string {
    return this.#libp2p.peerId.toString();
  }

  /**
   * The libp2p host itself, for protocols built beside these (gossip): they register their
   * handlers and services through it. Connections and the handshake stay this class's.
   */
  get libp2p(): Libp2p<Services> {
    return this.#libp2p;
  }

  /** Starts listening, registers the protocols, dials the bootnodes; logs the addresses. */
  async start(): Promise<void> {
    if (this.#running) return;
    const node = this.#libp2p;
    node.addEventListener("connection:open", this.#onConnectionOpen);
    node.addEventListener("connection:close", this.#onConnectionClose);
    node.addEventListener("peer:disconnect", this.#onPeerDisconnect);
    node.addEventListener("peer:discovery", this.#onPeerDiscovery);
    await node.handle(
      protocolId(this.#opts.networkId, Protocol.STATUS),
      (stream, connection) => this.#serveStatus(stream, connection),
      STATUS_STREAMS,
    );
    for (const protocol of REQUEST_PROTOCOLS) {
      await node.handle(
        protocolId(this.#opts.networkId, protocol),
        (stream, connection) => this.#serveRequest(protocol, stream, connection),
        REQUEST_STREAMS,
      );
    }
    await node.start();
    this.#running = true;
    this.#log.info("P2P listening", {
      addresses: this.listenAddresses(),
      peerId: this.peerId,
      networkId: this.#opts.networkId,
    });
    this.#dialBootnodes();
    if (this.#opts.bootnodes.length > 0) {
      this.#redial = setInterval(() => this.#dialBootnodes(), this.#opts.bootnodeRedialMs);
      this.#redial.unref();
    }
  }

  /** Closes every connection and stops listening. */
  async stop(): Promise<void> {
    if (!this.#running) return;
    this.#running = false;
    if (this.#redial !== undefined) clearInterval(this.#redial);
    this.#redial = undefined;
    const node = this.#libp2p;
    await node.stop();
    node.removeEventListener("connection:open", this.#onConnectionOpen);
    node.removeEventListener("connection:close", this.#onConnectionClose);
    node.removeEventListener("peer:disconnect", this.#onPeerDisconnect);
    node.removeEventListener("peer:discovery", this.#onPeerDiscovery);
    for (const state of this.#connections.values()) {
      if (state.timer !== undefined) clearTimeout(state.timer);
      state.settle({ error: notRunning() });
    }
    this.#connections.clear();
    this.#pending.clear();
    for (const peer of [...this.#peers.values()]) this.#dropPeer(peer.id);
  }

  /** The addresses this node listens on, each ending in `/p2p/<peer id>`. */
  listenAddresses(): string[] {
    const id = this.peerId;
    return this.#libp2p.getMultiaddrs().map((addr) => {
      const text = addr.toString();
      return text.includes("/p2p/") ? text : `${text}/p2p/${id}`;
    });
  }

  /** The peers whose handshake is done. */
  peers(): PeerInfo[] {
    return [...this.#peers.values()];
  }

  peer(id: string): PeerInfo | undefined {
    return this.#peers.get(id);
  }

  /** Calls `listener` for each peer whose handshake completes; returns the unsubscribe. */
  onPeerConnected(listener: (peer: PeerInfo) => void): () => void {
    this.#connected.add(listener);
    return () => this.#connected.delete(listener);
  }

  /** Calls `listener` when the last connection to a handshaken peer closes. */
  onPeerDisconnected(listener: (peer: PeerInfo) => void): () => void {
    this.#disconnected.add(listener);
    return () => this.#disconnected.delete(listener);
  }

  /** Calls `listener` for every inbound `ConnectionFailure`; returns the unsubscribe. */
  onConnectionFailure(listener: (failure: ConnectionFailure) => void): () => void {
    this.#failures.add(listener);
    return () => this.#failures.delete(listener);
  }

  /**
   * Closes the inbound connections from `ip` that are not peers yet (after a ban, so they do not
   * hold their slots until the upgrade's time runs out); the number closed.
   */
  dropPending(ip: string): number {
    let closed = 0;
    for (const [conn, pending] of [...this.#pending]) {
      if (pending.address !== ip) continue;
      this.#pending.delete(conn);
      conn.abort(new Error("address banned"));
      closed++;
    }
    for (const connection of this.#libp2p.getConnections()) {
      const state = this.#connections.get(connection.id);
      if (connection.direction !== "inbound" || state === undefined || state.settled) continue;
      if (ipOf(connection.remoteAddr) !== ip) continue;
      state.settle({ error: new P2PError(P2PErrorCode.STREAM_CLOSED, "address banned") });
      connection.abort(new Error("address banned"));
      closed++;
    }
    return closed;
  }

  /** Calls `listener` for every `PeerFault`. */
  onPeerFault(listener: (fault: PeerFault) => void): () => void {
    this.#faults.add(listener);
    return () => this.#faults.delete(listener);
  }

  /**
   * Dials `address` (a multiaddr, with `/p2p/<id>` to check who answers) and waits for the
   * handshake: the peer, or a `P2PError` (`DIAL_FAILED`, `STATUS_MISMATCH`, `TIMEOUT`, …).
   */
  async dial(address: string): Promise<PeerInfo> {
    this.#assertRunning();
    let connection: Connection;
    try {
      connection = await this.#libp2p.dial(multiaddr(address), {
        signal: AbortSignal.timeout(this.#opts.requestTimeoutMs),
      });
    } catch (err) {
      throw new P2PError(
        P2PErrorCode.DIAL_FAILED,
        `cannot dial ${address}: ${(err as Error).message}`,
        { address },
        { cause: err },
      );
    }
    return this.#track(connection).ready;
  }

  /** Closes every connection to `peer`, logging `reason`. */
  async disconnect(peer: string, reason: string): Promise<void> {
    this.#log.info("Disconnecting peer", { peer, reason });
    await this.#libp2p.hangUp(peerIdFromString(peer)).catch(() => {});
  }

  /**
   * Asks `peer` (connected, handshake done) for what `protocol` serves. The answer is checked
   * (count, order, links between headers, hashes of headers by hash); a `P2PError` otherwise:
   * `TIMEOUT`, `RATE_LIMITED`, `REMOTE_ERROR`, `INVALID_RESPONSE`, `FRAME_TOO_LARGE`, … Errors
   * of the peer's making are also reported to `onPeerFault`.
   */
  async request<P extends RequestProtocol>(
    peer: string,
    protocol: P,
    req: RequestTypes[P]["request"],
    opts: RequestOptions = {},
  ): Promise<RequestTypes[P]["response"]> {
    this.#assertRunning();
    const spec = requestSpec(protocol);
    const asked = spec.itemsAsked(req);
    if (!Number.isInteger(asked) || asked < 1 || asked > spec.maxItems) {
      throw new P2PError(
        P2PErrorCode.INVALID_REQUEST,
        `a ${protocol} request asks for 1 to ${spec.maxItems} items, not ${asked}`,
        { protocol, asked },
      );
    }
    const known = this.#peers.get(peer);
    if (known === undefined)
      throw new P2PError(P2PErrorCode.UNKNOWN_PEER, `no connected peer ${peer}`, { peer });
    if (opts.signal?.aborted) throw aborted(protocol, peer);
    const timeout = AbortSignal.timeout(opts.timeoutMs ?? this.#opts.requestTimeoutMs);
    const signal = opts.signal === undefined ? timeout : AbortSignal.any([timeout, opts.signal]);
    const payloads = await this.#exchange(
      peer,
      protocol,
      () => this.#libp2p.dialProtocol(peerIdFromString(peer), this.#id(protocol), { signal }),
      spec.encodeRequest(req),
      asked,
      signal,
      opts.signal,
    );
    let bytes = 0;
    for (const payload of payloads) bytes += payload.length;
    this.#received.set(protocol, (this.#received.get(protocol) ?? 0) + bytes);
    try {
      const items = payloads.map((bytes) => spec.decodeItem(bytes));
      const wrong = spec.checkResponse(req, items);
      if (wrong !== undefined) throw new P2PError(P2PErrorCode.INVALID_RESPONSE, wrong);
      return items as RequestTypes[P]["response"];
    } catch (err) {
      const error =
        err instanceof P2PError
          ? err
          : new P2PError(
              P2PErrorCode.INVALID_RESPONSE,
              `an undecodable ${protocol} answer: ${(err as Error).message}`,
              {},
              { cause: err },
            );
      this.#fault(peer, protocol, "outbound", error);
      throw error;
    }
  }

  /**
   * Bytes of the answers this node received to its requests, by protocol, since it started
   * (the items' payloads, without framing): what syncing downloaded.
   */
  receivedBytes(): Readonly<Record<string, number>> {
    return Object.fromEntries(this.#received);
  }

  /** Exchanges statuses with `peer` again; its new status, or hangs up on a mismatch. */
  async refreshStatus(peer: string): Promise<Status> {
    this.#assertRunning();
    const known = this.#peers.get(peer);
    if (known === undefined)
      throw new P2PError(P2PErrorCode.UNKNOWN_PEER, `no connected peer ${peer}`, { peer });
    const signal = AbortSignal.timeout(this.#opts.statusTimeoutMs);
    const status = await this.#requestStatus(
      peer,
      () =>
        this.#libp2p.dialProtocol(peerIdFromString(peer), this.#id(Protocol.STATUS), { signal }),
      signal,
    );
    const reason = statusMismatch(this.localStatus(), status);
    if (reason !== undefined) {
      await this.disconnect(peer, reason);
      throw new P2PError(P2PErrorCode.STATUS_MISMATCH, reason, { peer });
    }
    const updated = { ...known, status };
    if (this.#peers.has(peer)) this.#peers.set(peer, updated);
    return status;
  }

  /** This node's status, from the chain's head. */
  localStatus(): Status {
    const head = this.#deps.chain.head();
    return {
      networkId: this.#opts.networkId,
      genesisHash: this.#deps.chain.genesisHash,
      bestHash: head.hash,
      bestNumber: head.number,
      totalDifficulty: head.totalDifficulty,
    };
  }

  /** Open connections in `direction` (the limits count these). */
  connectionCount(direction: "inbound" | "outbound"): number {
    return this.#libp2p.getConnections().filter((c) => c.direction === direction).length;
  }

  // --- connections and the handshake ------------------------------------------------------

  readonly #onConnectionOpen = (evt: CustomEvent<Connection>): void => {
    this.#track(evt.detail);
  };

  readonly #onConnectionClose = (evt: CustomEvent<Connection>): void => {
    const connection = evt.detail;
    const state = this.#connections.get(connection.id);
    if (state === undefined) return;
    this.#connections.delete(connection.id);
    if (state.timer !== undefined) clearTimeout(state.timer);
    if (!state.settled && connection.direction === "inbound")
      this.#connectionFailed(
        connection.remoteAddr,
        "status",
        "the connection closed before the status handshake",
      );
    state.settle({
      error: new P2PError(
        P2PErrorCode.STREAM_CLOSED,
        "the connection closed before the status handshake",
      ),
    });
  };

  readonly #onPeerDisconnect = (evt: CustomEvent<PeerId>): void => {
    this.#dropPeer(evt.detail.toString());
  };

  readonly #onPeerDiscovery = (evt: CustomEvent<{ id: PeerId }>): void => {
    if (!this.#opts.mdns || !this.#running) return;
    const id = evt.detail.id;
    if (this.#libp2p.getConnections(id).length > 0) return;
    if (this.connectionCount("outbound") >= this.#opts.maxOutboundPeers) return;
    this.#libp2p.dial(id).catch((err: unknown) => {
      this.#log.debug("Dial of a discovered peer failed", {
        peer: id.toString(),
        error: (err as Error).message,
      });
    });
  };

  /**
   * Follows an inbound connection the gater let in until it is upgraded: a close before that
   * is a `ConnectionFailure` at the stage it reached. `false` (a failure at `accept`) when the
   * address already has `maxPendingPerAddress` connections waiting for their handshakes.
   */
  #watchInbound(conn: MultiaddrConnection): boolean {
    const address = ipOf(conn.remoteAddr);
    if (address === undefined) return true;
    let waiting = 0;
    for (const pending of this.#pending.values()) if (pending.address === address) waiting++;
    if (waiting >= this.#opts.maxPendingPerAddress) {
      this.#connectionFailed(
        conn.remoteAddr,
        "accept",
        `${waiting} connections from the address already waiting for their handshakes`,
      );
      return false;
    }
    this.#pending.set(conn, { address, stage: "encryption" });
    conn.addEventListener(
      "close",
      (evt) => {
        const pending = this.#pending.get(conn);
        if (pending === undefined) return;
        this.#pending.delete(conn);
        const error = (evt as Event & { error?: Error }).error;
        const reason =
          error === undefined
            ? "closed by the remote"
            : error.name === "AbortError" ||
                error.name === "TimeoutError" ||
                /timeout|timed out/i.test(error.message)
              ? `no ${pending.stage} within ${this.#opts.statusTimeoutMs} ms`
              : `${error.name}: ${error.message}`;
        this.#connectionFailed(conn.remoteAddr, pending.stage, reason);
      },
      { once: true },
    );
    return true;
  }

  #connectionFailed(remote: Multiaddr, stage: ConnectionFailure["stage"], reason: string): void {
    if (!this.#running) return;
    const address = ipOf(remote);
    if (address === undefined) return;
    const failure: ConnectionFailure = {
      address,
      remoteAddress: remote.toString(),
      stage,
      reason,
    };
    this.#log.debug("Inbound connection failed", { ...failure });
    for (const listener of this.#failures) {
      try {
        listener(failure);
      } catch (err) {
        this.#log.error("A connection failure listener threw", { error: (err as Error).message });
      }
    }
  }

  /** The handshake of `connection`, started once: a status exchange if we dialled it. */
  #track(connection: Connection): ConnectionState {
    const existing = this.#connections.get(connection.id);
    if (existing !== undefined) return existing;
    let resolve!: (peer: PeerInfo) => void;
    let reject!: (error: P2PError) => void;
    const promise = new Promise<PeerInfo>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    promise.catch(() => {});
    const state: ConnectionState = {
      ready: promise,
      settled: false,
      timer: undefined,
      settle: (result) => {
        if (state.settled) return;
        state.settled = true;
        if (state.timer !== undefined) clearTimeout(state.timer);
        if ("peer" in result) resolve(result.peer);
        else reject(result.error);
      },
    };
    this.#connections.set(connection.id, state);
    if (connection.direction === "outbound") {
      void this.#sendStatus(connection);
    } else {
      state.timer = setTimeout(() => {
        if (state.settled) return;
        const reason = `no status within ${this.#opts.statusTimeoutMs} ms`;
        this.#connectionFailed(connection.remoteAddr, "status", reason);
        this.#hangUp(connection, reason);
      }, this.#opts.statusTimeoutMs);
      state.timer.unref();
    }
    return state;
  }

  async #sendStatus(connection: Connection): Promise<void> {
    const peer = connection.remotePeer.toString();
    const signal = AbortSignal.timeout(this.#opts.statusTimeoutMs);
    try {
      const status = await this.#requestStatus(
        peer,
        () => connection.newStream(this.#id(Protocol.STATUS), { signal }),
        signal,
      );
      this.#accept(connection, status);
    } catch (err) {
      this.#hangUp(connection, await this.#statusFailure(connection, err));
    }
  }

  /** Why the status exchange failed, in a log's words (another network, when identify says so). */
  async #statusFailure(connection: Connection, err: unknown): Promise<string> {
    const name = ((err as Error)?.cause as Error | undefined)?.name ?? (err as Error)?.name;
    if (name === "UnsupportedProtocolError" || name === "ProtocolNegotiationError") {
      try {
        const { protocols } = await this.#libp2p.services.identify.identify(connection, {
          signal: AbortSignal.timeout(this.#opts.statusTimeoutMs),
        });
        const theirs = protocols
          .map((p) => /^\/nodex\/(\d+)\/status\/1$/.exec(p)?.[1])
          .find((id) => id !== undefined);
        if (theirs !== undefined) return `network id ${theirs}, ours is ${this.#opts.networkId}`;
      } catch {
        // identify failed too: the generic reason below
      }
      return `the peer does not speak ${this.#id(Protocol.STATUS)} (another network?)`;
    }
    return `status exchange failed: ${(err as Error)?.message ?? String(err)}`;
  }

  /** Checks `status` from the peer of `connection`: records the peer, or hangs up. */
  #accept(connection: Connection, status: Status, graceMs = 0): boolean {
    const state = this.#track(connection);
    const reason = statusMismatch(this.localStatus(), status);
    if (reason !== undefined) {
      this.#hangUp(connection, reason, graceMs);
      return false;
    }
    const id = connection.remotePeer.toString();
    const known = this.#peers.get(id);
    const peer: PeerInfo = known
      ? { ...known, status }
      : {
          id,
          status,
          direction: connection.direction,
          remoteAddress: connection.remoteAddr.toString(),
        };
    this.#peers.set(id, peer);
    state.settle({ peer });
    if (known === undefined) {
      this.#log.info("Peer connected", {
        peer: id,
        address: peer.remoteAddress,
        direction: peer.direction,
        bestNumber: status.bestNumber,
      });
      for (const listener of this.#connected) listener(peer);
    }
    return true;
  }

  /** Logs `reason`, fails the handshake, closes `connection` (after `graceMs`). */
  #hangUp(connection: Connection, reason: string, graceMs = 0): void {
    const peer = connection.remotePeer.toString();
    this.#log.info("Disconnecting peer", {
      peer,
      address: connection.remoteAddr.toString(),
      reason,
    });
    this.#connections
      .get(connection.id)
      ?.settle({ error: new P2PError(P2PErrorCode.STATUS_MISMATCH, reason, { peer }) });
    const close = () => {
      connection.close().catch((err: unknown) => connection.abort(err as Error));
    };
    if (graceMs === 0) close();
    else setTimeout(close, graceMs).unref();
  }

  #dropPeer(id: string): void {
    const peer = this.#peers.get(id);
    this.#limiter.prune();
    if (peer === undefined) return;
    this.#peers.delete(id);
    this.#log.info("Peer disconnected", { peer: id });
    for (const listener of this.#disconnected) listener(peer);
  }

  #dialBootnodes(): void {
    if (!this.#running) return;
    for (const address of this.#opts.bootnodes) {
      const id = multiaddr(address)
        .getComponents()
        .find((c) => c.name === "p2p")?.value;
      if (id !== undefined && this.#peers.has(id)) continue;
      this.dial(address).catch((err: unknown) => {
        this.#log.warn("Bootnode dial failed", { address, error: (err as Error).message });
      });
    }
  }

  // --- the wire -------------------------------------------------------------------------------

  #id(protocol: Protocol): string {
    return protocolId(this.#opts.networkId, protocol);
  }

  async #requestStatus(
    peer: string,
    open: () => Promise<Stream>,
    signal: AbortSignal,
  ): Promise<Status> {
    const [payload] = await this.#exchange(
      peer,
      Protocol.STATUS,
      open,
      encodeStatus(this.localStatus()),
      1,
      signal,
    );
    if (payload === undefined) {
      const error = new P2PError(P2PErrorCode.STREAM_CLOSED, "the stream closed without a status");
      this.#fault(peer, Protocol.STATUS, "outbound", error);
      throw error;
    }
    try {
      return decodeStatus(payload);
    } catch (err) {
      const error = new P2PError(
        P2PErrorCode.INVALID_RESPONSE,
        (err as Error).message,
        {},
        { cause: err },
      );
      this.#fault(peer, Protocol.STATUS, "outbound", error);
      throw error;
    }
  }

  /**
   * Opens a stream, writes the request frame, closes our side, reads at most `maxChunks`
   * response chunks until the peer closes: their payloads. An error chunk ends the answer
   * with its error. Faults of the peer's making are reported.
   */
  async #exchange(
    peer: string,
    protocol: Protocol,
    open: () => Promise<Stream>,
    request: Uint8Array,
    maxChunks: number,
    signal: AbortSignal,
    callerSignal?: AbortSignal,
  ): Promise<Uint8Array[]> {
    let stream: Stream;
    try {
      stream = await open();
    } catch (err) {
      if (callerSignal?.aborted) throw aborted(protocol, peer);
      if (signal.aborted)
        throw new P2PError(P2PErrorCode.TIMEOUT, `${protocol}: no stream in time`, { peer });
      throw new P2PError(
        P2PErrorCode.STREAM_CLOSED,
        `${protocol}: cannot open a stream: ${(err as Error)?.message ?? String(err)}`,
        { peer },
        { cause: err },
      );
    }
    const reader = new FrameReader(stream);
    try {
      await writeFrame(stream, request, { signal });
      await stream.close({ signal });
      const out: Uint8Array[] = [];
      for (;;) {
        const chunk = await reader.read(FRAME_CAPS[protocol].chunk + 1, { signal });
        if (chunk === undefined) return out;
        const code = chunk[0];
        if (code !== ResultCode.OK) throw remoteError(protocol, code, chunk.subarray(1));
        if (out.length >= maxChunks) {
          throw new P2PError(
            P2PErrorCode.INVALID_RESPONSE,
            `${protocol}: more than the ${maxChunks} items asked for`,
          );
        }
        out.push(chunk.subarray(1));
      }
    } catch (err) {
      const error =
        err instanceof P2PError
          ? err
          : new P2PError(
              P2PErrorCode.STREAM_CLOSED,
              `${protocol}: ${(err as Error).message}`,
              {},
              { cause: err },
            );
      stream.abort(error);
      // Abandoned by this node: nothing the peer did.
      if (callerSignal?.aborted) throw aborted(protocol, peer);
      // A refusal is the peer's answer, not its fault: only bad or late answers are reported.
      if (error.code !== P2PErrorCode.REMOTE_ERROR && error.code !== P2PErrorCode.RATE_LIMITED)
        this.#fault(peer, protocol, "outbound", error);
      throw error;
    } finally {
      reader.release();
    }
  }

  async #serveStatus(stream: Stream, connection: Connection): Promise<void> {
    const peer = connection.remotePeer.toString();
    const signal = AbortSignal.timeout(this.#opts.statusTimeoutMs);
    const reader = new FrameReader(stream);
    let remote: Status;
    try {
      const bytes = await reader.read(FRAME_CAPS.status.request, { signal });
      if (bytes === undefined)
        throw new P2PError(P2PErrorCode.STREAM_CLOSED, "a status stream closed without a status");
      remote = decodeStatus(bytes);
    } catch (err) {
      const error = asRequestError(err);
      this.#fault(peer, Protocol.STATUS, "inbound", error);
      await this.#refuse(stream, ResultCode.INVALID_REQUEST, error.message, signal);
      // A peer whose handshake is done and whose status refresh broke off (it gave up waiting,
      // busy importing) stays; a bad status, or none on a new connection, ends the connection.
      const brokeOff =
        error.code === P2PErrorCode.STREAM_CLOSED || error.code === P2PErrorCode.TIMEOUT;
      if (!(brokeOff && this.#peers.has(peer)))
        this.#hangUp(connection, `invalid status: ${error.message}`);
      return;
    } finally {
      reader.release();
    }
    if (this.#peers.has(peer) && !this.#limiter.take(peer, 1)) {
      this.#rateLimited(peer, Protocol.STATUS);
      await this.#refuse(stream, ResultCode.RATE_LIMITED, "rate limited", signal);
      return;
    }
    // Recorded before the answer, so the peer may send requests as soon as it has it.
    const accepted = statusMismatch(this.localStatus(), remote) === undefined;
    if (accepted) this.#accept(connection, remote);
    try {
      await writeFrame(stream, chunk(ResultCode.OK, encodeStatus(this.localStatus())), { signal });
      await stream.close({ signal });
    } catch (err) {
      stream.abort(err as Error);
    }
    // On a mismatch the dialler reads our status, logs its reason and hangs up; we close
    // after a grace period in case it does not, so the answer is not cut off.
    if (!accepted) this.#accept(connection, remote, Math.min(1_000, this.#opts.statusTimeoutMs));
  }

  async #serveRequest(
    protocol: RequestProtocol,
    stream: Stream,
    connection: Connection,
  ): Promise<void> {
    const peer = connection.remotePeer.toString();
    const signal = AbortSignal.timeout(this.#opts.requestTimeoutMs);
    const spec = requestSpec(protocol);
    const reader = new FrameReader(stream);
    let req: RequestTypes[typeof protocol]["request"];
    try {
      if (!this.#peers.has(peer))
        throw new P2PError(P2PErrorCode.INVALID_REQUEST, "a request before the status handshake");
      const bytes = await reader.read(FRAME_CAPS[protocol].request, { signal });
      if (bytes === undefined)
        throw new P2PError(P2PErrorCode.STREAM_CLOSED, "a request stream closed without a request");
      req = spec.decodeRequest(bytes);
    } catch (err) {
      const error = asRequestError(err);
      this.#fault(peer, protocol, "inbound", error);
      this.#log.debug("Invalid request", { peer, protocol, error: error.message });
      await this.#refuse(stream, ResultCode.INVALID_REQUEST, error.message, signal);
      return;
    } finally {
      reader.release();
    }
    if (!this.#limiter.take(peer, spec.tokens?.(req) ?? spec.itemsAsked(req))) {
      this.#rateLimited(peer, protocol);
      await this.#refuse(stream, ResultCode.RATE_LIMITED, "rate limited", signal);
      return;
    }
    let items: Uint8Array[];
    try {
      items = await spec.serve(this.#deps.chain, req);
    } catch (err) {
      this.#log.error("Serving a request failed", {
        peer,
        protocol,
        error: (err as Error).message,
        stack: (err as Error).stack,
      });
      await this.#refuse(stream, ResultCode.SERVER_ERROR, "internal error", signal);
      return;
    }
    try {
      for (const item of items) await writeFrame(stream, chunk(ResultCode.OK, item), { signal });
      await stream.close({ signal });
    } catch (err) {
      this.#log.debug("Answer not delivered", { peer, protocol, error: (err as Error).message });
      stream.abort(err as Error);
    }
  }

  #rateLimited(peer: string, protocol: Protocol): void {
    const error = new P2PError(P2PErrorCode.RATE_LIMITED, `${protocol} requests over the limit`, {
      peer,
    });
    this.#log.debug("Request rate limited", { peer, protocol });
    this.#fault(peer, protocol, "inbound", error);
  }

  /** Answers with one error chunk and closes; a stream already gone is let go. */
  async #refuse(
    stream: Stream,
    code: ResultCode,
    message: string,
    signal: AbortSignal,
  ): Promise<void> {
    try {
      const text = new TextEncoder().encode(message).subarray(0, MAX_ERROR_MESSAGE_BYTES);
      await writeFrame(stream, chunk(code, text), { signal });
      await stream.close({ signal });
    } catch (err) {
      stream.abort(err as Error);
    }
  }

  #fault(peer: string, protocol: Protocol, direction: "inbound" | "outbound", error: P2PError) {
    const fault: PeerFault = { peer, protocol, direction, error };
    for (const listener of this.#faults) {
      try {
        listener(fault);
      } catch (err) {
        this.#log.error("A peer fault listener threw", { error: (err as Error).message });
      }
    }
  }

  #assertRunning(): void {
    if (!this.#running) throw notRunning();
  }
}

function chunk(code: ResultCode, payload: Uint8Array): Uint8Array {
  const out = new Uint8Array(1 + payload.length);
  out[0] = code;
  out.set(payload, 1);
  return out;
}

function remoteError(protocol: Protocol, code: number | undefined, message: Uint8Array): P2PError {
  const text = new TextDecoder().decode(message.subarray(0, MAX_ERROR_MESSAGE_BYTES));
  if (code === ResultCode.RATE_LIMITED)
    return new P2PError(P2PErrorCode.RATE_LIMITED, `${protocol}: the peer rate-limited us`);
  if (code === ResultCode.INVALID_REQUEST || code === ResultCode.SERVER_ERROR) {
    const what = code === ResultCode.INVALID_REQUEST ? "invalid request" : "server error";
    return new P2PError(P2PErrorCode.REMOTE_ERROR, `${protocol}: ${what}: ${text}`, { code });
  }
  return new P2PError(
    P2PErrorCode.INVALID_RESPONSE,
    `${protocol}: an answer with the unknown result code ${code}`,
  );
}

/** A failure to read a peer's request, as the `P2PError` its fault reports. */
function asRequestError(err: unknown): P2PError {
  if (err instanceof P2PError) return err;
  if (err instanceof DecodeError)
    return new P2PError(P2PErrorCode.INVALID_REQUEST, err.message, {}, { cause: err });
  return new P2PError(
    P2PErrorCode.STREAM_CLOSED,
    (err as Error)?.message ?? String(err),
    {},
    { cause: err },
  );
}

function aborted(protocol: Protocol, peer: string): P2PError {
  return new P2PError(P2PErrorCode.ABORTED, `${protocol}: the request was abandoned`, { peer });
}

function notRunning(): P2PError {
  return new P2PError(P2PErrorCode.NOT_RUNNING, "the network is not running");
}

/**
 * Outbound connections leave from the bound address when it is a specific IPv4 one, so peers
 * see (and score, and ban) the address this node listens on, not whatever the OS picks.
 */
function dialOptions(host: string): Parameters<typeof tcp>[0] {
  if (host.includes(":") || host === "0.0.0.0") return {};
  // net.connect's localAddress: @libp2p/tcp passes its dial options on to net.connect.
  const dialOpts = { localAddress: host } as NonNullable<
    NonNullable<Parameters<typeof tcp>[0]>["dialOpts"]
  >;
  return { dialOpts };
}

function listenAddress(host: string, port: number): string {
  return host.includes(":") ? `/ip6/${host}/tcp/${port}` : `/ip4/${host}/tcp/${port}`;
}

function ipOf(addr: Multiaddr): string | undefined {
  return addr.getComponents().find((c) => c.name === "ip4" || c.name === "ip6")?.value;
}

function checkOptions(opts: P2POptions): void {
  const positive = (name: string, value: number, min = 1) => {
    if (!Number.isSafeInteger(value) || value < min)
      throw new RangeError(
        `p2p option ${name} must be an integer of at least ${min}, got ${value}`,
      );
  };
  positive("networkId", opts.networkId, 0);
  positive("maxInboundPeers", opts.maxInboundPeers, 0);
  positive("maxOutboundPeers", opts.maxOutboundPeers, 0);
  positive("maxPendingPerAddress", opts.maxPendingPerAddress);
  positive("statusTimeoutMs", opts.statusTimeoutMs);
  positive("requestTimeoutMs", opts.requestTimeoutMs);
  positive("bootnodeRedialMs", opts.bootnodeRedialMs);
  if (!Number.isInteger(opts.port) || opts.port < 0 || opts.port > 65_535)
    throw new RangeError(`p2p option port must be from 0 to 65535, got ${opts.port}`);
  for (const address of opts.bootnodes) {
    const addr = multiaddr(address);
    if (!addr.getComponents().some((c) => c.name === "p2p"))
      throw new RangeError(`bootnode ${address} has no /p2p/<peer id>`);
  }
}
