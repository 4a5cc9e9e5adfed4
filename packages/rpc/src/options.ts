import type { ModuleName } from "@nodex/types";
import type { FilterOptions } from "./filters.js";
import type { Limits } from "./limits.js";
import type { MethodClass } from "./methodClass.js";
import type { SubscriptionOptions } from "./subscriptions.js";
import type { WsOptions } from "./ws/hub.js";

/** Settings of the JSON-RPC service. Plain values; `apps/node` builds them from its config. */
export interface RPCOptions {
  readonly host: string;
  readonly port: number;
  /** Modules to serve. */
  readonly modules: readonly ModuleName[];
  /** API keys; any turns on hosted mode. */
  readonly apiKeys: readonly string[];
  /**
   * Hosted mode with or without keys yet (`--hosted`, a key file, keys in the registry): keys
   * issued while the node runs are served without a restart. Otherwise hosted means `apiKeys`
   * is not empty; local mode ignores the request path.
   */
  readonly hosted?: boolean;
  /** Weights of methods in units, replacing the defaults (`DEFAULT_METHOD_WEIGHTS`). */
  readonly methodWeights?: Readonly<Record<string, number>>;
  /**
   * Hosted mode serves requests without a key (the path `/`) within these limits, counted per
   * client address; absent: they are refused (401).
   */
  readonly keyless?: Limits;
  /**
   * Time budgets of method classes in milliseconds (`METHOD_CLASSES`), within `timeoutMs`:
   * past it the request is answered -32011 and, for traces, the tracers stop.
   */
  readonly budgets?: Partial<Record<MethodClass, number>>;
  /** Origins allowed by CORS: `*`, a list of origins, or none (no CORS headers). */
  readonly corsOrigins: readonly string[];
  /**
   * What hosted mode turns off that the operator serves to key holders anyway: modules and
   * methods of `HOSTED_OFF_MODULES` and `HOSTED_OFF_METHODS`. Empty by default.
   */
  readonly hostedAllow?: readonly string[];
  /** Largest accepted request body, in bytes (413 above). */
  readonly maxBodyBytes: number;
  /** Largest accepted batch, in requests. */
  readonly maxBatchSize: number;
  /** Largest response, in bytes, summed over a batch (-32011 above). */
  readonly maxResponseBytes: number;
  /** Time limit of one HTTP request in milliseconds; 0 means none. */
  readonly timeoutMs: number;
  /** The HTTP layer: `node` (Node's own); `auto`, an alias kept for older configurations. */
  readonly httpLayer: HttpLayer;
  /** Filter expiry and limits; `DEFAULT_FILTER_OPTIONS` for those not given. */
  readonly filters?: Partial<FilterOptions>;
  /**
   * A second listener, on `host`, for WebSocket only (the reference node's 4445); WebSocket is
   * served on `port` in any case.
   */
  readonly wsPort?: number;
  /** WebSocket connection limits; `DEFAULT_WS_OPTIONS` for those not given. */
  readonly ws?: Partial<WsOptions>;
  /** Subscription limits; `DEFAULT_SUBSCRIPTION_OPTIONS` for those not given. */
  readonly subscriptions?: Partial<SubscriptionOptions>;
  /** What `/ready` checks; `DEFAULT_READY_OPTIONS` for those not given. */
  readonly ready?: Partial<ReadyOptions>;
}

/** The thresholds of `/ready` (each failing check makes it 503). */
export interface ReadyOptions {
  /** Fewest connected peers. */
  readonly minPeers: number;
  /** With the peer-to-peer network on: most blocks the head may be behind the best peer's. */
  readonly maxBlocksBehind: number;
  /** Oldest the head may be, in seconds (its timestamp against the clock); 0 for no check. */
  readonly maxHeadAgeSeconds: number;
}

export const DEFAULT_READY_OPTIONS: ReadyOptions = {
  minPeers: 0,
  maxBlocksBehind: 10,
  maxHeadAgeSeconds: 0,
};

export type HttpLayer = "auto" | "node";
export const HTTP_LAYERS: readonly HttpLayer[] = ["auto", "node"];

/**
 * Modules that hosted mode (API keys configured) turns off unless the operator allows them
 * (`hostedAllow`): development controls, node accounts, merged-mining inputs, peer scoring, and
 * tracing (each trace may run a block's worth of execution).
 */
export const HOSTED_OFF_MODULES: readonly ModuleName[] = [
  "personal",
  "evm",
  "hardhat",
  "anvil",
  "mnr",
  "sco",
  "debug",
  "trace",
];

/**
 * Methods of served modules that hosted mode turns off unless allowed: the pool's whole content
 * (every user's waiting transactions, and a large answer), and a miner's inputs, which any key
 * holder could otherwise set for everyone (what `eth_hashrate` and `eth_mining` tell).
 */
export const HOSTED_OFF_METHODS: readonly string[] = [
  "txpool_content",
  "txpool_contentFrom",
  "txpool_inspect",
  "eth_sendUnsignedTransaction",
  "eth_getWork",
  "eth_submitWork",
  "eth_submitHashrate",
];

export const defaultRPCOptions: RPCOptions = {
  host: "127.0.0.1",
  port: 4444,
  modules: ["eth", "net", "web3", "rpc", "txpool", "nodex"],
  apiKeys: [],
  corsOrigins: [],
  maxBodyBytes: 5 * 1024 * 1024,
  maxBatchSize: 1000,
  maxResponseBytes: 10 * 1024 * 1024,
  timeoutMs: 0,
  httpLayer: "auto",
};

/** The time limit hosted mode applies when none is configured. */
export const HOSTED_DEFAULT_TIMEOUT_MS = 5000;
