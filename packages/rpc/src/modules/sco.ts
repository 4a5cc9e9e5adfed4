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

/**
 * The reference node's `sco_` methods: peer scores, the reputation summary and bans by IP
 * address or CIDR block. Operator methods: off in hosted mode.
 */
export function scoModule(scoring: ScoringView) {
  return defineModule("sco", {
    peerList: method({ params: [], result: records, handler: () => scoring.peerList() }),
    reputationSummary: method({
      params: [],
      result: record,
      handler: () => scoring.reputationSummary(),
    }),
    bannedAddresses: method({
      params: [],
      result: r.array(r.string),
      handler: () => scoring.bannedAddresses(),
    }),
    banAddress: method({
      params: [p.string],
      result: nothing,
      handler: (_s, [address]) => {
        if (!scoring.banAddress(address)) throw invalidAddress(address);
        return null;
      },
    }),
    unbanAddress: method({
      params: [p.string],
      result: nothing,
      handler: (_s, [address]) => {
        if (!scoring.unbanAddress(address)) throw invalidAddress(address);
        return null;
      },
    }),
  });
}

/** `debug_wireProtocolQueueSize`: the peer messages waiting to be handled. */
export function wireQueueModule(peers: PeersView & { wireQueueSize(): number }) {
  return defineModule("debug", {
    wireProtocolQueueSize: method({
      params: [],
      result: r.quantity,
      handler: () => peers.wireQueueSize(),
    }),
  });
}
