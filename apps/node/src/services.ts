import { join } from "node:path";
import { type Chain, ChainReader } from "@nodex/chain";
import type { Executor } from "@nodex/evm";
import { BlockProducer, MinerServer } from "@nodex/miner";
import type { RPCServices, WalletService } from "@nodex/rpc";
import { TxAdmission, TxPool } from "@nodex/txpool";
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

/** The node's parts below the RPC, wired to one chain. */
export interface NodeCore {
  readonly reader: ChainReader;
  readonly admission: TxAdmission;
  readonly producer: BlockProducer;
  readonly miner: MinerServer;
  readonly services: RPCServices;
}

/**
 * Wires the node's core on `chain`: the chain reader, the pool and its one admission path,
 * block production (automine, intervals, the evm_ controls, the pending block) and the work for
 * merged miners, and the services the RPC methods read. Until the p2p package exists the node
 * has no peers.
 */
export function createCore(
  config: NodeConfig,
  chain: Chain,
  executor: Executor,
  logger: Logger,
  /** The node's accounts (dev accounts and the keystore); without it, the dev addresses only. */
  wallet?: WalletService,
  /** What `evm_reset` does once back at the first block (`BlockProducerOptions.afterReset`). */
  afterReset?: () => Promise<void>,
): NodeCore {
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
  const reader = new ChainReader(chain, executor, {
    // The next block's beneficiary, as a development network's hardhat_setCoinbase left it.
    coinbase: (): Address => producer.coinbase,
    // Calls run at the node's clock, as a development network's evm_increaseTime moved it.
    nextTimestamp: (): bigint | undefined => producer.nextBlockTime(),
    nextGasLimit: (): bigint | undefined => producer.nextGasLimit(),
    stateCache: config.caches.states,
  });
  // Transactions users submitted survive a restart: the pool journals them here.
  const pool = new TxPool({
    chainId: network.chainId,
    typedTransactionsFrom: network.typedTransactionsFrom,
    journalPath: join(config.datadir, "txpool.journal"),
    ...(config.txpoolKeyShare === undefined ? {} : { ownerSlots: config.txpoolKeyShare }),
  });
  const admission = new TxAdmission(reader, pool, logger.child({ module: "txpool" }));
  const producer = new BlockProducer(chain, admission, {
    automine: network.devAccounts,
    mineInterval: config.mineInterval,
    startMining: config.automine,
    ...(config.blockGasLimit === undefined ? {} : { blockGasLimit: config.blockGasLimit }),
    coinbase: getCoinbase,
    ...(afterReset === undefined ? {} : { afterReset }),
    logger: logger.child({ module: "producer" }),
  });
  reader.setPendingSource(producer);
  const miner = new MinerServer(chain, {
    coinbase: getCoinbase,
    transactions: () => producer.pendingTransactions(),
    transactionsVersion: () => pool.version,
    logger: logger.child({ module: "miner" }),
  });
  const services: RPCServices = {
    network,
    clientVersion: config.clientVersion ?? clientVersion(),
    chain: {
      blockNumber: () => chain.head.block.header.number,
      gasPrice: () =>
        (chain.head.block.header.minimumGasPrice * GAS_PRICE_MULTIPLIER_PERCENT) / 100n,
      writing: () => chain.writing(),
      storage: () => chain.storage(),
      headTimestamp: () => Number(chain.head.block.header.timestamp),
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
      mining: () => (network.devAccounts && config.automine) || miner.reportedHashrate() > 0n,
      hashrate: () => miner.reportedHashrate(),
    },
    accounts: wallet ?? { list: listAccounts },
    ...(wallet === undefined ? {} : { wallet }),
    reader,
    // debug_trace* and trace_* (the debug and trace modules, off unless --rpc-modules names them)
    tracing: reader,
    // A send is answered once its automined block is built; requests wait until it is the head.
    transactions: {
      sendTransaction: (raw, opts) =>
        producer.sendTransaction(raw, {
          local: opts.local ?? false,
          ...(opts.owner === undefined ? {} : { owner: opts.owner }),
          wait: "built",
        }),
    },
    pool,
    dev: producer,
    events: {
      onHeadChange: (listener) => chain.onHeadChange(listener),
      onNewTransaction: (listener) => admission.onAdmitted(listener),
    },
    miner,
  };
  return { reader, admission, producer, miner, services };
}
