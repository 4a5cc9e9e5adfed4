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
  | "sco";
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
}

const PUBLIC_MODULES: readonly ModuleName[] = ["eth", "net", "web3", "rpc", "txpool", "nodex"];
const DEV_MODULES: readonly ModuleName[] = [...PUBLIC_MODULES, "evm", "personal", "mnr"];

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
  }),
  testnet: preset({
    name: "testnet",
    chainId: 31,
    displayName: "Testnet",
    defaultModules: PUBLIC_MODULES,
    devAccounts: false,
    genesis: { minimumGasPrice: 0n, gasLimit: 5_000_000n, difficulty: 1_048_576n },
  }),
  devnet: preset({
    name: "devnet",
    chainId: 32,
    displayName: "Devnet",
    defaultModules: DEV_MODULES,
    devAccounts: true,
    genesis: { minimumGasPrice: 0n, gasLimit: 10_000_000n, difficulty: 1n },
  }),
  regtest: preset({
    name: "regtest",
    chainId: 33,
    displayName: "Regtest",
    defaultModules: DEV_MODULES,
    devAccounts: true,
    genesis: { minimumGasPrice: 0n, gasLimit: 10_000_000n, difficulty: 1n },
  }),
});

export function isNetworkName(value: unknown): value is NetworkName {
  return typeof value === "string" && (NETWORK_NAMES as readonly string[]).includes(value);
}

export function networkByChainId(chainId: number): NetworkPreset | undefined {
  return Object.values(NETWORKS).find((n) => n.chainId === chainId);
}
