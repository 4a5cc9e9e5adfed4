import { isIP } from "node:net";
import { HOSTED_OFF_METHODS, HOSTED_OFF_MODULES, HTTP_LAYERS, redisUrlProblem } from "@nodex/rpc";
import { isNetworkName, LOG_LEVELS, MODULE_NAMES, NETWORK_NAMES, NodexError } from "@nodex/types";

export const OptionErrorCode = {
  /** The text is not a value of the setting's kind. */
  INVALID_VALUE: "OPTION_INVALID_VALUE",
  /** A number outside the setting's range. */
  OUT_OF_RANGE: "OPTION_OUT_OF_RANGE",
} as const;
export type OptionErrorCode = (typeof OptionErrorCode)[keyof typeof OptionErrorCode];

/**
 * A setting's text that its parser refuses. The message is the reason alone (the caller names
 * the flag, variable or file key); `meta.text` holds the text.
 */
export class OptionError extends NodexError<OptionErrorCode> {
  constructor(code: OptionErrorCode, message: string, meta: Record<string, unknown> = {}) {
    super(code, message, meta);
    this.name = "OptionError";
  }
}

function invalid(text: string, reason: string): OptionError {
  return new OptionError(OptionErrorCode.INVALID_VALUE, reason, { text });
}

/** How a setting's text becomes its value; throws `OptionError` with the reason when it can't. */
export type ValueParser = (text: string) => unknown;

/** One setting of the node: its flag, environment variable and config-file key. */
export interface OptionDef {
  /** Key in the config file and in `NodeConfigInput`. */
  readonly key: string;
  readonly flag: string;
  /** Flags that set this option to a fixed value (`--regtest` sets `network`). */
  readonly aliases?: Readonly<Record<string, string>>;
  readonly env: string;
  /** Placeholder shown in help; absent for switches. */
  readonly valueName?: string;
  readonly description: string;
  /** Default, as shown in help and docs. */
  readonly defaultText: string;
  /** Repeatable flag; env and file take a comma list / array. */
  readonly list?: boolean;
  /**
   * A list whose blank items are refused instead of skipped, with this reason: an API key
   * written as `--api-key "$KEY"` with `KEY` unset must not start an open node.
   */
  readonly blankItems?: string;
  readonly parse: ValueParser;
}

function integer(min: number, max: number, what: string): ValueParser {
  return (text) => {
    if (!/^\d+$/.test(text))
      throw invalid(text, `${JSON.stringify(text)} is not ${what} (${min}-${max})`);
    const n = Number(text);
    if (n < min || n > max) {
      throw new OptionError(
        OptionErrorCode.OUT_OF_RANGE,
        `${text} is out of range for ${what} (${min}-${max})`,
        { text, min, max },
      );
    }
    return n;
  };
}

function oneOf(values: readonly string[]): ValueParser {
  return (text) => {
    if (!values.includes(text)) {
      throw invalid(text, `${JSON.stringify(text)} is not one of ${values.join(", ")}`);
    }
    return text;
  };
}

/** `HOST:PORT`, `[IPv6]:PORT`: where a listener binds. */
function hostPort(text: string): { host: string; port: number } {
  const found = /^(?:\[([0-9A-Fa-f:.]+)\]|([A-Za-z0-9.-]+)):(\d{1,5})$/.exec(text);
  if (found === null)
    throw invalid(text, `${JSON.stringify(text)} is not HOST:PORT (e.g. 127.0.0.1:9464)`);
  const host = found[1] ?? found[2]!;
  if (found[1] !== undefined && isIP(host) !== 6)
    throw invalid(text, `${JSON.stringify(host)} is not an IPv6 address`);
  const port = Number(found[3]);
  if (port > 65535) {
    throw new OptionError(
      OptionErrorCode.OUT_OF_RANGE,
      `${port} is out of range for a port (0-65535)`,
      {
        text,
        min: 0,
        max: 65535,
      },
    );
  }
  return { host, port };
}

/**
 * An upstream's JSON-RPC URL: http or https, with a host. Credentials in it (user:password@, or a
 * provider's key in the path) are allowed; the node never logs them.
 */
function upstreamUrl(text: string): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw invalid(text, "not a URL (e.g. http://127.0.0.1:8545)");
  }
  if (url.protocol !== "http:" && url.protocol !== "https:")
    throw invalid(
      text,
      `${url.protocol} is not a JSON-RPC transport here: use http:// or https://`,
    );
  if (url.hostname === "") throw invalid(text, "the URL names no host");
  return text;
}

const ADDRESS = /^0x[0-9a-fA-F]{40}$/;
const API_KEY = /^[A-Za-z0-9_-]{8,128}$/;

