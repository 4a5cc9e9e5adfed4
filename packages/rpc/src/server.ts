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
import { Dispatcher } from "./dispatcher.js";
import { FilterManager } from "./filters.js";
import { type HealthReport, HttpApp } from "./http/app.js";
import { chooseTransport } from "./http/index.js";
import type { HttpTransportFactory } from "./http/transport.js";
import { CombinedKeyStore, type KeyStore, StaticKeyStore } from "./keys.js";
import { type LimitStore, MemoryLimitStore } from "./limits.js";
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
  HOSTED_DEFAULT_TIMEOUT_MS,
  HOSTED_OFF_METHODS,
  HOSTED_OFF_MODULES,
  type RPCOptions,
} from "./options.js";
import { MethodRegistry, type ModuleDefinition } from "./registry.js";
import type { RPCServices } from "./services.js";
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
  const filters =
    reader === undefined || events === undefined
      ? undefined
      : new FilterManager(reader, events, opts.filters);
  if (filters !== undefined) chainModules.push(filterModule(filters, deps.services.heavy));
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
    chainModules.push(evmModule(dev), hardhatModule(dev, instanceId), anvilModule(dev, instanceId));
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
    { registry, services: deps.services, logger: log },
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
  const ws = new WsHub(
    { ...DEFAULT_WS_OPTIONS, ...opts.ws },
    { dispatcher, subscriptions, logger: log, ...(access === undefined ? {} : { access }) },
  );
  const appOptions = {
    corsOrigins: opts.corsOrigins,
    maxBodyBytes: opts.maxBodyBytes,
  };
  const appDeps = { dispatcher, health, ws, ...(access === undefined ? {} : { access }) };
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
