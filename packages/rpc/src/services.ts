import type { Address, NetworkPreset } from "@nodex/types";
import type { Ledger } from "./ledger.js";

/** The chain as the RPC methods see it. */
export interface ChainView {
  /** Number of the best block. */
  blockNumber(): bigint;
  /** A gas price that gets a transaction included in the next block, in wei. */
  gasPrice(): bigint;
}

/** Sync progress, or `false` when the node is not syncing. */
export type SyncStatus =
  | false
  | {
      readonly startingBlock: bigint;
      readonly currentBlock: bigint;
      readonly highestBlock: bigint;
    };

/** The peer-to-peer layer as the RPC methods see it. */
export interface PeersView {
  listening(): boolean;
  peerCount(): number;
  /** One `"<short id> | <host>:<port>"` string per connected peer. */
  peerList(): readonly string[];
  syncing(): SyncStatus;
}

/** Mining as the RPC methods see it. */
export interface MiningView {
  coinbase(): Address;
  mining(): boolean;
  /** Hashes per second of this node's miners. */
  hashrate(): bigint;
}

/** Accounts the node holds keys for. */
export interface AccountsView {
  list(): readonly Address[];
}

/**
 * Everything method handlers may use. `apps/node` builds it from the real packages;
 * each handler names the parts it needs.
 */
export interface RPCServices {
  readonly network: NetworkPreset;
  /** `Nodex/v<version>/<os>-<arch>/node<version>`. */
  readonly clientVersion: string;
  readonly chain: ChainView;
  readonly peers: PeersView;
  readonly mining: MiningView;
  readonly accounts: AccountsView;
  /** Blocks, state, transactions and calls; the chain methods are served when it is present. */
  readonly ledger?: Ledger;
}

/** What a handler knows about the request it serves. */
export interface CallContext {
  /** True when the node runs with API keys (hosted mode). */
  readonly hosted: boolean;
}
