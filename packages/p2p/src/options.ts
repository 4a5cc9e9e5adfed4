import { FAILED_CONNECTION_LIMIT } from "./scoring/peerScoring.js";

/** The settings of a `P2PNetwork`: plain values, each with a documented default. */
export interface P2POptions {
  /**
   * The network's id: in every protocol id (`/nodex/<networkId>/…`) and in the status
   * handshake. Nodes with different ids never talk. The chain id of the network by convention.
   */
  readonly networkId: number;
  /** The address to listen on, and to announce when it is not a wildcard. Default `0.0.0.0`. */
  readonly host: string;
  /** The TCP port to listen on; 0 picks a free one. Default 5050. */
  readonly port: number;
  /** Multiaddrs with `/p2p/<peer id>` dialled at start, and again while they are not connected. */
  readonly bootnodes: readonly string[];
  /** How often bootnodes that are not connected are dialled again, in ms. Default 30,000. */
  readonly bootnodeRedialMs: number;
  /** Find peers on the local network with mDNS and dial them. Default off. */
  readonly mdns: boolean;
  /** The most connections other nodes opened to this one. Default 25. */
  readonly maxInboundPeers: number;
  /** The most connections this node opened to others. Default 10. */
  readonly maxOutboundPeers: number;
  /**
   * The most inbound connections from one address that may wait for their handshakes at once;
   * one more is refused at accept and counts as a failed connection. libp2p keeps 10 waiting
   * in all: this keeps one address from taking them. Default 2.
   */
  readonly maxPendingPerAddress: number;
  /**
   * How long a new connection may take to complete the status handshake, in ms; an inbound one
   * has this long for the libp2p upgrade (multistream-select, noise, yamux) and this long again
   * for its status. Default 5,000.
   */
  readonly statusTimeoutMs: number;
  /** How long a request may take, from opening its stream to its last response, in ms. Default 10,000. */
  readonly requestTimeoutMs: number;
  /**
   * The requests each peer may make: a token bucket in items (headers, bodies or receipt
   * lists asked for; a status is 1). `capacity` is the burst, `refillPerSecond` the rate.
   * A request over the limit is answered with `RATE_LIMITED`. Default 1,024 and 256.
   */
  readonly rateLimit: { readonly capacity: number; readonly refillPerSecond: number };
  /**
   * When an address is banned for inbound connections that never became a peer (garbage,
   * failed encryption or multiplexer negotiation, silence, a close before the status handshake):
   * `max` such failures within `windowMs`. The ban lasts 12 minutes, 10 % longer each repeat, at
   * most 6,000 minutes. Default 10 within 60,000 ms.
   */
  readonly failedConnections: { readonly max: number; readonly windowMs: number };
}

export const defaultP2POptions: Omit<P2POptions, "networkId"> = Object.freeze({
  host: "0.0.0.0",
  port: 5050,
  bootnodes: Object.freeze([]) as readonly string[],
  bootnodeRedialMs: 30_000,
  mdns: false,
  maxInboundPeers: 25,
  maxOutboundPeers: 10,
  maxPendingPerAddress: 2,
  statusTimeoutMs: 5_000,
  requestTimeoutMs: 10_000,
  rateLimit: Object.freeze({ capacity: 1_024, refillPerSecond: 256 }),
  failedConnections: Object.freeze({ ...FAILED_CONNECTION_LIMIT }),
});
