import { readFileSync } from "node:fs";
import { homedir } from "node:os";
import { isAbsolute, join, resolve } from "node:path";
import { DEFAULT_CHAIN_CACHE_SIZES, DEFAULT_STATE_CACHE } from "@nodex/chain";
import {
  DEFAULT_FILTER_OPTIONS,
  DEFAULT_READY_OPTIONS,
  DEFAULT_SUBSCRIPTION_OPTIONS,
  DEFAULT_WS_OPTIONS,
  defaultRPCOptions,
  type HttpLayer,
  type RPCOptions,
} from "@nodex/rpc";
import { DEFAULT_TRIE_NODE_CACHE } from "@nodex/state";
import {
  type LogLevel,
  type ModuleName,
  NETWORKS,
  type NetworkName,
  type NetworkPreset,
  NodexError,
  type SignatureRecoveryPreference,
} from "@nodex/types";
import type { KeystoreKdf } from "./accounts/keystore.js";
import { DEFAULT_RPC_WORKER_QUEUE, DEFAULT_RPC_WORKER_THREADS } from "./heavyPool.js";
import {
  COMMAND_FLAGS,
  COMMAND_SETTINGS,
  COMMANDS,
  type CommandDef,
  type CommandOptionDef,
  commandSettingFlags,
  OPTIONS,
  type OptionDef,
} from "./options.js";

/** A mistake in the command line, environment or config file: exit 2 with the message. */
export class UsageError extends NodexError<"NODE_USAGE"> {
  constructor(message: string) {
    super("NODE_USAGE", message);
    this.name = "UsageError";
  }
}

export type LogFormat = "json" | "pretty";

/** The validated, frozen settings of one node. Each package gets its slice. */
/** The node's place on the peer-to-peer network. */
export interface P2PConfig {
  readonly host: string;
  readonly port: number;
  readonly bootnodes: readonly string[];
  readonly mdns: boolean;
  readonly maxInboundPeers: number;
  readonly maxOutboundPeers: number;
  /** How the node joins when it is far behind: every block from genesis, or a snapshot sync. */
  readonly syncMode: "full" | "snap";
}

/**
 * The gas limit of a development network's blocks unless told otherwise: Hardhat's and Anvil's,
 * which tools assume (hardhat-ethers sends with a fixed 16,777,216 to a local node it takes for
 * Hardhat's).
 */
export const DEV_BLOCK_GAS_LIMIT = 30_000_000n;

/** The network a development chain forks (`--fork-url` and its companions). */
export interface ForkConfig {
  /** Upstream JSON-RPC endpoints, in the order they are tried. */
  readonly urls: readonly string[];
  /** The upstream's block the chain goes on from; its head minus a few when absent. */
  readonly block: bigint | undefined;
  /** The hash the fork block must have (0x-hex, lower case). */
  readonly blockHash: string | undefined;
  /** Seconds an upstream has to answer a request. */
  readonly timeoutSeconds: number;
  /** Whether state fetched upstream is checked against the fork block's state root. */
  readonly verify: boolean;
  /**
   * HTTP requests a second to the upstreams, at most; absent: `DEFAULT_FORK_RPS`, or no budget
   * for upstreams on this machine (loopback addresses and localhost).
   */
  readonly rps: number | undefined;
}

/** Seconds a fork's upstream has to answer a request unless told otherwise. */
export const DEFAULT_FORK_TIMEOUT_SECONDS = 10;

/** Requests a second to a fork's upstreams unless told otherwise. */
export const DEFAULT_FORK_RPS = 100;

/** The fork settings, or none; a companion of `--fork-url` without it is a usage error. */
function forkConfig(pick: <T>(key: string) => T | undefined): ForkConfig | undefined {
  const urls = pick<string[]>("forkUrls") ?? [];
  const block = pick<bigint>("forkBlock");
  const blockHash = pick<string>("forkBlockHash");
  const verify = pick<"on" | "off">("forkVerify");
  const rps = pick<number>("forkRps");
  const timeout = pick<number>("forkTimeout");
  if (urls.length === 0) {
    const orphan = [
      ["--fork-timeout", timeout],
      ["--fork-block", block],
      ["--fork-block-hash", blockHash],
      ["--fork-verify", verify],
      ["--fork-rps", rps],
    ].find(([, value]) => value !== undefined);
    if (orphan !== undefined)
      throw new UsageError(`${orphan[0]} needs --fork-url: it says how to fork a network`);
    return undefined;
  }
  return Object.freeze({
    urls: Object.freeze(unique(urls)),
    block,
    blockHash,
    verify: verify !== "off",
    rps,
    timeoutSeconds: timeout ?? DEFAULT_FORK_TIMEOUT_SECONDS,
  });
}

