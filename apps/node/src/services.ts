import type { RPCServices } from "@nodex/rpc";
import { type Address, deriveDevAccounts, hexToBytes, type NetworkPreset } from "@nodex/types";
import type { NodeConfig } from "./config.js";
import { clientVersion } from "./version.js";

/** eth_gasPrice answers the best block's minimum gas price times this, as the reference node does. */
const GAS_PRICE_MULTIPLIER_PERCENT = 110n;

const ZERO_ADDRESS = new Uint8Array(20) as Address;

function devAddresses(network: NetworkPreset): readonly Address[] {
  return network.devAccounts ? deriveDevAccounts().map((a) => a.address) : [];
}

/**
 * The services the RPC methods read. Until the chain, p2p and mining packages exist the
 * node sits at genesis, has no peers and does not mine.
 */
export function createServices(config: NodeConfig): RPCServices {
  const { network } = config;
  let accounts: readonly Address[] | undefined;
  const listAccounts = () => {
    accounts ??= devAddresses(network);
    return accounts;
  };
  let coinbase: Address | undefined =
    config.coinbase === undefined ? undefined : (hexToBytes(config.coinbase) as Address);
  return {
    network,
    clientVersion: clientVersion(),
    chain: {
      blockNumber: () => 0n,
      gasPrice: () => (network.genesis.minimumGasPrice * GAS_PRICE_MULTIPLIER_PERCENT) / 100n,
    },
    peers: {
      listening: () => false,
      peerCount: () => 0,
      peerList: () => [],
      syncing: () => false,
    },
    mining: {
      coinbase: () => {
        coinbase ??= listAccounts()[0] ?? ZERO_ADDRESS;
        return coinbase;
      },
      mining: () => false,
      hashrate: () => 0n,
    },
    accounts: { list: listAccounts },
  };
}
