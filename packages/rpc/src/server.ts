import { randomBytes } from "node:crypto";
import { STRUCT_LOG_LIMIT_BYTES } from "@nodex/evm";
import {
  bytesToHex,
  keccakBackend,
  type Logger,
  type ModuleName,
  signatureRecovery,
} from "@nodex/types";
import { HostedAccess } from "./access.js";
import type { AccessLogSink } from "./accessLog.js";
import { Dispatcher } from "./dispatcher.js";
import { FilterManager, type FilterService } from "./filters.js";
import type { ForkHistory } from "./forkHistory.js";
import { type HealthReport, HttpApp, type ReadinessReport } from "./http/app.js";
import { chooseTransport } from "./http/index.js";
import type { HttpTransportFactory } from "./http/transport.js";
import { CombinedKeyStore, type KeyStore, StaticKeyStore } from "./keys.js";
import { type LimitStore, MemoryLimitStore } from "./limits.js";
import type { NodeMetrics } from "./metrics.js";
import { debugTraceModule } from "./modules/debug.js";
import { debugRawModule } from "./modules/debugRaw.js";
import { anvilModule, devEthModule, hardhatModule } from "./modules/devTools.js";
import { ethAccountsModule } from "./modules/ethAccounts.js";
import { ethChainModule } from "./modules/ethChain.js";
import { evmModule } from "./modules/evm.js";
import { filterModule } from "./modules/filters.js";
import { builtinModules } from "./modules/index.js";
import { miningModules } from "./modules/mining.js";
import { nodexChainModule } from "./modules/nodexChain.js";
import { personalModule } from "./modules/personal.js";
import { rpcModule } from "./modules/rpc.js";
import { scoModule, wireQueueModule } from "./modules/sco.js";
import { subscribeModule } from "./modules/subscribe.js";
import { traceModule } from "./modules/trace.js";
import { txpoolModules } from "./modules/txpool.js";
import {
  DEFAULT_READY_OPTIONS,
  HOSTED_DEFAULT_TIMEOUT_MS,
  HOSTED_OFF_METHODS,
  HOSTED_OFF_MODULES,
  type ReadyOptions,
  type RPCOptions,
} from "./options.js";
import { MethodRegistry, type ModuleDefinition } from "./registry.js";
import type { RPCServices } from "./services.js";
import { SharedFilterManager } from "./shared/filters.js";
import type { SharedStore } from "./shared/redis.js";
import { SubscriptionManager } from "./subscriptions.js";
import { DEFAULT_WS_OPTIONS, WsHub } from "./ws/hub.js";

export interface RPCServerDeps {
  readonly services: RPCServices;
  readonly logger: Logger;
  /** Extra modules (tests, later packages); the built-in ones are always present. */
  readonly modules?: readonly ModuleDefinition[];
  /** Overrides `opts.httpLayer` (tests, embedding). */
  readonly transport?: HttpTransportFactory;
  /** Keys besides `opts.apiKeys` (the registry `nodex keys` writes, `--api-key-file`). */
  readonly keys?: readonly KeyStore[];
  /** The limit counters; an in-memory store when absent. */
  readonly limits?: LimitStore;
  /**
   * State shared with the other replicas of the endpoint (`--redis`): filters live there, so
   * that any replica answers for a filter installed through another.
   */
  readonly shared?: SharedStore;
  /** The node's metrics, when it keeps them: requests, filters, subscriptions, connections. */
  readonly metrics?: NodeMetrics;
  /** One record per HTTP request and WebSocket message, when the node keeps an access log. */
  readonly accessLog?: AccessLogSink;
  /** On a forked chain: the upstream, which answers for the blocks up to the fork block. */
  readonly history?: ForkHistory;
}

export interface RPCServer {
  readonly registry: MethodRegistry;
  readonly dispatcher: Dispatcher;
  /** Bound address, once started. */
  address(): { host: string; port: number } | undefined;
  /** The WebSocket-only listener's address (`wsPort`), once started. */
  wsAddress(): { host: string; port: number } | undefined;
  /**
   * Replaces the API keys while serving (SIGHUP). Throws when that would switch between local
   * and hosted mode, which needs a restart.
   */
  setApiKeys(keys: readonly string[]): void;
  /** Keys and limits, in hosted mode. */
  readonly access: HostedAccess | undefined;
  /** `/health`'s report. */
  health(): HealthReport;
  /** `/ready`'s report: every check, and which failed. */
  readiness(): ReadinessReport;
  start(): Promise<{ host: string; port: number }>;
  stop(): Promise<void>;
}