export interface NodeConfig {
  readonly network: NetworkPreset;
  readonly datadir: string;
  readonly logLevel: LogLevel;
  readonly logFormat: LogFormat;
  /** Mining beneficiary; `undefined` means the network's default. */
  readonly coinbase: string | undefined;
  /** Blocks whose state is kept, counting back from the head; `"all"` keeps every block's. */
  readonly stateWindow: number | "all";
  /** Lowest block difficulty; `undefined` for the network's. */
  readonly minDifficulty: bigint | undefined;
  /** Free disk space (bytes) below which writes are refused; 0 for no minimum. */
  readonly minFreeBytes: number;
  /** Entries of the node's in-memory caches (`--cache-*`). */
  readonly caches: NodeCaches;
  /** Seconds between blocks on development networks; 0 mines a block per transaction. */
  readonly mineInterval: number;
  /** Whether a development network's node makes its own blocks (`--no-automine`: no). */
  readonly automine: boolean;
  /** The gas limit of the blocks a development network's node makes; `undefined` elsewhere. */
  readonly blockGasLimit: bigint | undefined;
  /** `--state`: the state file a development network starts from and writes at shutdown. */
  readonly stateFile: string | undefined;
  /** What `web3_clientVersion` answers on a development network; the node's own when absent. */
  readonly clientVersion: string | undefined;
  /** The peer-to-peer network; `undefined` for a node alone (`--no-p2p`, and regtest). */
  readonly p2p: P2PConfig | undefined;
  /** scrypt cost of the key files the node writes. */
  readonly keystoreKdf: KeystoreKdf;
  /** Signature recovery: libsecp256k1 when it loads (`auto`), or always noble. */
  readonly signatureRecovery: SignatureRecoveryPreference;
  readonly rpc: RPCOptions;
  /**
   * Worker threads serving traces and `eth_getLogs` (`--rpc-worker-threads`); 0 serves them on
   * the main thread.
   */
  readonly rpcWorkerThreads: number;
  /** Traces and log queries that may wait for a worker thread (`--rpc-worker-queue`). */
  readonly rpcWorkerQueue: number;
  /** `--txpool-key-share`: transactions one API key may have in the pool (hosted mode). */
  readonly txpoolKeyShare: number | undefined;
  /** `--api-key-file`: keys a deployment tool provisions, followed while the node runs. */
  readonly apiKeyFile: string | undefined;
  /** `--redis`: the Redis the replicas of an endpoint share state through; none by default. */
  readonly redis: string | undefined;
  /** `--fork-url` and its companions: the network a development chain forks; none by default. */
  readonly fork: ForkConfig | undefined;
  /** The listener of `/metrics`, `/health` and `/ready` (`--metrics-addr`); off when absent. */
  readonly metricsAddr: { readonly host: string; readonly port: number } | undefined;
  /** `--rpc-access-log`: a file, `-` for standard output; off when absent. */
  readonly accessLog: string | undefined;
  /** Where each setting came from, for the start-up log. */
  readonly sources: Readonly<Record<string, "flag" | "env" | "file">>;
}

/** How many entries each in-memory cache holds. */
export interface NodeCaches {
  readonly blocks: number;
  readonly headers: number;
  readonly receipts: number;
  readonly trieNodes: number;
  readonly states: number;
}

/** MiB of free disk space below which a node of mainnet or testnet takes no writes (as geth's). */
const DEFAULT_MIN_FREE_MIB = 256;

/** The caches' sizes when not set: the packages' defaults. */
export const DEFAULT_CACHES: NodeCaches = {
  blocks: DEFAULT_CHAIN_CACHE_SIZES.blocks,
  headers: DEFAULT_CHAIN_CACHE_SIZES.headers,
  receipts: DEFAULT_CHAIN_CACHE_SIZES.receipts,
  trieNodes: DEFAULT_TRIE_NODE_CACHE,
  states: DEFAULT_STATE_CACHE,
};

/** `nodex export FILE`: canonical blocks `from`..`to` to a file of RLP blocks. */
export interface ExportCommand {
  readonly kind: "export";
  readonly config: NodeConfig;
  /** Absolute path, or `"-"` for standard output. */
  readonly file: string;
  /** First block; `undefined` means 1. */
  readonly from: bigint | undefined;
  /** Last block; `undefined` means the head. */
  readonly to: bigint | undefined;
  /** Overwrite `file` when it exists. */
  readonly force: boolean;
}