/** Every setting, in help order. `--help`, `docs/cli.md` and the parser all read this table. */
export const OPTIONS: readonly OptionDef[] = [
  {
    key: "network",
    flag: "--network",
    aliases: {
      "--mainnet": "mainnet",
      "--testnet": "testnet",
      "--devnet": "devnet",
      "--regtest": "regtest",
    },
    env: "NODEX_NETWORK",
    valueName: "NAME",
    description: `network to join: ${NETWORK_NAMES.join(", ")} (also --mainnet, --testnet, --devnet, --regtest)`,
    defaultText: "mainnet",
    parse: (text) => {
      if (!isNetworkName(text))
        throw invalid(text, `${JSON.stringify(text)} is not one of ${NETWORK_NAMES.join(", ")}`);
      return text;
    },
  },
  {
    key: "datadir",
    flag: "--datadir",
    env: "NODEX_DATADIR",
    valueName: "DIR",
    description: "directory for the node's database and files",
    defaultText: "~/.nodex/<network>",
    parse: (text) => {
      if (text.trim() === "") throw invalid(text, "the directory is empty");
      return text;
    },
  },
  {
    key: "rpcHost",
    flag: "--rpc-host",
    env: "NODEX_RPC_HOST",
    valueName: "HOST",
    description: "address the JSON-RPC server binds to",
    defaultText: "127.0.0.1",
    parse: (text) => {
      if (!/^[A-Za-z0-9.:[\]-]+$/.test(text))
        throw invalid(text, `${JSON.stringify(text)} is not a host name or address`);
      return text;
    },
  },
  {
    key: "rpcPort",
    flag: "--rpc-port",
    env: "NODEX_RPC_PORT",
    valueName: "PORT",
    description: "port of the JSON-RPC server (0 picks a free port)",
    defaultText: "4444",
    parse: integer(0, 65535, "a port number"),
  },
  {
    key: "rpcModules",
    flag: "--rpc-modules",
    env: "NODEX_RPC_MODULES",
    valueName: "LIST",
    description: `JSON-RPC modules to serve, comma-separated: ${MODULE_NAMES.join(", ")}`,
    defaultText:
      "eth,net,web3,rpc,txpool,nodex (+ evm,personal,mnr,hardhat,anvil on regtest and devnet)",
    list: true,
    parse: oneOf(MODULE_NAMES),
  },
  {
    key: "rpcHostedAllow",
    flag: "--rpc-hosted-allow",
    env: "NODEX_RPC_HOSTED_ALLOW",
    valueName: "LIST",
    description: `what hosted mode turns off that key holders get anyway, comma-separated: ${[...HOSTED_OFF_MODULES, ...HOSTED_OFF_METHODS].join(", ")} (each logged as a warning at start)`,
    defaultText: "none",
    list: true,
    parse: oneOf([...HOSTED_OFF_MODULES, ...HOSTED_OFF_METHODS]),
  },
  {
    key: "apiKeys",
    flag: "--api-key",
    env: "NODEX_API_KEYS",
    valueName: "KEY",
    description:
      "API key accepted as the last path segment (repeatable); any key turns on hosted mode",
    defaultText: "none (local mode)",
    list: true,
    blankItems: "an API key is empty (a variable that is not set?)",
    parse: (text) => {
      if (!API_KEY.test(text)) {
        // No text in meta: a key is a secret, however malformed.
        throw new OptionError(
          OptionErrorCode.INVALID_VALUE,
          "an API key is 8-128 characters of A-Z, a-z, 0-9, _ and -",
        );
      }
      return text;
    },
  },
  {
    key: "apiKeyFile",
    flag: "--api-key-file",
    env: "NODEX_API_KEY_FILE",
    valueName: "FILE",
    description:
      "file of API keys a deployment tool provisions: one key per line (# comments), or the JSON form of <datadir>/api-keys.json (SHA-256 digests only); read again within a second of a change; turns on hosted mode",
    defaultText: "none",
    parse: (text) => {
      if (text.trim() === "") throw invalid(text, "the file name is empty");
      return text;
    },
  },
  {
    key: "hosted",
    flag: "--rpc-hosted",
    aliases: { "--hosted": "on" },
    env: "NODEX_RPC_HOSTED",
    valueName: "on|off",
    description:
      "hosted mode even with no key yet (also --hosted): keys issued with nodex keys create are served within a second, without a restart. Hosted mode is on anyway with --api-key, --api-key-file, or keys in <datadir>/api-keys.json at start",
    defaultText: "off",
    parse: oneOf(["on", "off"]),
  },
  {
    key: "rpcKeylessRate",
    flag: "--rpc-keyless-rate",
    env: "NODEX_RPC_KEYLESS_RATE",
    valueName: "UNITS_PER_S",
    description:
      "hosted mode: serve requests without a key (the path /) within this rate per client address, in units per second (see the weight table in docs/operations.md); without it or --rpc-keyless-daily they get 401",
    defaultText: "none (keyless requests refused)",
    parse: integer(1, 1_000_000_000, "a number of units per second"),
  },
  {
    key: "rpcKeylessDaily",
    flag: "--rpc-keyless-daily",
    env: "NODEX_RPC_KEYLESS_DAILY",
    valueName: "UNITS",
    description:
      "hosted mode: serve requests without a key within this many units per client address and UTC day",
    defaultText: "none",
    parse: integer(1, Number.MAX_SAFE_INTEGER, "a number of units"),
  },
  {
    key: "rpcMethodWeights",
    flag: "--rpc-method-weight",
    env: "NODEX_RPC_METHOD_WEIGHTS",
    valueName: "METHOD=UNITS",
    description:
      "the units a method costs against the per-key limits, replacing its default (repeatable; eth_call=30)",
    defaultText: "the table in docs/operations.md",
    list: true,
    parse: (text) => {
      const m = /^([a-z0-9]+_[A-Za-z0-9]+)=(\d{1,9})$/.exec(text);
      if (m === null) throw invalid(text, `${JSON.stringify(text)} is not METHOD=UNITS`);
      return [m[1]!, Number(m[2])];
    },
  },
  {
    key: "txpoolKeyShare",
    flag: "--txpool-key-share",
    env: "NODEX_TXPOOL_KEY_SHARE",
    valueName: "N",
    description:
      "hosted mode: transactions one API key (or all keyless senders together) may have waiting in the pool; past it eth_sendRawTransaction answers -32010. Key holders' transactions also meet the pool's global limits, as those of peers do",
    defaultText: "512 (a tenth of the pool's 5120 pending slots)",
    parse: integer(1, 1_000_000, "a number of transactions"),
  },
  {
    key: "rpcCorsOrigins",
    flag: "--rpc-cors",
    env: "NODEX_RPC_CORS",
    valueName: "ORIGINS",
    description: "origins allowed by CORS, comma-separated, or * for any",
    defaultText: "* on regtest and devnet, none elsewhere",
    list: true,
    parse: (text) => {
      if (text !== "*" && !/^https?:\/\/[^\s/]+$/.test(text)) {
        throw invalid(
          text,
          `${JSON.stringify(text)} is not an origin such as http://localhost:3000, or *`,
        );
      }
      return text;
    },
  },
  {
    key: "rpcMaxBodyBytes",
    flag: "--rpc-max-body-bytes",
    env: "NODEX_RPC_MAX_BODY_BYTES",
    valueName: "N",
    description: "largest request body accepted, in bytes (413 above)",
    defaultText: "5242880",
    parse: integer(1024, 1 << 30, "a size in bytes"),
  },
  {
    key: "rpcMaxBatchSize",
    flag: "--rpc-max-batch-size",
    env: "NODEX_RPC_MAX_BATCH_SIZE",
    valueName: "N",
    description: "most requests in one batch",
    defaultText: "1000",
    parse: integer(1, 100_000, "a batch size"),
  },
  {
    key: "rpcMaxResponseBytes",
    flag: "--rpc-max-response-bytes",
    env: "NODEX_RPC_MAX_RESPONSE_BYTES",
    valueName: "N",
    description: "largest response, summed over a batch, in bytes (-32011 above)",
    defaultText: "10485760",
    parse: integer(1024, 1 << 30, "a size in bytes"),
  },
  {
    key: "rpcTimeoutMs",
    flag: "--rpc-timeout-ms",
    env: "NODEX_RPC_TIMEOUT_MS",
    valueName: "MS",
    description: "time limit of one request in milliseconds, 0 for none",
    defaultText: "0 in local mode, 5000 in hosted mode",
    parse: integer(0, 3_600_000, "a time in milliseconds"),
  },
  {
    key: "rpcBudgetCallMs",
    flag: "--rpc-budget-call-ms",
    env: "NODEX_RPC_BUDGET_CALL_MS",
    valueName: "MS",
    description:
      "time budget of eth_call, eth_estimateGas and eth_createAccessList, in milliseconds: past it the request is answered -32011 (request timed out) and the call's execution stops",
    defaultText: "the request's time limit (--rpc-timeout-ms)",
    parse: integer(1, 3_600_000, "a time in milliseconds"),
  },
  {
    key: "rpcBudgetLogsMs",
    flag: "--rpc-budget-logs-ms",
    env: "NODEX_RPC_BUDGET_LOGS_MS",
    valueName: "MS",
    description:
      "time budget of eth_getLogs, eth_getFilterLogs and eth_getFilterChanges, in milliseconds: past it the request is answered -32011 (request timed out)",
    defaultText: "the request's time limit (--rpc-timeout-ms)",
    parse: integer(1, 3_600_000, "a time in milliseconds"),
  },
  {
    key: "rpcBudgetTraceMs",
    flag: "--rpc-budget-trace-ms",
    env: "NODEX_RPC_BUDGET_TRACE_MS",
    valueName: "MS",
    description:
      "time budget of debug_trace* and trace_*, in milliseconds: past it the request is answered -32011 (request timed out) and its tracers stop",
    defaultText: "the request's time limit (--rpc-timeout-ms)",
    parse: integer(1, 3_600_000, "a time in milliseconds"),
  },
  {
    key: "rpcWorkerThreads",
    flag: "--rpc-worker-threads",
    env: "NODEX_RPC_WORKER_THREADS",
    valueName: "N",
    description:
      "worker threads that serve traces (debug_trace*, trace_*) and eth_getLogs, so that they never hold up other requests; 0 serves them on the main thread",
    defaultText:
      "2 (0 on regtest and devnet: one developer's traces on the main thread, as development chains serve them, and no thread to start)",
    parse: integer(0, 64, "a number of threads"),
  },
  {
    key: "rpcWorkerQueue",
    flag: "--rpc-worker-queue",
    env: "NODEX_RPC_WORKER_QUEUE",
    valueName: "N",
    description:
      "traces and eth_getLogs that may wait for a worker thread; one more is refused (-32011)",
    defaultText: "256",
    parse: integer(1, 100_000, "a number of requests"),
  },
  {
    key: "rpcFilterTimeout",
    flag: "--rpc-filter-timeout",
    env: "NODEX_RPC_FILTER_TIMEOUT",
    valueName: "SECONDS",
    description:
      "a filter (eth_newFilter, eth_newBlockFilter, eth_newPendingTransactionFilter) not polled for this long is removed",
    defaultText: "300 (the reference node's 5 minutes)",
    parse: integer(1, 86_400, "a number of seconds"),
  },
  {
    key: "rpcMaxFilters",
    flag: "--rpc-max-filters",
    env: "NODEX_RPC_MAX_FILTERS",
    valueName: "N",
    description: "filters installed at once; past it eth_new*Filter answers -32011",
    defaultText: "10000",
    parse: integer(1, 1_000_000, "a number of filters"),
  },
  {
    key: "redis",
    flag: "--redis",
    env: "NODEX_REDIS",
    valueName: "URL",
    description:
      "share state with the other replicas of an endpoint through the Redis at URL (redis:// or rediss:// for TLS, with user:password@ and /db when needed): filters installed through one replica are polled through any, the API keys (nodex keys --redis writes them) and the keys' rate limits and daily quotas are counted across the replicas; keys go under nodex:<network>:",
    defaultText: "none (filters, keys and limits are the node's own)",
    parse: (text) => {
      const problem = redisUrlProblem(text);
      if (problem !== undefined) throw invalid(text, problem);
      return text;
    },
  },
  {
    key: "rpcHttpLayer",
    flag: "--rpc-http-layer",
    env: "NODEX_RPC_HTTP_LAYER",
    valueName: "LAYER",
    description:
      "HTTP layer: node (Node's own `node:net` and `node:http`); auto is the same layer, kept for older configurations (uws, uWebSockets.js, was removed)",
    defaultText: "auto",
    parse: oneOf(HTTP_LAYERS),
  },
  {
    key: "wsPort",
    flag: "--ws-port",
    aliases: { "--ws": "4445" },
    env: "NODEX_WS_PORT",
    valueName: "PORT",
    description:
      "also listen for JSON-RPC over WebSocket alone on this port (--ws: 4445, the reference node's port); WebSocket is always served on the RPC port too",
    defaultText: "off",
    parse: integer(0, 65535, "a port number"),
  },
  {
    key: "wsMaxConnections",
    flag: "--ws-max-connections",
    env: "NODEX_WS_MAX_CONNECTIONS",
    valueName: "N",
    description: "WebSocket connections open at once; past it an upgrade is answered 503",
    defaultText: "10000",
    parse: integer(1, 1_000_000, "a number of connections"),
  },
  {
    key: "wsMaxBufferBytes",
    flag: "--ws-max-buffer-bytes",
    env: "NODEX_WS_MAX_BUFFER_BYTES",
    valueName: "N",
    description:
      "bytes a WebSocket client may leave unread (answers and notifications); past it the connection is dropped and the reason logged",
    defaultText: "16777216",
    parse: integer(65_536, 1 << 30, "a size in bytes"),
  },
  {
    key: "wsMaxSubscriptions",
    flag: "--ws-max-subscriptions",
    env: "NODEX_WS_MAX_SUBSCRIPTIONS",
    valueName: "N",
    description: "eth_subscribe subscriptions one connection may hold; past it -32011",
    defaultText: "1000",
    parse: integer(1, 1_000_000, "a number of subscriptions"),
  },
  {
    key: "p2p",
    flag: "--p2p",
    aliases: { "--no-p2p": "off" },
    env: "NODEX_P2P",
    valueName: "on|off",
    description:
      "join the peer-to-peer network: find peers, gossip blocks and transactions, sync (off, also --no-p2p: a node alone)",
    defaultText: "on, off on regtest",
    parse: oneOf(["on", "off"]),
  },
  {
    key: "p2pHost",
    flag: "--p2p-host",
    env: "NODEX_P2P_HOST",
    valueName: "HOST",
    description:
      "address the peer-to-peer listener binds to and announces; outbound connections leave from it when it is a specific IPv4 address",
    defaultText: "0.0.0.0",
    parse: (text) => {
      if (isIP(text) === 0)
        throw invalid(text, `${JSON.stringify(text)} is not an IPv4 or IPv6 address`);
      return text;
    },
  },
  {
    key: "p2pPort",
    flag: "--p2p-port",
    env: "NODEX_P2P_PORT",
    valueName: "PORT",
    description: "TCP port of the peer-to-peer listener (0 picks a free port)",
    defaultText: "5050",
    parse: integer(0, 65535, "a port number"),
  },
  {
    key: "bootnodes",
    flag: "--bootnodes",
    env: "NODEX_BOOTNODES",
    valueName: "MULTIADDR",
    list: true,
    description:
      "peers to dial at start and while disconnected, as /ip4/<address>/tcp/<port>/p2p/<peer id> (the address a node logs at start)",
    defaultText: "the network's (none published yet)",
    parse: (text) => {
      if (
        !/^\/(ip4|ip6|dns4|dns6|dns)\/[^/]+\/tcp\/\d{1,5}\/p2p\/[1-9A-HJ-NP-Za-km-z]{20,}$/.test(
          text,
        )
      )
        throw invalid(
          text,
          `${JSON.stringify(text)} is not a multiaddr of the form /ip4/<address>/tcp/<port>/p2p/<peer id>`,
        );
      return text;
    },
  },
  {
    key: "mdns",
    flag: "--mdns",
    env: "NODEX_MDNS",
    valueName: "on|off",
    description: "find peers on the local network with mDNS and dial them",
    defaultText: "off",
    parse: oneOf(["on", "off"]),
  },
  {
    key: "maxInboundPeers",
    flag: "--max-inbound-peers",
    env: "NODEX_MAX_INBOUND_PEERS",
    valueName: "N",
    description: "connections other nodes may open to this one",
    defaultText: "25",
    parse: integer(0, 10_000, "a number of peers"),
  },
  {
    key: "maxOutboundPeers",
    flag: "--max-outbound-peers",
    env: "NODEX_MAX_OUTBOUND_PEERS",
    valueName: "N",
    description: "connections this node may open to others",
    defaultText: "10",
    parse: integer(0, 10_000, "a number of peers"),
  },
  {
    key: "syncMode",
    flag: "--sync-mode",
    env: "NODEX_SYNC_MODE",
    valueName: "MODE",
    description:
      "how a node far behind its peers joins: full runs every block from genesis; snap checks every header from genesis, downloads the state at a pivot block below the best peer's head from its peers, then runs the blocks after it (the node then holds blocks, receipts and state from the pivot on, headers from genesis)",
    defaultText: "full",
    parse: oneOf(["full", "snap"]),
  },
  {
    key: "coinbase",
    flag: "--coinbase",
    env: "NODEX_COINBASE",
    valueName: "ADDRESS",
    description: "address that receives mining rewards and fees",
    defaultText: "the first development account on regtest and devnet, else the zero address",
    parse: (text) => {
      if (!ADDRESS.test(text))
        throw invalid(text, `${JSON.stringify(text)} is not a 20-byte 0x-prefixed hex address`);
      return text.toLowerCase();
    },
  },
  {
    key: "stateWindow",
    flag: "--state-window",
    aliases: { "--archive": "all" },
    env: "NODEX_STATE_WINDOW",
    valueName: "BLOCKS",
    description:
      "how many of the latest blocks keep their state (balances, storage, calls at that block); all keeps every block's (archive, also --archive)",
    defaultText: "all on regtest, 128 elsewhere",
    parse: (text) => (text === "all" ? "all" : integer(1, 100_000_000, "a number of blocks")(text)),
  },
  {
    key: "minFreeSpace",
    flag: "--min-free-space",
    env: "NODEX_MIN_FREE_SPACE",
    valueName: "MIB",
    description:
      "free disk space in MiB below which the node takes no transactions or blocks (reads go on; it warns below twice this); 0 turns the check off",
    defaultText: "256, 64 on regtest and devnet",
    parse: integer(0, 10_000_000, "a number of MiB"),
  },
  {
    key: "miner",
    flag: "--miner-work",
    aliases: { "--miner": "on" },
    env: "NODEX_MINER",
    valueName: "on|off",
    description:
      "serve work to merged miners and take their solutions: the mnr module (also --miner)",
    defaultText: "on on regtest and devnet, off elsewhere",
    parse: oneOf(["on", "off"]),
  },
  {
    key: "minDifficulty",
    flag: "--min-difficulty",
    env: "NODEX_MIN_DIFFICULTY",
    valueName: "N",
    description:
      "lowest block difficulty, a consensus rule: a lower one than the network's makes a private test chain (blocks a CPU miner finds in seconds) that other nodes of the network refuse",
    defaultText: "the network's (mainnet 7×10^15, testnet 550,000,000, regtest and devnet 1)",
    parse: (text) => {
      if (!/^[1-9]\d{0,30}$/.test(text))
        throw invalid(text, `${JSON.stringify(text)} is not a difficulty (a positive integer)`);
      return BigInt(text);
    },
  },
  {
    key: "mineInterval",
    flag: "--mine-interval",
    env: "NODEX_MINE_INTERVAL",
    valueName: "SECONDS",
    description:
      "regtest and devnet: mine a block every SECONDS with the transactions received meanwhile, instead of one block per transaction; 0 mines at once (automine)",
    defaultText: "0 (automine)",
    parse: integer(0, 86_400, "a number of seconds"),
  },
  {
    key: "blockGasLimit",
    flag: "--block-gas-limit",
    env: "NODEX_BLOCK_GAS_LIMIT",
    valueName: "GAS",
    description:
      "regtest and devnet: the gas limit of the blocks the node makes, which calls and the pool use at once (evm_setBlockGasLimit changes it while the node runs); the genesis block keeps the network's",
    defaultText:
      "30000000 (as Hardhat and Anvil: tools that send with a fixed gas limit of 16,777,216 need room for it)",
    parse: (text) => {
      if (!/^[1-9]\d{0,18}$/.test(text) || BigInt(text) < 21_000n || BigInt(text) >= 1n << 63n)
        throw invalid(text, `${JSON.stringify(text)} is not a gas limit (21000 to 2^63 - 1)`);
      return BigInt(text);
    },
  },
  {
    key: "stateFile",
    flag: "--state",
    env: "NODEX_STATE",
    valueName: "FILE",
    description:
      "regtest and devnet: start from the state in FILE when it exists (anvil_dumpState's, or a file this option wrote), and write the state after the head there at shutdown, atomically",
    defaultText: "none",
    parse: (text) => {
      if (text.length === 0) throw invalid(text, "a state file needs a path");
      return text;
    },
  },
  {
    key: "forkUrls",
    flag: "--fork-url",
    env: "NODEX_FORK_URL",
    valueName: "URL",
    description:
      "regtest and devnet: fork the network behind URL (an http:// or https:// JSON-RPC endpoint: Nodex, geth, Anvil, Hardhat's node): the chain goes on from its block --fork-block, on its state fetched on first touch, checked against that block's state root (eth_getProof) and kept in the datadir; repeat for endpoints to fail over to, in order",
    defaultText: "none",
    list: true,
    parse: upstreamUrl,
  },
  {
    key: "forkBlock",
    flag: "--fork-block",
    env: "NODEX_FORK_BLOCK",
    valueName: "N",
    description:
      "the upstream's block the fork goes on from (with --fork-url); by default its head minus 5, so that a reorganization of its last blocks does not move it",
    defaultText: "the upstream's head minus 5",
    parse: (text) => {
      if (!/^(0|[1-9]\d{0,15})$/.test(text))
        throw invalid(text, `${JSON.stringify(text)} is not a block number (a decimal integer)`);
      return BigInt(text);
    },
  },
  {
    key: "forkBlockHash",
    flag: "--fork-block-hash",
    env: "NODEX_FORK_BLOCK_HASH",
    valueName: "HASH",
    description:
      "the hash the fork block must have (with --fork-url): the upstream's block is checked against it, and without --fork-block the fork goes on from the block of that hash",
    defaultText: "none (the upstream's word)",
    parse: (text) => {
      if (!/^0x[0-9a-fA-F]{64}$/.test(text))
        throw invalid(text, `${JSON.stringify(text)} is not a block hash (0x and 64 hex digits)`);
      return text.toLowerCase();
    },
  },
  {
    key: "forkVerify",
    flag: "--fork-verify",
    env: "NODEX_FORK_VERIFY",
    valueName: "on|off",
    description:
      "with --fork-url, check every account, storage slot and code fetched against the fork block's state root (needs eth_getProof upstream: Nodex, geth, Anvil and Hardhat's node serve it); off, for upstreams without proofs, is not supported yet and refused at start",
    defaultText: "on",
    parse: oneOf(["on", "off"]),
  },
  {
    key: "forkTimeout",
    flag: "--fork-timeout",
    env: "NODEX_FORK_TIMEOUT",
    valueName: "S",
    description:
      "seconds an upstream of --fork-url has to answer a request before it counts as failed (then the next --fork-url is tried at once, or the same one again after a pause when it is the last)",
    defaultText: "10",
    parse: integer(1, 600, "seconds"),
  },
  {
    key: "forkRps",
    flag: "--fork-rps",
    env: "NODEX_FORK_RPS",
    valueName: "N",
    description:
      "at most N HTTP requests a second to the upstreams of --fork-url, with bursts of up to N after a quiet spell (calls go in batches where the upstream takes them); past the upstream's own limits (429) the node backs off and retries",
    defaultText: "100 (no budget for upstreams on this machine: 127.0.0.0/8, ::1, localhost)",
    parse: integer(1, 100_000, "requests a second"),
  },
  {
    key: "clientVersion",
    flag: "--client-version",
    env: "NODEX_CLIENT_VERSION",
    valueName: "TEXT",
    description:
      "regtest and devnet: what web3_clientVersion answers, for test tools that pick their methods by it: HardhatNetwork/… for Hardhat's network helpers, anvil/… for tools that expect Anvil (see docs/development.md)",
    defaultText: "Nodex/v<version>/<os>-<arch>/node<version>",
    parse: (text) => {
      if (!/^[\x21-\x7e][\x20-\x7e]{0,199}$/.test(text))
        throw invalid(
          text,
          "a client version is 1 to 200 printable ASCII characters, not starting with a space",
        );
      return text;
    },
  },
  {
    key: "automine",
    flag: "--automine",
    aliases: { "--no-automine": "off" },
    env: "NODEX_AUTOMINE",
    valueName: "on|off",
    description:
      "regtest and devnet: whether the node makes its own blocks (automine or --mine-interval); off (also --no-automine) leaves block production to another node or to evm_mine, for a node that follows a network",
    defaultText: "on",
    parse: oneOf(["on", "off"]),
  },
  {
    key: "cacheBlocks",
    flag: "--cache-blocks",
    env: "NODEX_CACHE_BLOCKS",
    valueName: "N",
    description: "decoded blocks kept in memory (least recently used out first)",
    defaultText: "256",
    parse: integer(1, 10_000_000, "a number of blocks"),
  },
  {
    key: "cacheHeaders",
    flag: "--cache-headers",
    env: "NODEX_CACHE_HEADERS",
    valueName: "N",
    description: "decoded headers kept in memory apart from their blocks (merged-mining checks)",
    defaultText: "2048",
    parse: integer(1, 10_000_000, "a number of headers"),
  },
  {
    key: "cacheReceipts",
    flag: "--cache-receipts",
    env: "NODEX_CACHE_RECEIPTS",
    valueName: "N",
    description: "blocks whose decoded receipts are kept in memory (receipts and log queries)",
    defaultText: "1024",
    parse: integer(1, 10_000_000, "a number of blocks"),
  },
  {
    key: "cacheTrieNodes",
    flag: "--cache-trie-nodes",
    env: "NODEX_CACHE_TRIE_NODES",
    valueName: "N",
    description:
      "state trie nodes kept in memory, shared by every state the node reads (and at most N × 1,344 bytes of memory, estimated)",
    defaultText: "50000",
    parse: integer(1, 100_000_000, "a number of trie nodes"),
  },
  {
    key: "cacheStates",
    flag: "--cache-states",
    env: "NODEX_CACHE_STATES",
    valueName: "N",
    description: "states of recent blocks kept open for reads and calls",
    defaultText: "8",
    parse: integer(1, 10_000, "a number of states"),
  },
  {
    key: "keystoreKdf",
    flag: "--keystore-kdf",
    env: "NODEX_KEYSTORE_KDF",
    valueName: "KIND",
    description:
      "scrypt cost of the key files the node writes to <datadir>/keystore: standard (n=262144, r=8, p=1) or light (n=4096, r=8, p=6, as geth's --lightkdf: faster, weaker against guessing); files of either kind are read",
    defaultText: "light on regtest and devnet, standard elsewhere",
    parse: oneOf(["standard", "light"]),
  },
  {
    key: "secp256k1",
    flag: "--secp256k1",
    env: "NODEX_SECP256K1",
    valueName: "BACKEND",
    description:
      "signature recovery (transaction senders, ECRECOVER): auto uses libsecp256k1 when the secp256k1 addon loads and passes its self-test, noble otherwise; noble always uses @noble/curves",
    defaultText: "auto",
    parse: oneOf(["auto", "noble"]),
  },
  {
    key: "metricsAddr",
    flag: "--metrics-addr",
    env: "NODEX_METRICS_ADDR",
    valueName: "HOST:PORT",
    description:
      "serve Prometheus metrics at /metrics (and /health, /ready) on a listener of their own, e.g. 127.0.0.1:9464; port 0 picks a free port",
    defaultText: "off",
    parse: hostPort,
  },
  {
    key: "readyMinPeers",
    flag: "--ready-min-peers",
    env: "NODEX_READY_MIN_PEERS",
    valueName: "N",
    description: "/ready answers 503 while the node has fewer peers than this",
    defaultText: "0",
    parse: integer(0, 10_000, "a number of peers"),
  },
  {
    key: "readyMaxBlocksBehind",
    flag: "--ready-max-blocks-behind",
    env: "NODEX_READY_MAX_BLOCKS_BEHIND",
    valueName: "N",
    description:
      "with the peer-to-peer network on, /ready answers 503 while the head is more than N blocks behind the best head a peer reports",
    defaultText: "10",
    parse: integer(0, 100_000_000, "a number of blocks"),
  },
  {
    key: "readyMaxHeadAge",
    flag: "--ready-max-head-age",
    env: "NODEX_READY_MAX_HEAD_AGE",
    valueName: "SECONDS",
    description:
      "/ready answers 503 while the head's timestamp is more than this many seconds old; 0 turns the check off",
    defaultText: "0",
    parse: integer(0, 100_000_000, "a number of seconds"),
  },
  {
    key: "rpcAccessLog",
    flag: "--rpc-access-log",
    env: "NODEX_RPC_ACCESS_LOG",
    valueName: "FILE",
    description:
      "write one JSON line per HTTP request and WebSocket message (time, address, key id, methods, status, error codes, duration, bytes) to FILE, appended; - writes to standard output",
    defaultText: "off",
    parse: (text) => {
      if (text.trim() === "") throw invalid(text, "the file name is empty");
      return text;
    },
  },
  {
    key: "logLevel",
    flag: "--log-level",
    env: "NODEX_LOG_LEVEL",
    valueName: "LEVEL",
    description: `least severe log level written: ${LOG_LEVELS.join(", ")}`,
    defaultText: "info",
    parse: oneOf(LOG_LEVELS),
  },
  {
    key: "logFormat",
    flag: "--log-format",
    env: "NODEX_LOG_FORMAT",
    valueName: "FORMAT",
    description: "log line format: json or pretty",
    defaultText: "pretty on a terminal, json otherwise",
    parse: oneOf(["json", "pretty"]),
  },
  {
    key: "config",
    flag: "--config",
    env: "NODEX_CONFIG",
    valueName: "FILE",
    description: "JSON file with settings, keyed as in the Config key column",
    defaultText: "none",
    parse: (text) => {
      if (text.trim() === "") throw invalid(text, "the file name is empty");
      return text;
    },
  },
];

