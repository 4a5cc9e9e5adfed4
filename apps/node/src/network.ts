import { AncestryMemo, type Chain, type ConsensusRules, hashForMergedMining } from "@nodex/chain";
import type { P2PService, SnapChain } from "@nodex/p2p";
import type { PeersView, ScoringView } from "@nodex/rpc";
import type { TxAdmission } from "@nodex/txpool";
import { type BlockHeader, bytesToHex, type Logger } from "@nodex/types";
import type { NodeConfig, P2PConfig } from "./config.js";
import { bestPeerBlock } from "./metrics.js";

/**
 * What a node serves one peer (tokens of `requestTokens`): sync asks for a header and a body per
 * block, so a syncing peer may have a thousand blocks a second.
 */
const NODE_RATE_LIMIT = Object.freeze({ capacity: 4_096, refillPerSecond: 2_048 });

/**
 * The node on the peer-to-peer network: its key and bans in the datadir, headers checked with
 * the chain's own consensus rules (against ancestors not stored yet while syncing).
 *
 * `@nodex/p2p` (libp2p and its crypto) is loaded here, when the node joins a network, not when
 * the CLI loads: it is the largest part of the node's modules, and a node run with `--no-p2p`,
 * `nodex keys`, `--help` and `--version` never use it.
 */
export async function createNetwork(
  config: NodeConfig & { p2p: P2PConfig },
  chain: Chain,
  rules: ConsensusRules,
  admission: TxAdmission,
  submit: (raw: Uint8Array) => Promise<unknown>,
  logger: Logger,
): Promise<P2PService> {
  // Fork-detection data worked out for one header serves its descendants (keyed by block hash,
  // so right whatever the branch).
  const memo = new AncestryMemo();
  const checkSeal = async (
    header: BlockHeader,
    pending: ReadonlyMap<string, BlockHeader>,
  ): Promise<string | undefined> => {
    const source = {
      getHeaderByHash: async (hash: Uint8Array) =>
        pending.get(bytesToHex(hash)) ?? (await chain.getHeaderByHash(hash)),
      getCanonicalHash: (number: bigint) => chain.getCanonicalHash(number),
      firstBlock: chain.firstBlock,
    };
    let hfmm: Uint8Array;
    try {
      hfmm = await hashForMergedMining(source, header, memo);
    } catch (err) {
      return `no merged-mining hash: ${(err as Error).message}`;
    }
    return rules.checkSeal(header, hfmm);
  };
  const { P2PService } = await import("@nodex/p2p");
  return P2PService.create(
    {
      networkId: config.network.chainId,
      host: config.p2p.host,
      port: config.p2p.port,
      bootnodes: config.p2p.bootnodes,
      mdns: config.p2p.mdns,
      maxInboundPeers: config.p2p.maxInboundPeers,
      maxOutboundPeers: config.p2p.maxOutboundPeers,
      // A bootnode that went away (or was banned, then unbanned) is dialled again soon.
      bootnodeRedialMs: 5_000,
      rateLimit: NODE_RATE_LIMIT,
    },
    {
      datadir: config.datadir,
      chain,
      admission,
      submit,
      checkSeal,
      logger: logger.child({ module: "p2p" }),
      ...(wantsSnapshot(config.p2p, chain)
        ? {
            snap: {
              chain: snapChainOf(chain),
              // Its peers are Nodex nodes with this limit: ask for three quarters of it.
              options: {
                peerBudget: {
                  capacity: (NODE_RATE_LIMIT.capacity * 3) / 4,
                  refillPerSecond: (NODE_RATE_LIMIT.refillPerSecond * 3) / 4,
                },
              },
            },
          }
        : {}),
    },
  );
}

/**
 * Whether the node joins by a snapshot sync: asked for, and the chain is its network's genesis
 * chain not installed from a snapshot yet (a snapshot installed before goes on by full sync).
 */
function wantsSnapshot(p2p: P2PConfig, chain: Chain): boolean {
  return p2p.syncMode === "snap" && !chain.firstBlock.snapshot && !chain.firstBlock.anchored;
}

/** The chain as a snapshot sync works on it: the header chain, the state download, the pivot. */
export function snapChainOf(chain: Chain): SnapChain {
  return {
    get firstNumber() {
      return chain.firstBlock.number;
    },
    headerTip: () => chain.headerTip(),
    storeHeaders: (headers) => chain.storeHeaders(headers),
    headerByNumber: (number) => chain.headerChainAt(number),
    openStateSync: (root) => chain.openStateSync(root),
    snapPivot: () => chain.snapPivot(),
    saveSnapPivot: (number) => chain.saveSnapPivot(number),
    installSnapshot: (block, receipts) => chain.installSnapshot(block, receipts),
  };
}

/** The `net_` methods' view of the network. */
export function peersView(p2p: P2PService | undefined): PeersView {
  if (p2p === undefined) {
    return { listening: () => false, peerCount: () => 0, peerList: () => [], syncing: () => false };
  }
  return {
    listening: () => true,
    peerCount: () => p2p.network.peers().length,
    peerList: () => p2p.peerList(),
    syncing: () => p2p.syncing(),
    wireQueueSize: () => p2p.queueSize(),
    bestPeerBlock: () => bestPeerBlock(p2p),
  };
}

/** The `sco_` methods' view of the scoring. */
export function scoringView(p2p: P2PService): ScoringView {
  const { scoring } = p2p;
  return {
    peerList: () => scoring.peerList(),
    reputationSummary: () => scoring.summary(),
    bannedAddresses: () => scoring.bannedAddresses(),
    banAddress: (address) => {
      if (!scoring.ban(address)) return false;
      p2p.dropBanned("address banned by the operator");
      return true;
    },
    unbanAddress: (address) => scoring.unban(address),
  };
}