/** `nodex import FILE`: the blocks of a file of RLP blocks into the chain. */
export interface ImportCommand {
  readonly kind: "import";
  readonly config: NodeConfig;
  /** Absolute path, or `"-"` for standard input. */
  readonly file: string;
}

/** `nodex mine`: the reference merged miner against a node's JSON-RPC. */
export interface MineCommand {
  readonly kind: "mine";
  readonly rpc: string;
  readonly threads: number;
  readonly maxBlocks: number;
  readonly pollMs: number;
}

/** `nodex keys create|list|revoke`: the API key registry of a datadir. */
export type KeysCommand = {
  readonly kind: "keys";
  readonly config: NodeConfig;
} & (
  | {
      readonly action: "create";
      readonly name: string;
      readonly rate: number | undefined;
      readonly daily: number | undefined;
      readonly methods: readonly string[] | undefined;
      readonly deny: readonly string[] | undefined;
      readonly allow: readonly string[] | undefined;
    }
  | { readonly action: "list"; readonly json: boolean }
  | { readonly action: "revoke"; readonly id: string }
);

export type Command =
  | { readonly kind: "run"; readonly config: NodeConfig }
  | KeysCommand
  | ExportCommand
  | ImportCommand
  | MineCommand
  | { readonly kind: "help" }
  | { readonly kind: "version" };

export interface Environment {
  readonly argv: readonly string[];
  readonly env: Readonly<Record<string, string | undefined>>;
  /** Whether log output goes to a terminal (decides the default log format). */
  readonly isTTY: boolean;
  readonly cwd?: string;
  readonly home?: string;
}

type Values = Map<string, unknown>;

/** Blocks whose state a node keeps, unless it is told otherwise (regtest keeps all). */
export const DEFAULT_STATE_WINDOW = 128;

const byFlag = new Map<string, OptionDef>(OPTIONS.map((o) => [o.flag, o]));
const byAlias = new Map<string, { option: OptionDef; value: string }>(
  OPTIONS.flatMap((o) =>
    Object.entries(o.aliases ?? {}).map(([flag, value]) => [flag, { option: o, value }]),
  ),
);
const byKey = new Map<string, OptionDef>(OPTIONS.map((o) => [o.key, o]));
const commandByName = new Map<string, CommandDef>(COMMANDS.map((c) => [c.name, c]));
const commandFlags = new Map<string, CommandOptionDef>(
  COMMANDS.flatMap((c) => c.options.map((o) => [o.flag, o] as const)),
);

/** What the command line says, before the environment and the file are read. */
interface ParsedArgv {
  readonly values: Values;
  /** The first word, when it names a command. */
  readonly command: CommandDef | undefined;
  /** Words after the command. */
  readonly operands: readonly string[];
  /** Flags of the node, as typed, with the setting each one sets. */
  readonly flags: readonly { readonly flag: string; readonly key: string }[];
  /** Flags of commands (`--from`), with their parsed values (`true` for switches). */
  readonly commandValues: ReadonlyMap<string, unknown>;
}

/**
 * Reads the command line, `NODEX_*` variables and the config file into one config.
 * Precedence: flag > environment > config file > network preset > default.
 */