/** Flags that act at once instead of setting something. */
export const COMMAND_FLAGS = {
  "--help": "print this help and exit",
  "--version": "print the version and exit",
} as const;

/** A flag of one command only (`nodex export --from N`): on the command line, not in env or file. */
export interface CommandOptionDef {
  readonly flag: string;
  /** Placeholder shown in help; absent for switches. */
  readonly valueName?: string;
  readonly description: string;
  readonly parse?: ValueParser;
}

/** A command given as the first word (`nodex export FILE`), with its own flags. */
export interface CommandDef {
  readonly name: "export" | "import" | "mine" | "keys";
  /** What follows `nodex <name>` in help and docs. */
  readonly synopsis: string;
  readonly description: string;
  readonly options: readonly CommandOptionDef[];
  /** Settings of the node this command reads besides `COMMAND_SETTINGS` (by key). */
  readonly settings?: readonly string[];
}

const BLOCK_NUMBER: ValueParser = (text) => {
  if (!/^\d{1,19}$/.test(text))
    throw invalid(text, `${JSON.stringify(text)} is not a block number`);
  return BigInt(text);
};

/** Settings of the node that the commands read; the commands refuse the other flags. */
export const COMMAND_SETTINGS: readonly string[] = [
  "network",
  "datadir",
  "stateWindow",
  "minDifficulty",
  "secp256k1",
  "logLevel",
  "logFormat",
  "config",
];

