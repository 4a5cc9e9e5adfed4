import { join } from "node:path";
import { type Chain, MinerServer } from "@nodex/chain";
import type { Executor } from "@nodex/evm";
import { Ledger, type RPCServices, type WalletService } from "@nodex/rpc";
import { TxPool } from "@nodex/txpool";
import {
  type Address,
  deriveDevAccounts,
  hexToBytes,
  type Logger,
  type NetworkPreset,
} from "@nodex/types";
import type { NodeConfig } from "./config.js";
import { clientVersion } from "./version.js";

/** eth_gasPrice answers the best block's minimum gas price times this, as the reference node does. */
const GAS_PRICE_MULTIPLIER_PERCENT = 110n;

const ZERO_ADDRESS = new Uint8Array(20) as Address;

function devAddresses(network: NetworkPreset): readonly Address[] {
  return network.devAccounts ? deriveDevAccounts().map((a) => a.address) : [];
}

/**
 * The services the RPC methods read. Until the p2p package exists the node has no peers.
 * Development networks seal a block per transaction received (or per interval); merged miners
 * get work and submit solutions on every network.
 */
export function createServices(
  config: NodeConfig,
  chain: Chain,
  executor: Executor,
  logger: Logger,
  /** The node's accounts (dev accounts and the keystore); without it, the dev addresses only. */
  wallet?: WalletService,
): RPCServices {
  const { network } = config;
  let accounts: readonly Address[] | undefined;
  const listAccounts = () => {
    accounts ??= devAddresses(network);
    return accounts;
  };
  let coinbase: Address | undefined =
    config.coinbase === undefined ? undefined : (hexToBytes(config.coinbase) as Address);
  const getCoinbase = () => {
    coinbase ??= listAccounts()[0] ?? ZERO_ADDRESS;
    return coinbase;
  };
  const ledger = new Ledger(chain, executor, {
    automine: network.devAccounts,
    mineInterval: config.mineInterval,
    coinbase: getCoinbase,
    // The operator's own transactions survive a restart: the pool journals them here.
    pool: new TxPool({
      chainId: network.chainId,
      journalPath: join(config.datadir, "txpool.journal"),
    }),
  });
  const miner = new MinerServer(chain, {
    coinbase: getCoinbase,
    transactions: () => ledger.pendingTransactions(),
    transactionsVersion: () => ledger.pool.version,
    logger: logger.child({ module: "miner" }),
  });
  return {
    network,
    clientVersion: clientVersion(),
    chain: {
      blockNumber: () => chain.head.block.header.number,
      gasPrice: () =>
        (chain.head.block.header.minimumGasPrice * GAS_PRICE_MULTIPLIER_PERCENT) / 100n,
    },
    peers: {
      listening: () => false,
      peerCount: () => 0,
      peerList: () => [],
      syncing: () => false,
    },
    mining: {
      coinbase: getCoinbase,
      // Development networks seal their own blocks; elsewhere, miners that reported a hashrate.
      mining: () => network.devAccounts || miner.reportedHashrate() > 0n,
      hashrate: () => miner.reportedHashrate(),
    },
    accounts: wallet ?? { list: listAccounts },
    ...(wallet === undefined ? {} : { wallet }),
    ledger,
    miner,
  };
}