export function parseCommandLine(environment: Environment): Command {
  const parsed = parseArgv(environment.argv);
  if (parsed === "help" || parsed === "version") return { kind: parsed };
  const { values: fromFlags, command } = parsed;
  checkCommandFlags(command, parsed);
  const fromEnv = parseEnv(environment.env);
  const configPath = (fromFlags.get("config") ?? fromEnv.get("config")) as string | undefined;
  const fromFile =
    configPath === undefined ? new Map() : parseFile(resolve(environment.cwd ?? ".", configPath));

  const sources: Record<string, "flag" | "env" | "file"> = {};
  const pick = <T>(key: string): T | undefined => {
    for (const [source, values] of [
      ["flag", fromFlags],
      ["env", fromEnv],
      ["file", fromFile],
    ] as const) {
      if (values.has(key)) {
        sources[key] = source;
        return values.get(key) as T;
      }
    }
    return undefined;
  };

  const network = NETWORKS[pick<NetworkName>("network") ?? "mainnet"];
  const dev = network.devAccounts;
  const home = environment.home ?? homedir();
  const datadirText = pick<string>("datadir");
  const datadir =
    datadirText === undefined
      ? join(home, ".nodex", network.name)
      : expandHome(datadirText, home, environment.cwd ?? ".");

  const wsPort = pick<number>("wsPort");
  const keylessRate = pick<number>("rpcKeylessRate");
  const keylessDaily = pick<number>("rpcKeylessDaily");
  const weights = pick<[string, number][]>("rpcMethodWeights");
  const budgets = Object.fromEntries(
    (
      [
        ["call", pick<number>("rpcBudgetCallMs")],
        ["logs", pick<number>("rpcBudgetLogsMs")],
        ["trace", pick<number>("rpcBudgetTraceMs")],
      ] as const
    ).filter(([, ms]) => ms !== undefined),
  );
  const syncMode = pick<"full" | "snap">("syncMode");
  const givenGasLimit = pick<bigint>("blockGasLimit");
  const rpc: RPCOptions = {
    host: pick<string>("rpcHost") ?? defaultRPCOptions.host,
    port: pick<number>("rpcPort") ?? defaultRPCOptions.port,
    modules: withMiner(
      unique(pick<ModuleName[]>("rpcModules") ?? network.defaultModules),
      pick<"on" | "off">("miner"),
    ),
    apiKeys: unique(pick<string[]>("apiKeys") ?? []),
    hostedAllow: unique(pick<string[]>("rpcHostedAllow") ?? []),
    hosted: pick<"on" | "off">("hosted") === "on",
    ...(keylessRate === undefined && keylessDaily === undefined
      ? {}
      : {
          keyless: Object.freeze({
            ...(keylessRate === undefined ? {} : { rate: keylessRate }),
            ...(keylessDaily === undefined ? {} : { daily: keylessDaily }),
          }),
        }),
    ...(weights === undefined ? {} : { methodWeights: Object.freeze(Object.fromEntries(weights)) }),
    ...(Object.keys(budgets).length === 0 ? {} : { budgets: Object.freeze(budgets) }),
    corsOrigins: unique(pick<string[]>("rpcCorsOrigins") ?? (dev ? ["*"] : [])),
    maxBodyBytes: pick<number>("rpcMaxBodyBytes") ?? defaultRPCOptions.maxBodyBytes,
    maxBatchSize: pick<number>("rpcMaxBatchSize") ?? defaultRPCOptions.maxBatchSize,
    maxResponseBytes: pick<number>("rpcMaxResponseBytes") ?? defaultRPCOptions.maxResponseBytes,
    timeoutMs: pick<number>("rpcTimeoutMs") ?? defaultRPCOptions.timeoutMs,
    filters: {
      timeoutMs:
        (pick<number>("rpcFilterTimeout") ?? DEFAULT_FILTER_OPTIONS.timeoutMs / 1000) * 1000,
      maxFilters: pick<number>("rpcMaxFilters") ?? DEFAULT_FILTER_OPTIONS.maxFilters,
    },
    httpLayer: pick<HttpLayer>("rpcHttpLayer") ?? defaultRPCOptions.httpLayer,
    ...(wsPort === undefined ? {} : { wsPort }),
    ws: {
      maxConnections: pick<number>("wsMaxConnections") ?? DEFAULT_WS_OPTIONS.maxConnections,
      maxBufferedBytes: pick<number>("wsMaxBufferBytes") ?? DEFAULT_WS_OPTIONS.maxBufferedBytes,
    },
    subscriptions: {
      maxPerConnection:
        pick<number>("wsMaxSubscriptions") ?? DEFAULT_SUBSCRIPTION_OPTIONS.maxPerConnection,
    },
    ready: {
      minPeers: pick<number>("readyMinPeers") ?? DEFAULT_READY_OPTIONS.minPeers,
      maxBlocksBehind:
        pick<number>("readyMaxBlocksBehind") ?? DEFAULT_READY_OPTIONS.maxBlocksBehind,
      maxHeadAgeSeconds: pick<number>("readyMaxHeadAge") ?? DEFAULT_READY_OPTIONS.maxHeadAgeSeconds,
    },
  };
  const accessLog = pick<string>("rpcAccessLog");
  const fork = forkConfig(pick);
  const config: NodeConfig = {
    network,
    datadir,
    // The commands log warnings and errors only unless told: they print their own progress.
    logLevel: pick<LogLevel>("logLevel") ?? (command === undefined ? "info" : "warn"),
    logFormat: pick<LogFormat>("logFormat") ?? (environment.isTTY ? "pretty" : "json"),
    coinbase: pick<string>("coinbase"),
    stateWindow:
      pick<number | "all">("stateWindow") ??
      (network.name === "regtest" ? "all" : DEFAULT_STATE_WINDOW),
    minDifficulty: pick<bigint>("minDifficulty"),
    minFreeBytes:
      (pick<number>("minFreeSpace") ?? (network.devAccounts ? 64 : DEFAULT_MIN_FREE_MIB)) * 2 ** 20,
    caches: Object.freeze({
      blocks: pick<number>("cacheBlocks") ?? DEFAULT_CACHES.blocks,
      headers: pick<number>("cacheHeaders") ?? DEFAULT_CACHES.headers,
      receipts: pick<number>("cacheReceipts") ?? DEFAULT_CACHES.receipts,
      trieNodes: pick<number>("cacheTrieNodes") ?? DEFAULT_CACHES.trieNodes,
      states: pick<number>("cacheStates") ?? DEFAULT_CACHES.states,
    }),
    mineInterval: pick<number>("mineInterval") ?? 0,
    rpcWorkerThreads: pick<number>("rpcWorkerThreads") ?? (dev ? 0 : DEFAULT_RPC_WORKER_THREADS),
    rpcWorkerQueue: pick<number>("rpcWorkerQueue") ?? DEFAULT_RPC_WORKER_QUEUE,
    txpoolKeyShare: pick<number>("txpoolKeyShare"),
    apiKeyFile: ((file) =>
      file === undefined ? undefined : expandHome(file, home, environment.cwd ?? "."))(
      pick<string>("apiKeyFile"),
    ),
    automine: pick<"on" | "off">("automine") !== "off",
    clientVersion: pick<string>("clientVersion"),
    stateFile: pick<string>("stateFile"),
    redis: pick<string>("redis"),
    fork,
    blockGasLimit: givenGasLimit ?? (dev ? DEV_BLOCK_GAS_LIMIT : undefined),
    p2p:
      // A fork's blocks go on from another network's: no peer of this one has them.
      (pick<"on" | "off">("p2p") ?? (network.p2pByDefault && fork === undefined ? "on" : "off")) ===
      "off"
        ? undefined
        : Object.freeze({
            host: pick<string>("p2pHost") ?? "0.0.0.0",
            port: pick<number>("p2pPort") ?? 5050,
            bootnodes: unique(pick<string[]>("bootnodes") ?? network.bootnodes),
            mdns: pick<"on" | "off">("mdns") === "on",
            maxInboundPeers: pick<number>("maxInboundPeers") ?? 25,
            maxOutboundPeers: pick<number>("maxOutboundPeers") ?? 10,
            syncMode: syncMode ?? "full",
          }),
    keystoreKdf: pick<KeystoreKdf>("keystoreKdf") ?? (dev ? "light" : "standard"),
    signatureRecovery: pick<SignatureRecoveryPreference>("secp256k1") ?? "auto",
    rpc: Object.freeze(rpc),
    metricsAddr: pick<{ host: string; port: number }>("metricsAddr"),
    accessLog:
      accessLog === undefined || accessLog === "-"
        ? accessLog
        : expandHome(accessLog, home, environment.cwd ?? "."),
    sources: Object.freeze(sources),
  };
  if (command !== undefined) return commandOf(command, parsed, Object.freeze(config), environment);
  if (!config.automine && !dev) {
    throw new UsageError(
      `--no-automine works on regtest and devnet only: ${network.name} makes no blocks of its own anyway`,
    );
  }
  if (syncMode === "snap" && config.p2p === undefined) {
    throw new UsageError(
      "--sync-mode snap needs the peer-to-peer network: it downloads from peers (p2p is off)",
    );
  }
  if (config.p2p?.syncMode === "snap" && config.stateWindow === "all") {
    throw new UsageError(
      "--sync-mode snap and --state-window all contradict each other: a snapshot sync has the state from its pivot on, not every block's",
    );
  }
  if (config.mineInterval > 0 && !config.automine) {
    throw new UsageError("--mine-interval and --no-automine contradict each other: pick one");
  }
  if (givenGasLimit !== undefined && !dev) {
    throw new UsageError(
      `--block-gas-limit works on regtest and devnet only: the gas limit of ${network.name} moves by its own rule`,
    );
  }
  if (config.stateFile !== undefined && !dev) {
    throw new UsageError(
      `--state works on regtest and devnet only: the state of ${network.name} comes from its blocks`,
    );
  }
  if (config.fork !== undefined) {
    if (!dev)
      throw new UsageError(
        `--fork-url works on regtest and devnet only: a node of ${network.name} follows its own network`,
      );
    if (config.p2p !== undefined)
      throw new UsageError(
        "--fork-url and --p2p on contradict each other: the blocks of a fork go on from another network's, which no peer of this one has",
      );
    if (config.stateFile !== undefined)
      throw new UsageError(
        "--fork-url and --state contradict each other: a fork's state is the upstream's; keep it with --datadir",
      );
    if (config.rpcWorkerThreads > 0)
      throw new UsageError(
        "--fork-url serves every request on the main thread, where the upstream is: leave --rpc-worker-threads at 0",
      );
  }
  if (config.clientVersion !== undefined && !dev) {
    throw new UsageError(
      `--client-version works on regtest and devnet only: a node of ${network.name} says what it is`,
    );
  }
  if (config.mineInterval > 0 && !dev) {
    throw new UsageError(
      `--mine-interval works on regtest and devnet only: blocks of ${network.name} are made by merged mining`,
    );
  }
  return { kind: "run", config: Object.freeze(config) };
}