const MODULE_VERSION = "1.0";

/** The request's time limit: configured, or hosted mode's default. */
function timeoutOf(opts: RPCOptions): number {
  if (opts.timeoutMs > 0) return opts.timeoutMs;
  return opts.hosted === true || opts.apiKeys.length > 0 ? HOSTED_DEFAULT_TIMEOUT_MS : 0;
}

/** The sooner of two time limits in milliseconds, 0 being none. */
function soonest(a: number, b: number): number {
  if (a <= 0) return b;
  if (b <= 0) return a;
  return Math.min(a, b);
}

/** Builds the JSON-RPC service: registry, envelope and HTTP layer. */
export function createRPCServer(opts: RPCOptions, deps: RPCServerDeps): RPCServer {
  const hosted = opts.hosted === true || opts.apiKeys.length > 0;
  const staticKeys = new StaticKeyStore(opts.apiKeys);
  const keyStore = new CombinedKeyStore([staticKeys, ...(deps.keys ?? [])]);
  const access = hosted
    ? new HostedAccess({
        keys: keyStore,
        limits: deps.limits ?? new MemoryLimitStore(),
        ...(opts.methodWeights === undefined ? {} : { weights: opts.methodWeights }),
        ...(opts.hostedAllow === undefined ? {} : { hostedAllow: opts.hostedAllow }),
        ...(opts.keyless === undefined ? {} : { keyless: opts.keyless }),
      })
    : undefined;
  const allowed = new Set(opts.hostedAllow ?? []);
  const log = deps.logger;
  let registry: MethodRegistry | undefined;
  const rpc = rpcModule(() =>
    Object.fromEntries((registry?.enabledModules() ?? []).map((name) => [name, MODULE_VERSION])),
  );
  const { reader, transactions, pool, dev, miner, wallet, events } = deps.services;
  const chainModules: ModuleDefinition[] = [];
  if (reader !== undefined)
    chainModules.push(
      ethChainModule(
        reader,
        transactions,
        deps.services.heavy,
        deps.services.network.typedTransactionsFrom,
        soonest(opts.budgets?.call ?? 0, timeoutOf(opts)),
      ),
      nodexChainModule(reader),
      debugRawModule(reader),
    );
  const filters: FilterService | undefined =
    reader === undefined || events === undefined
      ? undefined
      : deps.shared === undefined
        ? new FilterManager(reader, events, opts.filters)
        : new SharedFilterManager(
            reader,
            events,
            deps.shared,
            log.child({ module: "filters" }),
            opts.filters,
          );
  if (filters !== undefined)
    chainModules.push(
      filterModule(
        filters,
        deps.services.heavy,
        deps.history === undefined || reader === undefined
          ? undefined
          : { history: deps.history, reader },
      ),
    );
  const subscriptions =
    reader === undefined || events === undefined
      ? undefined
      : new SubscriptionManager(
          events,
          log,
          opts.subscriptions,
          deps.services.network.typedTransactionsFrom,
        );
  if (subscriptions !== undefined) chainModules.push(subscribeModule);
  if (pool !== undefined) chainModules.push(...txpoolModules(pool));
  // Served where the evm module is enabled: regtest and devnet, or by --rpc-modules.
  if (dev !== undefined) {
    // One id for the life of this process: Hardhat's helpers tell nodes apart by it.
    const instanceId = bytesToHex(randomBytes(32));
    chainModules.push(
      evmModule(dev),
      hardhatModule(dev, instanceId, deps.history),
      anvilModule(dev, instanceId, deps.history),
    );
    if (reader !== undefined) chainModules.push(devEthModule(dev, reader));
  }
  if (miner !== undefined) chainModules.push(...miningModules(miner));
  // Without the peer-to-peer network, the peer methods are known and say why they cannot run.
  chainModules.push(scoModule(deps.services.scoring), wireQueueModule(deps.services.peers));
  const timeoutMs = opts.timeoutMs > 0 ? opts.timeoutMs : hosted ? HOSTED_DEFAULT_TIMEOUT_MS : 0;
  const { tracing } = deps.services;
  if (reader !== undefined && tracing !== undefined) {
    // Tracers stop at the request's time budget instead of running on after its answer, and
    // struct logs stop growing past what the answer may hold.
    const traceBudget = opts.budgets?.trace;
    const limits = {
      // The tracers stop at the traces' budget when it is the sooner end.
      timeoutMs:
        traceBudget !== undefined && traceBudget > 0 && (timeoutMs === 0 || traceBudget < timeoutMs)
          ? traceBudget
          : timeoutMs,
      structLogBytes:
        opts.maxResponseBytes > 0
          ? Math.min(opts.maxResponseBytes, STRUCT_LOG_LIMIT_BYTES)
          : STRUCT_LOG_LIMIT_BYTES,
    };
    chainModules.push(
      debugTraceModule(reader, tracing, limits, deps.services.heavy),
      traceModule(reader, tracing, limits, deps.services.heavy),
    );
  }
  if (wallet !== undefined) {
    const node =
      reader === undefined || transactions === undefined ? undefined : { reader, transactions };
    chainModules.push(ethAccountsModule(wallet, node), personalModule(wallet, node));
  }
  registry = new MethodRegistry(
    [...builtinModules, ...chainModules, rpc, ...(deps.modules ?? [])],
    {
      enabled: new Set<ModuleName>(opts.modules),
      hostedOff: new Set<ModuleName>(
        hosted ? HOSTED_OFF_MODULES.filter((m) => !allowed.has(m)) : [],
      ),
      hostedOffMethods: new Set(hosted ? HOSTED_OFF_METHODS.filter((m) => !allowed.has(m)) : []),
    },
  );
  if (hosted) {
    // Said at start-up: an operator input or a heavy module open to every key holder.
    for (const name of allowed) {
      const served = name.includes("_") || opts.modules.includes(name as ModuleName);
      if (served) {
        log.warn("Served to every API key holder although hosted mode turns it off", {
          allowed: name,
        });
      }
    }
  }
  const dispatcher = new Dispatcher(
    {
      maxBatchSize: opts.maxBatchSize,
      maxResponseBytes: opts.maxResponseBytes,
      timeoutMs,
      ...(opts.budgets === undefined ? {} : { budgets: opts.budgets }),
    },
    {
      registry,
      services: deps.services,
      logger: log,
      ...(deps.metrics === undefined ? {} : { metrics: deps.metrics }),
      ...(deps.history === undefined ? {} : { history: deps.history }),
    },
  );
  const health = (): HealthReport => {
    const storage = deps.services.chain.storage?.();
    const report = {
      network: deps.services.network.name,
      blockNumber: `0x${deps.services.chain.blockNumber().toString(16)}`,
      signatureRecovery: signatureRecovery().backend,
      keccak: keccakBackend,
    };
    if (storage === undefined || storage.writable) return { status: "ok", ...report };
    return {
      status: "degraded",
      ...report,
      storage: {
        writable: false,
        reason: storage.reason,
        ...(storage.since === undefined ? {} : { since: new Date(storage.since).toISOString() }),
      },
    };
  };
  const readyOptions = { ...DEFAULT_READY_OPTIONS, ...opts.ready };
  const readiness = (): ReadinessReport => readinessOf(health(), deps.services, readyOptions);
  const ws = new WsHub(
    { ...DEFAULT_WS_OPTIONS, ...opts.ws },
    {
      dispatcher,
      subscriptions,
      logger: log,
      ...(access === undefined ? {} : { access }),
      ...(deps.accessLog === undefined ? {} : { accessLog: deps.accessLog }),
      ...(deps.metrics === undefined ? {} : { metrics: deps.metrics }),
    },
  );
  const metrics = deps.metrics;
  if (metrics !== undefined) {
    metrics.setKnownMethods(registry.declaredNames());
    // Filters shared through Redis are counted there, for every replica at once: a replica's
    // gauge would count them again for each; the series is left out then.
    metrics.gauge("nodex_rpc_filters", "Installed filters (eth_newFilter and kin)", () =>
      filters === undefined ? 0 : filters instanceof FilterManager ? filters.size : undefined,
    );
    metrics.gauge("nodex_rpc_subscriptions", "Active eth_subscribe subscriptions", () =>
      subscriptions === undefined ? 0 : subscriptions.size,
    );
    metrics.gauge("nodex_rpc_ws_connections", "Open WebSocket connections", () => ws.size);
  }
  const appOptions = {
    corsOrigins: opts.corsOrigins,
    maxBodyBytes: opts.maxBodyBytes,
  };
  const appDeps = {
    dispatcher,
    health,
    readiness,
    ws,
    ...(access === undefined ? {} : { access }),
    ...(metrics === undefined ? {} : { metrics }),
    ...(deps.accessLog === undefined ? {} : { accessLog: deps.accessLog }),
  };
  const app = new HttpApp(appOptions, appDeps);
  const chosen =
    deps.transport === undefined
      ? chooseTransport(opts.httpLayer)
      : { layer: "custom", factory: deps.transport };
  const transport = chosen.factory(app);
  const wsApp =
    opts.wsPort === undefined
      ? undefined
      : new HttpApp({ ...appOptions, websocketOnly: true }, appDeps);
  const wsTransport = wsApp === undefined ? undefined : chosen.factory(wsApp);
  let bound: { host: string; port: number } | undefined;
  let wsBound: { host: string; port: number } | undefined;
  return {
    registry,
    dispatcher,
    address: () => bound,
    wsAddress: () => wsBound,
    access,
    setApiKeys(keys) {
      // Hosted mode chose the modules at start; a node hosted by its --api-key values alone
      // would be left with no key at all.
      if (hosted !== keys.length > 0 && (!hosted || opts.hosted !== true))
        throw new Error("switching between local and hosted mode needs a restart");
      staticKeys.set(keys);
    },
    health,
    readiness,
    async start() {
      bound = await transport.listen(opts.host, opts.port);
      if (wsTransport !== undefined && opts.wsPort !== undefined) {
        try {
          wsBound = await wsTransport.listen(opts.host, opts.wsPort);
        } catch (err) {
          await transport.close();
          bound = undefined;
          throw err;
        }
      }
      log.info("JSON-RPC server listening", {
        url: `http://${bound.host}:${bound.port}`,
        ws: `ws://${bound.host}:${bound.port}`,
        ...(wsBound === undefined ? {} : { wsOnly: `ws://${wsBound.host}:${wsBound.port}` }),
        mode: hosted ? "hosted" : "local",
        http: chosen.layer,
        modules: registry.enabledModules(),
      });
      return bound;
    },
    async stop() {
      filters?.close();
      subscriptions?.close();
      keyStore.close();
      ws.closeAll();
      await Promise.all([transport.close(), wsTransport?.close()]);
      bound = undefined;
      wsBound = undefined;
    },
  };
}

