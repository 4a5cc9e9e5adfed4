import { bytesToHex } from "@nodex/types";
import { defineModule, method } from "../registry.js";
import { r } from "../results.js";
import type { SyncStatus } from "../services.js";
import { syncStatusJson } from "../syncStatus.js";
import { PROTOCOL_VERSION } from "./nodex.js";

function encodeSyncStatus(status: SyncStatus): unknown {
  return status === false ? false : syncStatusJson(status);
}

export const eth = defineModule("eth", {
  chainId: method({
    params: [],
    result: r.quantity,
    handler: ({ network }) => network.chainId,
  }),
  protocolVersion: method({
    params: [],
    result: r.quantity,
    handler: () => PROTOCOL_VERSION,
  }),
  syncing: method({
    params: [],
    result: encodeSyncStatus,
    handler: ({ peers }) => peers.syncing(),
  }),
  coinbase: method({
    params: [],
    result: r.data,
    handler: ({ mining }) => mining.coinbase(),
  }),
  mining: method({
    params: [],
    result: r.boolean,
    handler: ({ mining }) => mining.mining(),
  }),
  hashrate: method({
    params: [],
    result: r.quantity,
    handler: ({ mining }) => mining.hashrate(),
  }),
  gasPrice: method({
    params: [],
    result: r.quantity,
    handler: ({ chain }) => chain.gasPrice(),
  }),
  // No base fee: a transaction's whole gas price is its priority fee, so the tip that gets one
  // into the next block is the gas price (derived from the minimum gas price).
  maxPriorityFeePerGas: method({
    params: [],
    result: r.quantity,
    handler: ({ chain }) => chain.gasPrice(),
  }),
  accounts: method({
    params: [],
    result: (addresses: readonly Uint8Array[]) => addresses.map(bytesToHex),
    // The hosted endpoint holds no keys (spec: eth_accounts is always empty there).
    handler: ({ accounts }, _args, { hosted }) => (hosted ? [] : accounts.list()),
  }),
  blockNumber: method({
    params: [],
    result: r.quantity,
    handler: ({ chain }) => chain.blockNumber(),
  }),
});