function parseArgv(argv: readonly string[]): ParsedArgv | "help" | "version" {
  if (argv.includes("--help") || argv.includes("-h")) return "help";
  if (argv.includes("--version")) return "version";
  const values: Values = new Map();
  const networkFlag: string[] = [];
  const flags: { flag: string; key: string }[] = [];
  const commandValues = new Map<string, unknown>();
  let command: CommandDef | undefined;
  const operands: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === "-" || !arg.startsWith("-")) {
      if (command !== undefined) operands.push(arg);
      else if (commandByName.has(arg)) command = commandByName.get(arg);
      else throw new UsageError(`unexpected argument ${JSON.stringify(arg)}`);
      continue;
    }
    const eq = arg.indexOf("=");
    const flag = arg.startsWith("--") && eq !== -1 ? arg.slice(0, eq) : arg;
    const alias = byAlias.get(flag);
    if (alias !== undefined) {
      if (eq !== -1) throw new UsageError(`option ${flag} takes no value`);
      if (alias.option.key === "network") networkFlag.push(flag);
      flags.push({ flag, key: alias.option.key });
      setValue(values, alias.option, alias.value, flag);
      continue;
    }
    const commandOption = commandFlags.get(flag);
    const option = byFlag.get(flag);
    if (option === undefined && commandOption === undefined) {
      throw new UsageError(`unknown option ${flag}`);
    }
    const valueName = option?.valueName ?? commandOption?.valueName;
    if (commandOption !== undefined && valueName === undefined) {
      if (eq !== -1) throw new UsageError(`option ${flag} takes no value`);
      commandValues.set(flag, true);
      continue;
    }
    let text: string | undefined;
    if (eq !== -1) text = arg.slice(eq + 1);
    else {
      text = argv[i + 1];
      if (text === undefined || (text.startsWith("--") && text.length > 2)) {
        throw new UsageError(`option ${flag} needs a value (${valueName ?? "VALUE"})`);
      }
      i++;
    }
    if (commandOption !== undefined) {
      commandValues.set(flag, parseCommandValue(commandOption, text));
      continue;
    }
    if (option!.key === "network") networkFlag.push(`${flag} ${text}`);
    flags.push({ flag, key: option!.key });
    setValue(values, option!, text, flag);
  }
  const chosen = new Set(networkFlag.map((f) => byAlias.get(f)?.value ?? f.split(" ")[1]));
  if (chosen.size > 1) {
    throw new UsageError(`conflicting network options: ${networkFlag.join(" and ")}`);
  }
  return { values, command, operands, flags, commandValues };
}

