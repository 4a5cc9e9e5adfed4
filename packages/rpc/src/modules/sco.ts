import { RPCError, RPCErrorCode } from "../errors.js";
import { p } from "../params.js";
import { defineModule, method } from "../registry.js";
import { type ResultEncoder, r } from "../results.js";
import type { PeersView, ScoringRecord, ScoringView } from "../services.js";

const records: ResultEncoder<readonly ScoringRecord[]> = (value) => value;
const record: ResultEncoder<ScoringRecord> = (value) => value;
const nothing: ResultEncoder<null> = () => null;

function invalidAddress(address: string): RPCError {
  return new RPCError(RPCErrorCode.INVALID_PARAMS, `invalid banned address ${address}`);
}

/** Why the peer methods cannot run on a node off the peer-to-peer network. */
export const P2P_OFF = "the peer-to-peer network is off on this node (--no-p2p)";

/** The scoring of a node without peers: never called, its module is unavailable. */
const noScoring = (): never => {
  throw new Error("no peer-to-peer network");
};

/**
 * The reference node's `sco_` methods: peer scores, the reputation summary and bans by IP
 * address or CIDR block. Operator methods: off in hosted mode. Without `scoring` (a node with
 * the peer-to-peer network off) each answers -32601 saying so.
 */
export function scoModule(scoring?: ScoringView) {
  const view = (): ScoringView => scoring ?? noScoring();
  return defineModule(
    "sco",
    {
      peerList: method({ params: [], result: records, handler: () => view().peerList() }),
      reputationSummary: method({
        params: [],
        result: record,
        handler: () => view().reputationSummary(),
      }),
      bannedAddresses: method({
        params: [],
        result: r.array(r.string),
        handler: () => view().bannedAddresses(),
      }),
      banAddress: method({
        params: [p.string],
        result: nothing,
        handler: (_s, [address]) => {
          if (!view().banAddress(address)) throw invalidAddress(address);
          return null;
        },
      }),
      unbanAddress: method({
        params: [p.string],
        result: nothing,
        handler: (_s, [address]) => {
          if (!view().unbanAddress(address)) throw invalidAddress(address);
          return null;
        },
      }),
    },
    scoring === undefined ? { unavailable: P2P_OFF } : {},
  );
}

/**
 * `debug_wireProtocolQueueSize`: the peer messages waiting to be handled; unavailable (-32601,
 * saying why) on a node off the peer-to-peer network.
 */
export function wireQueueModule(peers: PeersView) {
  return defineModule(
    "debug",
    {
      wireProtocolQueueSize: method({
        params: [],
        result: r.quantity,
        handler: () => peers.wireQueueSize?.() ?? 0,
      }),
    },
    peers.wireQueueSize === undefined ? { unavailable: P2P_OFF } : {},
  );
}