/**
 * Readiness: storage takes writes; at least `minPeers` peers; with the peer-to-peer network on,
 * no more than `maxBlocksBehind` blocks behind the best head the peers report (or the sync's
 * target); with `maxHeadAgeSeconds`, a head no older than that. Each check gives its figures.
 */
export function readinessOf(
  health: HealthReport,
  services: Pick<RPCServices, "chain" | "peers">,
  opts: ReadyOptions,
): ReadinessReport {
  const checks: Record<string, Record<string, unknown> & { ok: boolean }> = {};
  checks.storage = { ok: health.status === "ok" };
  const peers = services.peers.peerCount();
  checks.peers = { ok: peers >= opts.minPeers, peers, min: opts.minPeers };
  const head = services.chain.blockNumber();
  if (services.peers.listening()) {
    const syncing = services.peers.syncing();
    let best = services.peers.bestPeerBlock?.();
    if (syncing !== false && (best === undefined || syncing.highestBlock > best))
      best = syncing.highestBlock;
    const behind = best === undefined || best <= head ? 0n : best - head;
    checks.sync = {
      ok: behind <= BigInt(opts.maxBlocksBehind),
      head: Number(head),
      bestPeer: best === undefined ? null : Number(best),
      behind: Number(behind),
      maxBehind: opts.maxBlocksBehind,
      syncing: syncing !== false,
    };
  }
  const stamp = services.chain.headTimestamp?.();
  if (opts.maxHeadAgeSeconds > 0 && stamp !== undefined) {
    const age = Math.max(0, Math.floor(Date.now() / 1000) - stamp);
    checks.headAge = {
      ok: age <= opts.maxHeadAgeSeconds,
      seconds: age,
      max: opts.maxHeadAgeSeconds,
    };
  }
  const failed = Object.keys(checks).filter((name) => checks[name]?.ok !== true);
  return { ...health, ready: failed.length === 0, failed, checks };
}