function parseCommandValue(option: CommandOptionDef, text: string): unknown {
  try {
    return option.parse === undefined ? text : option.parse(text);
  } catch (err) {
    throw new UsageError(`invalid value for ${option.flag}: ${(err as Error).message}`);
  }
}

/** A command takes its own flags and the node's settings it reads; the node no command flags. */
function checkCommandFlags(command: CommandDef | undefined, parsed: ParsedArgv): void {
  for (const { flag, key } of parsed.flags) {
    if (
      command !== undefined &&
      !COMMAND_SETTINGS.includes(key) &&
      !(command.settings ?? []).includes(key)
    ) {
      throw new UsageError(`option ${flag} does not apply to nodex ${command.name}`);
    }
  }
  for (const flag of parsed.commandValues.keys()) {
    if (command === undefined || !command.options.some((o) => o.flag === flag)) {
      const owners = COMMANDS.filter((c) => c.options.some((o) => o.flag === flag));
      throw new UsageError(
        `option ${flag} works with ${owners.map((c) => `nodex ${c.name}`).join(", ")} only`,
      );
    }
  }
}

function commandOf(
  command: CommandDef,
  parsed: ParsedArgv,
  config: NodeConfig,
  environment: Environment,
): ExportCommand | ImportCommand | MineCommand | KeysCommand {
  if (command.name === "keys") return keysCommandOf(parsed, config);
  if (command.name === "mine") {
    if (parsed.operands.length > 0)
      throw new UsageError(`unexpected argument ${JSON.stringify(parsed.operands[0])}`);
    return Object.freeze({
      kind: "mine",
      rpc: (parsed.commandValues.get("--rpc") as string | undefined) ?? "http://127.0.0.1:4444",
      threads: (parsed.commandValues.get("--threads") as number | undefined) ?? 1,
      maxBlocks: (parsed.commandValues.get("--max-blocks") as number | undefined) ?? 0,
      pollMs: (parsed.commandValues.get("--poll-ms") as number | undefined) ?? 2000,
    });
  }
  const [file, extra] = parsed.operands;
  const stream = command.name === "export" ? "standard output" : "standard input";
  if (file === undefined) {
    throw new UsageError(`nodex ${command.name} needs a FILE (- for ${stream})`);
  }
  if (extra !== undefined) throw new UsageError(`unexpected argument ${JSON.stringify(extra)}`);
  if (file.trim() === "") throw new UsageError(`the FILE of nodex ${command.name} is empty`);
  const path =
    file === "-" ? "-" : expandHome(file, environment.home ?? homedir(), environment.cwd ?? ".");
  if (command.name === "import") return Object.freeze({ kind: "import", config, file: path });
  const from = parsed.commandValues.get("--from") as bigint | undefined;
  const to = parsed.commandValues.get("--to") as bigint | undefined;
  if (from !== undefined && to !== undefined && from > to) {
    throw new UsageError(`--from ${from} is after --to ${to}`);
  }
  return Object.freeze({
    kind: "export",
    config,
    file: path,
    from,
    to,
    force: parsed.commandValues.get("--force") === true,
  });
}