/** Every command, in help order. `--help`, `docs/cli.md` and the parser read this table. */
export const COMMANDS: readonly CommandDef[] = [
  {
    name: "export",
    synopsis: "FILE [--from N] [--to M] [--force] [options]",
    description:
      "write the canonical blocks from N to M (default 1 to the head; every node has genesis) to FILE as a stream of RLP blocks, as geth's export does; - writes to standard output. Refuses while a node uses the datadir, and an existing FILE without --force",
    options: [
      {
        flag: "--from",
        valueName: "N",
        description: "first block to write (default 1)",
        parse: BLOCK_NUMBER,
      },
      {
        flag: "--to",
        valueName: "M",
        description: "last block to write (default the head)",
        parse: BLOCK_NUMBER,
      },
      { flag: "--force", description: "overwrite FILE if it exists" },
    ],
  },
  {
    name: "import",
    synopsis: "FILE [options]",
    description:
      "read FILE (- for standard input) as a stream of RLP blocks and import them in order, with the chain's rules; blocks already there are skipped; stops at the first block refused (exit 1). Refuses while a node uses the datadir",
    options: [],
  },
  {
    name: "mine",
    synopsis: "[--rpc URL] [--threads N] [--max-blocks N] [--poll-ms MS]",
    description:
      "the reference CPU merged miner: gets work from a node (mnr_getWork), mines a Bitcoin block whose coinbase carries the tag, submits it (mnr_submitBitcoinBlockPartialMerkle) and reports its hashrate. The node must serve the mnr module (regtest and devnet do; elsewhere start it with --miner). For test chains: see --min-difficulty",
    options: [
      {
        flag: "--rpc",
        valueName: "URL",
        description: "the node's JSON-RPC URL (default http://127.0.0.1:4444)",
        parse: (text) => {
          if (!/^https?:\/\/\S+$/.test(text))
            throw invalid(text, `${JSON.stringify(text)} is not an http URL`);
          return text;
        },
      },
      {
        flag: "--threads",
        valueName: "N",
        description: "mining threads (default 1)",
        parse: integer(1, 256, "a number of threads"),
      },
      {
        flag: "--max-blocks",
        valueName: "N",
        description: "stop after N accepted blocks (default 0: until stopped)",
        parse: integer(0, 1_000_000_000, "a number of blocks"),
      },
      {
        flag: "--poll-ms",
        valueName: "MS",
        description: "ask for new work this often while mining (default 2000)",
        parse: integer(10, 3_600_000, "a time in milliseconds"),
      },
    ],
  },
  {
    name: "keys",
    synopsis:
      "create --name NAME [--rate UNITS_PER_S] [--daily UNITS] [--methods LIST | --deny LIST] [--allow LIST] | list [--json] | revoke ID",
    description:
      "issue, list and revoke the API keys of a hosted node, in <datadir>/api-keys.json (SHA-256 digests only), or with --redis URL (also from NODEX_REDIS or the config file, as the node reads it) in the Redis the replicas of an endpoint share, under nodex:<network>:. create prints the new key once; list shows ids, names, limits, creation, last use and units used today (with --redis, across the replicas), never a key; revoke refuses the key from then on. A running node of the datadir, or every replica of the Redis, applies each change within a second",
    settings: ["redis"],
    options: [
      {
        flag: "--name",
        valueName: "NAME",
        description: "create: who or what the key is for (1-200 characters)",
        parse: (text) => {
          if (
            text.trim() === "" ||
            text.length > 200 ||
            [...text].some((c) => c.charCodeAt(0) < 0x20 || c.charCodeAt(0) === 0x7f)
          )
            throw invalid(text, "a name is 1-200 printable characters");
          return text;
        },
      },
      {
        flag: "--rate",
        valueName: "UNITS_PER_S",
        description: "create: the key's rate limit, in units per second (default none)",
        parse: integer(1, 1_000_000_000, "a number of units per second"),
      },
      {
        flag: "--daily",
        valueName: "UNITS",
        description: "create: the key's quota per UTC day, in units (default none)",
        parse: integer(1, Number.MAX_SAFE_INTEGER, "a number of units"),
      },
      {
        flag: "--methods",
        valueName: "LIST",
        description:
          "create: the only modules and methods the key may call, comma-separated (eth,net,eth_call)",
        parse: methodList,
      },
      {
        flag: "--deny",
        valueName: "LIST",
        description: "create: modules and methods the key may not call, comma-separated",
        parse: methodList,
      },
      {
        flag: "--allow",
        valueName: "LIST",
        description: `create: what hosted mode turns off that this key may call: ${[...HOSTED_OFF_MODULES, ...HOSTED_OFF_METHODS].join(", ")}`,
        parse: (text) => {
          const items = text.split(",").map((s) => s.trim());
          const allowed = [...HOSTED_OFF_MODULES, ...HOSTED_OFF_METHODS] as string[];
          for (const item of items)
            if (!allowed.includes(item))
              throw invalid(text, `${JSON.stringify(item)} is not one of ${allowed.join(", ")}`);
          return items;
        },
      },
      { flag: "--json", description: "list: one JSON array instead of a table" },
    ],
  },
];

/** A module (`eth`) or method (`eth_call`) name of a key's lists. */
function methodList(text: string): string[] {
  const items = text.split(",").map((s) => s.trim());
  for (const item of items) {
    const module = item.split("_", 1)[0]!;
    if (
      !/^[a-z0-9]+(_[A-Za-z0-9]+)?$/.test(item) ||
      !(MODULE_NAMES as readonly string[]).includes(module)
    )
      throw invalid(
        text,
        `${JSON.stringify(item)} is not a module (${MODULE_NAMES.join(", ")}) or a method of one`,
      );
  }
  return items;
}

/** The flags of the settings the commands read, aliases included, in option order. */
export function commandSettingFlags(): string[] {
  return OPTIONS.filter((o) => COMMAND_SETTINGS.includes(o.key)).flatMap((o) => [
    o.flag,
    ...Object.keys(o.aliases ?? {}),
  ]);
}
