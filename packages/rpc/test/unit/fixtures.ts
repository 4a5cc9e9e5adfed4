import { type Address, NETWORKS, nullLogger } from "@nodex/types";
import type { RPCServices } from "../../src/index.js";

/** Services of a node at genesis on regtest, for tests about the RPC layer itself. */
export function fakeServices(overrides: Partial<RPCServices> = {}): RPCServices {
  return {
    network: NETWORKS.regtest,
    clientVersion: "Nodex/vtest",
    chain: { blockNumber: () => 5n, gasPrice: () => 1000n },
    peers: {
      listening: () => true,
      peerCount: () => 2,
      peerList: () => ["a | b:1"],
      syncing: () => false,
    },
    mining: {
      coinbase: () => new Uint8Array(20).fill(0xab) as Address,
      mining: () => true,
      hashrate: () => 16n,
    },
    accounts: { list: () => [new Uint8Array(20).fill(1) as Address] },
    ...overrides,
  };
}

export const logger = nullLogger;