function keysCommandOf(parsed: ParsedArgv, config: NodeConfig): KeysCommand {
  const [action, operand, extra] = parsed.operands;
  const v = parsed.commandValues;
  const only = (allowed: readonly string[]) => {
    for (const flag of v.keys())
      if (!allowed.includes(flag))
        throw new UsageError(`option ${flag} does not apply to nodex keys ${action}`);
  };
  if (action === "create") {
    if (operand !== undefined)
      throw new UsageError(`unexpected argument ${JSON.stringify(operand)}`);
    only(["--name", "--rate", "--daily", "--methods", "--deny", "--allow"]);
    const name = v.get("--name") as string | undefined;
    if (name === undefined) throw new UsageError("nodex keys create needs --name NAME");
    if (v.has("--methods") && v.has("--deny"))
      throw new UsageError("--methods and --deny contradict each other: give one");
    return Object.freeze({
      kind: "keys",
      config,
      action,
      name,
      rate: v.get("--rate") as number | undefined,
      daily: v.get("--daily") as number | undefined,
      methods: v.get("--methods") as string[] | undefined,
      deny: v.get("--deny") as string[] | undefined,
      allow: v.get("--allow") as string[] | undefined,
    });
  }
  if (action === "list") {
    if (operand !== undefined)
      throw new UsageError(`unexpected argument ${JSON.stringify(operand)}`);
    only(["--json"]);
    return Object.freeze({ kind: "keys", config, action, json: v.get("--json") === true });
  }
  if (action === "revoke") {
    only([]);
    if (operand === undefined) throw new UsageError("nodex keys revoke needs the ID of a key");
    if (extra !== undefined) throw new UsageError(`unexpected argument ${JSON.stringify(extra)}`);
    return Object.freeze({ kind: "keys", config, action, id: operand });
  }
  throw new UsageError(
    action === undefined
      ? "nodex keys needs an action: create, list or revoke"
      : `unknown action ${JSON.stringify(action)} of nodex keys: create, list or revoke`,
  );
}

function setValue(values: Values, option: OptionDef, text: string, where: string): void {
  if (option.list) {
    const previous = (values.get(option.key) as unknown[] | undefined) ?? [];
    values.set(option.key, [...previous, ...parseList(option, text, where)]);
  } else {
    values.set(option.key, parseOne(option, text, where));
  }
}

