export type NetworkName = "mainnet" | "testnet" | "devnet" | "regtest";
export const NETWORK_NAMES: readonly NetworkName[] = Object.freeze([
  "mainnet",
  "testnet",
  "devnet",
  "regtest",
]);

export type ModuleName =
  | "eth"
  | "net"
  | "web3"
  | "rpc"
  | "evm"
  | "debug"
  | "trace"
  | "txpool"
  | "personal"
  | "mnr"
  | "nodex"
  | "sco"
  | "hardhat"
  | "anvil";
export const MODULE_NAMES: readonly ModuleName[] = Object.freeze([
  "eth",
  "net",
  "web3",
  "rpc",
  "evm",
  "debug",
  "trace",
  "txpool",
  "personal",
  "mnr",
  "nodex",
  "sco",
  "hardhat",
  "anvil",
]);

/** What differs between networks. Later work adds genesis allocations and consensus rules. */
export interface NetworkPreset {
  readonly name: NetworkName;
  /** EIP-155 chain id; `net_version` is the same number in decimal. */
  readonly chainId: number;
  readonly displayName: string;
  readonly defaultModules: readonly ModuleName[];
  /** Whether the node holds the development accounts. */
  readonly devAccounts: boolean;
  readonly genesis: {
    readonly minimumGasPrice: bigint;
    readonly gasLimit: bigint;
    readonly difficulty: bigint;
  };
  /**
   * How many blocks below the head the `safe` block tag names (the head minus this, at least
   * block 0). On a proof-of-work chain nothing is final by protocol: `safe` is a block with
   * enough confirmations that a reorganization past it is unlikely.
   */
  readonly safeDepth: bigint;
  /**
   * How many blocks below the head the `finalized` block tag names (the head minus this, at
   * least block 0): the depth the network treats as settled. At least `safeDepth`.
   */
  readonly finalizedDepth: bigint;
  /**
   * Peers a node of this network dials at start (multiaddrs with `/p2p/<id>`) unless told
   * others. None is published yet for any network.
   */
  readonly bootnodes: readonly string[];
  /** Whether the node joins the peer-to-peer network unless told otherwise (not on regtest). */
  readonly p2pByDefault: boolean;
  /**
   * The first block whose transactions may be typed (RSKIP546's type 1 and type 2 envelopes,
   * RSKIP543), or `null` where they are not active: from genesis on the development networks,
   * off on mainnet and testnet until the reference chain activates them.
   */
  readonly typedTransactionsFrom: bigint | null;
}

/** Whether a block numbered `blockNumber` of `network` may carry typed transactions. */
export function typedTransactionsActive(network: NetworkPreset, blockNumber: bigint): boolean {
  return network.typedTransactionsFrom !== null && blockNumber >= network.typedTransactionsFrom;
}

/**
 * `safe` on the public networks: 12 blocks, about six minutes at the 30-second block time;
 * twelve confirmations is the long-standing rule of thumb for a settled proof-of-work block on
 * Ethereum, and RSK reorganizations in practice are a block or two deep.
 */
const PUBLIC_SAFE_DEPTH = 12n;

const PUBLIC_MODULES: readonly ModuleName[] = ["eth", "net", "web3", "rpc", "txpool", "nodex"];
const DEV_MODULES: readonly ModuleName[] = [
  ...PUBLIC_MODULES,
  "evm",
  "personal",
  "mnr",
  "hardhat",
  "anvil",
];

function preset(p: NetworkPreset): NetworkPreset {
  return Object.freeze({
    ...p,
    defaultModules: Object.freeze([...p.defaultModules]),
    genesis: Object.freeze(p.genesis),
  });
}

export const NETWORKS: Readonly<Record<NetworkName, NetworkPreset>> = Object.freeze({
  mainnet: preset({
    name: "mainnet",
    chainId: 30,
    displayName: "Mainnet",
    defaultModules: PUBLIC_MODULES,
    devAccounts: false,
    genesis: { minimumGasPrice: 183_000_000n, gasLimit: 6_800_000n, difficulty: 1_048_576n },
    safeDepth: PUBLIC_SAFE_DEPTH,
    // The reference's own "settled" depth on mainnet: REMASC pays a block's miners 4000 blocks
    // later, and its bridge waits for 4000 confirmations before releasing a peg-out.
    finalizedDepth: 4000n,
    bootnodes: Object.freeze([]),
    p2pByDefault: true,
    typedTransactionsFrom: null,
  }),
  testnet: preset({
    name: "testnet",
    chainId: 31,
    displayName: "Testnet",
    defaultModules: PUBLIC_MODULES,
    devAccounts: false,
    genesis: { minimumGasPrice: 0n, gasLimit: 5_000_000n, difficulty: 1_048_576n },
    safeDepth: PUBLIC_SAFE_DEPTH,
    // The reference's REMASC maturity on testnet: a block's miners are paid 50 blocks later.
    finalizedDepth: 50n,
    bootnodes: Object.freeze([]),
    p2pByDefault: true,
    typedTransactionsFrom: null,
  }),
  devnet: preset({
    name: "devnet",
    chainId: 32,
    displayName: "Devnet",
    defaultModules: DEV_MODULES,
    devAccounts: true,
    genesis: { minimumGasPrice: 0n, gasLimit: 10_000_000n, difficulty: 1n },
    // A shared development chain: `safe` is the head, so it works from the first block, while
    // other miners may still replace recent blocks; `finalized` is the reference's REMASC
    // maturity on regtest (10 blocks), reached in seconds at difficulty 1.
    safeDepth: 0n,
    finalizedDepth: 10n,
    bootnodes: Object.freeze([]),
    p2pByDefault: true,
    typedTransactionsFrom: 0n,
  }),
  regtest: preset({
    name: "regtest",
    chainId: 33,
    displayName: "Regtest",
    defaultModules: DEV_MODULES,
    devAccounts: true,
    genesis: { minimumGasPrice: 0n, gasLimit: 10_000_000n, difficulty: 1n },
    // One local node mines on demand: no other miner can replace its blocks, so every block is
    // final once mined, and scripts see their transactions under every tag (as on Hardhat).
    safeDepth: 0n,
    finalizedDepth: 0n,
    bootnodes: Object.freeze([]),
    p2pByDefault: false,
    typedTransactionsFrom: 0n,
  }),
});

export function isNetworkName(value: unknown): value is NetworkName {
  return typeof value === "string" && (NETWORK_NAMES as readonly string[]).includes(value);
}

export function networkByChainId(chainId: number): NetworkPreset | undefined {
  return Object.values(NETWORKS).find((n) => n.chainId === chainId);
}