function parseOne(option: OptionDef, text: string, where: string): unknown {
  try {
    return option.parse(text);
  } catch (err) {
    throw new UsageError(`invalid value for ${where}: ${(err as Error).message}`);
  }
}

function parseList(option: OptionDef, text: string, where: string): unknown[] {
  const items = text.split(",").map((s) => s.trim());
  if (option.blankItems !== undefined && items.some((s) => s === "")) {
    throw new UsageError(`invalid value for ${where}: ${option.blankItems}`);
  }
  return items.filter((s) => s !== "").map((item) => parseOne(option, item, where));
}

function parseEnv(env: Readonly<Record<string, string | undefined>>): Values {
  const values: Values = new Map();
  for (const option of OPTIONS) {
    const text = env[option.env];
    if (text === undefined || (text === "" && option.blankItems === undefined)) continue;
    if (option.list) values.set(option.key, parseList(option, text, option.env));
    else values.set(option.key, parseOne(option, text, option.env));
  }
  return values;
}

function parseFile(path: string): Values {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, "utf8"));
  } catch (err) {
    const why =
      (err as NodeJS.ErrnoException).code === "ENOENT" ? "file not found" : (err as Error).message;
    throw new UsageError(`cannot read config file ${path}: ${why}`);
  }
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
    throw new UsageError(`config file ${path} must hold a JSON object`);
  }
  const values: Values = new Map();
  for (const [key, value] of Object.entries(raw)) {
    const option = byKey.get(key);
    const where = `${key} in ${path}`;
    if (option === undefined || key === "config") throw new UsageError(`unknown setting ${where}`);
    if (option.list && Array.isArray(value)) {
      values.set(
        key,
        value.map((item) => parseOne(option, scalarText(item, where), where)),
      );
    } else if (option.list) {
      values.set(key, parseList(option, scalarText(value, where), where));
    } else {
      values.set(key, parseOne(option, scalarText(value, where), where));
    }
  }
  return values;
}

function scalarText(value: unknown, where: string): string {
  if (typeof value === "string") return value;
  if (typeof value === "number" && Number.isFinite(value)) return String(value);
  throw new UsageError(`invalid value for ${where}: expected a string or a number`);
}

function expandHome(path: string, home: string, cwd: string): string {
  if (path === "~") return home;
  if (path.startsWith("~/")) return join(home, path.slice(2));
  return isAbsolute(path) ? path : resolve(cwd, path);
}

/** `--miner` adds the mnr module; `--miner-work off` takes it away. */
function withMiner(modules: readonly ModuleName[], miner: "on" | "off" | undefined) {
  if (miner === "on" && !modules.includes("mnr"))
    return Object.freeze([...modules, "mnr" as const]);
  if (miner === "off") return Object.freeze(modules.filter((m) => m !== "mnr"));
  return modules;
}

function unique<T>(items: readonly T[]): readonly T[] {
  return Object.freeze([...new Set(items)]);
}

/** `--help`: generated from the option table. */
export function helpText(): string {
  const lines = [
    "Usage: nodex [options]",
    ...COMMANDS.map((c) => `       nodex ${c.name} ${c.synopsis}`),
    "",
    "Runs a Nodex full node. With no network option it joins mainnet.",
    "Every option can also be set by its environment variable or in the --config file;",
    "precedence: flag > environment > config file > network preset > default.",
    "",
    "Options:",
  ];
  for (const o of OPTIONS) {
    const head = `  ${o.flag}${o.valueName ? ` ${o.valueName}` : ""}`;
    lines.push(head);
    lines.push(`      ${o.description}`);
    lines.push(
      `      default: ${o.defaultText}; env: ${o.env}; config key: ${o.key}${o.list ? " (list)" : ""}`,
    );
  }
  for (const [flag, text] of Object.entries(COMMAND_FLAGS)) {
    lines.push(`  ${flag}`);
    lines.push(`      ${text}`);
  }
  lines.push("", "Commands:");
  for (const c of COMMANDS) {
    lines.push(`  nodex ${c.name} ${c.synopsis}`);
    lines.push(`      ${c.description}`);
    for (const o of c.options) {
      lines.push(`    ${o.flag}${o.valueName ? ` ${o.valueName}` : ""}`);
      lines.push(`        ${o.description}`);
    }
  }
  lines.push(`  The commands take these options of the node: ${commandSettingFlags().join(", ")}.`);
  return `${lines.join("\n")}\n`;
}
